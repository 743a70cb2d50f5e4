"""Board rules about a session's row, in one place (pure: no I/O, no clock).

Used alike by session operations (ops/sessions.py, board/register.py), organize (ops/lifecycle.py),
doctor (ops/doctor/checks.py), the daemon (daemon/reconcile.py) and the session-start context
(recall/session_start.py). The rules are stated in docs/board.md (the given fields' bounds,
defaults, placeholders, a row from a snapshot, conflict-copy folding, the sessions a new chat is
offered).

Import-light (the sessionStart hook imports the defaults): the snapshot model is only a type here.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from agentmem_vault.clock import format_ts, parse_ts
from agentmem_vault.errors import UsageError
from agentmem_vault.fastimport import LazyRegex, datetime, utf8  # the C type without datetime.py (docs/performance.md)
from agentmem_vault.board import table as it
from agentmem_vault.model.ids import SESSION_ID_RE

TYPE_CHECKING = False  # typing is not imported at run time (the sessionStart hook path)
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

    from agentmem_vault.model.snapshot import Snapshot

# -- defaults of a new row (docs/board.md "Defaults") --------------------------------------------

DEFAULT_TOPIC = "未設定"
DEFAULT_SUMMARY = "sessionStart 自動註冊，尚未整理主題。"
DEFAULT_KEYWORDS = "sessionStart, cursor-agent"
MANUAL_KEYWORDS = "manual-registration, cursor-agent, session-snapshot"
MANUAL_FALLBACK_SUMMARY = "手動補註冊，已建立 session snapshot。"
UPDATE_KEYWORDS = "session-update, cursor-agent, session-snapshot"
CONTINUE_KEYWORDS = "continue-memory, cursor-agent, session-snapshot"
ADDED_KEYWORDS = "session-snapshot, daemon-reconcile"
ADDED_SUMMARY = "由 watcher daemon 依 session snapshot 補登。"
SUMMARY_MAX = 160

# -- the fields a person or an agent gives (``--topic``, ``--summary``, ``--keywords``; MCP) ------

# Characters per field: a topic is a title, a summary a sentence or two, keywords a short list.
FIELD_LIMITS = {"topic": 200, "summary": 1000, "keywords": 500}
# Every line break Python, Markdown or an editor knows (LF, CR, VT, FF, NEL, U+2028, U+2029).
_LINE_BREAK = LazyRegex("[\n\r\x0b\x0c\x85\u2028\u2029]")


def check_row_fields(**fields: str | None) -> None:
    """Refuse (UsageError, exit 2) a field with a line break or over its limit, before anything is
    read or locked: a board row is one line, bounded (docs/reliability.md, "Limits"); None is absent."""
    for name, value in fields.items():
        if value is None:
            continue
        limit = FIELD_LIMITS[name]
        if len(value) > limit:
            raise UsageError(
                f"--{name} is {len(value):,} characters, over the {limit:,}-character limit of a board "
                f"{name}; shorten it (the details belong in the snapshot). Nothing was written",
                code="field_too_long",
            )
        m = _LINE_BREAK.search(value)
        if m:
            raise UsageError(
                f"--{name} holds a line break (U+{ord(m.group()):04X}); a board row is one line: give the "
                f"{name} on one line (the details belong in the snapshot). Nothing was written",
                code="field_not_one_line",
            )


# -- placeholders (one word list) -------------------------------------------------------------

# A topic that says nothing: the template's value, its Simplified form, and what agents write
# when they have no topic yet. Compared after ``fold`` (case, width, Traditional/Simplified).
PLACEHOLDER_TOPIC_WORDS = ("", "未設定", "未设定", "-", "none", "n/a", "tbd", "unset", "untitled")
# A summary written by the tool itself rather than from the session's facts.
PLACEHOLDER_SUMMARIES = frozenset({"", "-", DEFAULT_SUMMARY, MANUAL_FALLBACK_SUMMARY, ADDED_SUMMARY})
_DEFAULT_KEYWORDS = frozenset({"", DEFAULT_KEYWORDS})


@lru_cache(maxsize=1)
def _topic_placeholders() -> frozenset[str]:
    # textnorm is imported on first use, not at import: the sessionStart hook imports the defaults
    # above and must not load text folding (nor its character table).
    from agentmem_vault.model.textnorm import fold

    return frozenset(fold(t) for t in PLACEHOLDER_TOPIC_WORDS)


def is_placeholder_topic(topic: str | None) -> bool:
    """True for an empty or template topic (``未設定``, ``<topic>``, ``TBD``…); never overwrites a real one."""
    v = (topic or "").strip()
    if v in ("", "-", "未設定"):  # the common cases, without folding
        return True
    from agentmem_vault.model.textnorm import fold

    return fold(v) in _topic_placeholders() or (v.startswith("<") and v.endswith(">"))


def is_placeholder_summary(summary: str | None) -> bool:
    return (summary or "").strip() in PLACEHOLDER_SUMMARIES


def is_default_keywords(keywords: str | None) -> bool:
    return (keywords or "").strip() in _DEFAULT_KEYWORDS


def is_untouched_idle(row: it.Row) -> bool:
    """An idle row nobody has given a topic yet (listed last by ``find``)."""
    return row.status == "idle" and is_placeholder_topic(row.topic)


def idle_row(session_id: str, agent: str, ts: str) -> it.Row:
    """The row sessionStart registration appends."""
    return it.Row(session_id, agent, DEFAULT_TOPIC, DEFAULT_SUMMARY, DEFAULT_KEYWORDS, "idle", "-", ts, ts)


def pick_topic(*candidates: str | None) -> str:
    """The first candidate that is a real topic, else ``DEFAULT_TOPIC``."""
    for c in candidates:
        if c and not is_placeholder_topic(c):
            return c.strip()
    return DEFAULT_TOPIC


# -- a row from a snapshot --------------------------------------------------------------------


def summary_from_snapshot(snap: Snapshot) -> str | None:
    """The index Summary a snapshot implies: its first Current Context item (a paragraph or one
    bullet), bullet marker dropped, whitespace collapsed, at most SUMMARY_MAX characters.
    None when Current Context is empty."""
    for para in snap.items("Current Context"):
        s = " ".join(para.split())
        if s[:2] in ("- ", "* ", "+ "):
            s = s[2:].strip()
        if not s or s.lower() == "none":
            continue
        return s if len(s) <= SUMMARY_MAX else s[: SUMMARY_MAX - 1].rstrip() + "…"
    return None


def clean_cell(value: str | None) -> str:
    """A Metadata value made safe for a table cell: control characters would make the row unreadable."""
    return "".join(ch if ch >= " " or ch == "\t" else " " for ch in (value or "")).strip()


def norm_ts(value: str | None) -> str | None:
    dt = parse_ts(value or "")
    return format_ts(dt) if dt else None


@lru_cache(maxsize=16384)
def ts_of(value: str | None) -> datetime | None:
    # Cached: a daemon pass compares thousands of rows whose timestamps rarely change (strptime is slow).
    return parse_ts(value or "")


def id_parts(session_id: str) -> tuple[str, str]:
    """(agent name, start time ``YYYY-MM-DD HH:MM``) encoded in a Session ID; ("", "") when it is not one."""
    m = SESSION_ID_RE.match(session_id)
    if not m:
        return "", ""
    y, mo, d, h, mi, agent = m.groups()
    # A trailing -N collision suffix belongs to the ID, not to the agent name.
    parts = agent.rsplit("-", 1)
    if len(parts) == 2 and parts[1].isdigit():
        agent = parts[0]
    return agent, f"{y}-{mo}-{d} {h}:{mi}"


def row_from_fields(session_id: str, metadata: Mapping[str, str], summary: str | None) -> it.Row:
    """The row a snapshot without one gets: Metadata fields (Status when valid, else active, so
    the new row is in step with its snapshot), falling back to what the Session ID encodes;
    ``summary`` as ``summary_from_snapshot`` gives it."""
    id_agent, id_start = id_parts(session_id)
    status = clean_cell(metadata.get("Status", "")).lower()
    started = norm_ts(metadata.get("Started At")) or norm_ts(metadata.get("Updated At")) or id_start
    updated = norm_ts(metadata.get("Updated At")) or started
    return it.Row(
        session_id,
        clean_cell(metadata.get("Agent Name", "")) or id_agent,
        clean_cell(metadata.get("Topic", "")) or DEFAULT_TOPIC,
        clean_cell(summary) or ADDED_SUMMARY,
        ADDED_KEYWORDS,
        status if status in it.STATUSES else "active",
        "-",
        started,
        updated,
    )


def row_from_snapshot(session_id: str, snap: Snapshot) -> it.Row:
    return row_from_fields(session_id, snap.metadata, summary_from_snapshot(snap))


def toward_snapshot(row: it.Row, metadata: Mapping[str, str], *, keep_status: bool = False) -> dict[str, str]:
    """The one rule that keeps a row in step with its snapshot (docs/board.md): the row's Topic,
    Status and Updated At that disagree with the snapshot's Metadata, as the changes that resolve
    them toward the snapshot (the fuller record). A placeholder Topic in the snapshot never
    replaces a real one; ``keep_status``: the row's Status was fixed by a person (doctor), kept.
    Used by doctor --fix, the daemon's sync and restore."""
    changes: dict[str, str] = {}
    topic = clean_cell(metadata.get("Topic", ""))
    if topic and topic != row.topic.strip() and not is_placeholder_topic(topic):
        changes["topic"] = topic
    status = clean_cell(metadata.get("Status", "")).lower()
    if status in it.STATUSES and status != row.status.strip() and not keep_status:
        changes["status"] = status
    snap_ts = ts_of(metadata.get("Updated At"))
    if snap_ts is not None and snap_ts != ts_of(row.updated_at):
        changes["updated_at"] = format_ts(snap_ts)
    return changes


def synced_row(row: it.Row, metadata: Mapping[str, str]) -> it.Row | None:
    """The row brought in step with the snapshot's Metadata (``toward_snapshot``), or None when
    they already agree."""
    changes = toward_snapshot(row, metadata)
    return row.with_(**changes) if changes else None


# -- sync-conflict copies of the index (docs/board.md "Conflict copies") ------------------------

# Google Drive / Dropbox / OneDrive style "index (1).md", "index (Conflict 2026-05-01).md",
# "index (Ann's conflicted copy 2026-05-01).md", and Syncthing's "index.sync-conflict-…".
_CONFLICT_RE = LazyRegex(r"^index(?: \([^/\\]*\)|\.sync-conflict-[^/\\]*)\.md$", re.IGNORECASE)


def is_conflict_copy(name: str) -> bool:
    """A file name in memory/ that a sync client gave to a conflicting copy of index.md."""
    return bool(_CONFLICT_RE.match(name)) and name != "index.md"


def archived_in_copy(index_text: str, copy_rows: list[it.Row], archived: Collection[str]) -> list[str]:
    """IDs only the copy has that were archived meanwhile: the copy predates the archive, and an
    archived session never goes back on the board (its row lives in archive/<id>/index.md)."""
    if not archived:
        return []
    doc = it.parse_index(index_text)
    return list(
        dict.fromkeys(r.session_id for r in copy_rows if r.session_id in archived and doc.find(r.session_id) is None)
    )


def fold_rows(
    index_text: str, copy_rows: list[it.Row], *, archived: Collection[str] = ()
) -> tuple[str, list[str], list[str]]:
    """Fold rows of a conflict copy into the index text: (new text, added IDs, updated IDs).
    Newer Updated At wins per row, rows only in the copy are added, nothing is deleted, Referenced
    By lists are united. Rows of ``archived`` sessions that the index no longer has are not added back."""
    skip = set(archived_in_copy(index_text, copy_rows, archived))
    newest: dict[str, it.Row] = {}
    for r in copy_rows:  # a copy may itself hold a row twice: its newest wins
        if r.session_id in skip:
            continue
        cur = newest.get(r.session_id)
        if cur is None or (ts_of(r.updated_at) or datetime.min) > (ts_of(cur.updated_at) or datetime.min):
            newest[r.session_id] = r
    # One parse of the index and one edit of its lines (a parse per row took 66 s for a
    # 3,000-row copy; docs/reliability.md, "Limits").
    doc = it.parse_index(index_text)
    lines: dict[str, list[int]] = {}
    for i, sid in doc.row_ids:
        lines.setdefault(sid, []).append(i)
    added: list[str] = []
    updated: list[str] = []
    changes: dict[int, it.Row] = {}
    appends: list[it.Row] = []
    for sid, theirs in newest.items():
        at = lines.get(sid)
        if at is None:
            appends.append(theirs)
            added.append(sid)
            continue
        if len(at) > 1:
            it.line_of(doc, sid)  # raises: a duplicate ID on the board is doctor's to sort out
        ours = doc._row_at(at[0])
        t_theirs, t_ours = ts_of(theirs.updated_at), ts_of(ours.updated_at)
        winner = theirs if (t_theirs is not None and (t_ours is None or t_theirs > t_ours)) else ours
        refs = it.split_id_list(winner.referenced_by)  # Referenced By lists are united
        refs += [x for x in it.split_id_list((ours if winner is theirs else theirs).referenced_by) if x not in refs]
        merged = winner.with_(referenced_by=it.join_id_list(refs))
        if merged != ours:
            changes[at[0]] = merged
            updated.append(sid)
    return it.edit_table(doc, changes, appends), added, updated


# -- the sessions a new chat is offered (docs/board.md "Offered sessions") ------------------------

OFFERED = 5  # sessions listed under "Recent active sessions"


def ts_key(value: str) -> str:
    """A string that sorts like the timestamp (``YYYY-MM-DD HH:MM:SS``; "" when unreadable).

    The board's own format ``YYYY-MM-DD HH:MM`` is recognised without ``strptime`` (which costs
    ~1 ms per 100 rows, and its import more); other forms go through ``clock.parse_ts``."""
    v = (value or "").strip()
    if len(v) == 16 and v[4] == "-" and v[7] == "-" and v[10] == " " and v[13] == ":":
        y, mo, d, h, mi = v[:4], v[5:7], v[8:10], v[11:13], v[14:16]
        if y.isdigit() and mo.isdigit() and d.isdigit() and h.isdigit() and mi.isdigit():
            try:
                datetime(int(y), int(mo), int(d), int(h), int(mi))  # a real date, as strptime demands
            except ValueError:
                return ""
            return v + ":00"
    dt = parse_ts(v)
    return dt.strftime("%Y-%m-%d %H:%M:%S") if dt else ""


def active_order(rows: Iterable[tuple[it.Row, int]]) -> list[list]:
    """``[ts_key, Session ID, where]`` of the active rows (``where``: the byte offset of the row's
    line, -1 when unknown), most recently updated first; equal times keep board order. The board
    summary keeps exactly this list (board/summary.py)."""
    entries: list[list] = [[ts_key(r.updated_at), r.session_id, at] for r, at in rows if r.status == "active"]
    entries.sort(key=lambda e: str(e[0]), reverse=True)  # stable: equal times stay in board order
    return entries


def project_rank(project: str, names: Collection[str]) -> int | None:
    """0: a session of the chat's own project (``names``: all its names, folded), 1: of an unknown
    project, None: another project's, never offered (docs/projects.md)."""
    folded = (project or "").strip().casefold()
    if folded and folded in names:
        return 0
    return None if folded else 1


_PROJECT_KEY = b'"project": "'
# What ``ops/conversations.record_pair`` writes (json.dumps' spelling): the Session ID, then on the
# same line a non-empty project, neither with an escape in it; read without a JSON parse.
_PAIR_RE = LazyRegex(r'"session_id": "([^"\\\n]*)"[^\n]*"project": "([^"\\\n]+)"')


def pair_projects(data: bytes | None) -> dict[str, str]:
    """Session ID -> the project its chat was registered in, from the bytes of
    ``conversations.jsonl`` (docs/projects.md): of the lines that contain ``"project": "``, the
    last that names a non-empty project wins. Each line is read on its own (any subset of the lines
    gives the same answer for its sessions): by ``_PAIR_RE``, else as JSON; in one regex pass over
    the whole file when every such line is one that ``_PAIR_RE`` reads."""
    if not data or _PROJECT_KEY not in data:
        return {}
    try:
        found = _PAIR_RE.findall(utf8(data))
        if len(found) == data.count(_PROJECT_KEY):  # a match per key: every such line read by the regex
            return dict(found)
    except UnicodeDecodeError:
        pass
    out: dict[str, str] = {}
    for raw in data.split(b"\n"):
        if _PROJECT_KEY not in raw:
            continue
        try:
            line = utf8(raw)
            found = _PAIR_RE.findall(line)
            if not found:
                obj = json.loads(line)
                found = [(obj.get("session_id"), obj.get("project"))]
        except (UnicodeDecodeError, ValueError, AttributeError):
            continue
        out.update((sid, proj) for sid, proj in found if isinstance(sid, str) and isinstance(proj, str) and proj)
    return out


def pair_project(data: bytes | None, session_id: str) -> str:
    """``pair_projects(data)`` of one session ("" when none), from the lines that name it alone."""
    needle = session_id.encode("utf-8")
    lines = b"\n".join(ln for ln in (data or b"").split(b"\n") if needle in ln)
    return pair_projects(lines).get(session_id, "")


def offered_sessions(
    active: Iterable[tuple[str, int, str | None]],
    names: Collection[str] | None,
    *,
    exclude: Collection[str] = (),
    limit: int = OFFERED,
) -> list[tuple[str, int, str | None]]:
    """The entries of ``active`` a new chat is offered: ``(Session ID, line offset, project or
    None)`` of the active rows in ``active_order``, each with the project its chats' pairs name
    (``pair_projects``; None: unknown). The chat's own project's sessions (``names``: all its
    names, folded), most recent first, then those of unknown project, never another project's;
    ``names`` None offers every session (no project scoping). The one rule of the hook's fast path
    and of the full board alike; one walk, that stops once the own project has ``limit``."""
    own: list[tuple[str, int, str | None]] = []
    unknown: list[tuple[str, int, str | None]] = []
    ranks: dict[str, int | None] = {}  # a few projects, many sessions: each project ranked once
    for entry in active:
        sid, _, project = entry
        if sid in exclude:
            continue
        if names is not None:
            if project is None:
                if len(unknown) < limit:
                    unknown.append(entry)
                continue
            if project not in ranks:
                ranks[project] = project_rank(project, names)
            if ranks[project] != 0:
                continue
        own.append(entry)
        if len(own) == limit:
            break
    return (own + unknown)[:limit]
