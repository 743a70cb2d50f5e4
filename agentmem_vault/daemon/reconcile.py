"""PURE planning: a folder snapshot and the index text in, actions and reports out.

No I/O and no clock: the same inputs give the same plan, so tests feed synthetic snapshots and the
service re-plans under the vault lock right before applying (the index may have changed since the
first look). The rules (SPEC section 8):

- a session file without a row -> add the row (fields from the snapshot's Metadata, Status active);
- a snapshot whose Metadata Updated At is newer than its row -> sync Topic/Status/Updated At;
- a row whose snapshot was deleted -> report; the row is never deleted;
- a damaged table (header changed, broken rows, duplicate IDs) -> report, never rewrite, do nothing;
- a sync-conflict copy of the index -> fold its rows in by Session ID (newer Updated At wins per
  row, rows only in the copy are added, nothing deleted, Referenced By lists are united so that no
  reference is lost) and move the copy to ``.agentmem/conflicts/``.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from dataclasses import dataclass, field
from datetime import datetime
from typing import Collection

from agentmem_vault.model import index_table as it
from agentmem_vault.config import format_ts, parse_ts
from agentmem_vault.errors import IndexFormatError
from agentmem_vault.model.ids import SESSION_ID_RE, is_valid_session_id
from agentmem_vault.daemon.scan import Entry, FolderSnapshot

ADDED_KEYWORDS = "session-snapshot, daemon-reconcile"
ADDED_SUMMARY = "由 watcher daemon 依 session snapshot 補登。"
DEFAULT_TOPIC = "未設定"


@dataclass(frozen=True)
class AddRow:
    row: it.Row
    kind: str = "add_row"


@dataclass(frozen=True)
class SyncRow:
    before: it.Row
    after: it.Row
    kind: str = "sync_row"


@dataclass(frozen=True)
class FoldConflict:
    copy: str  # path of the copy relative to memory/
    base_text: str  # the index text this fold was computed from
    new_text: str  # the index text with the copy's rows folded in
    added: tuple[str, ...]
    updated: tuple[str, ...]
    move: bool  # False when some of the copy's rows could not be read: it stays for a person
    copy_sha: str | None = None
    kind: str = "fold_conflict"


@dataclass(frozen=True)
class Report:
    key: str  # stable identity: the service logs a report once per key
    kind: str
    message: str
    session_id: str | None = None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "session_id": self.session_id}


Action = AddRow | SyncRow | FoldConflict


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)

    @property
    def writes(self) -> bool:
        return bool(self.actions)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _clean(value: str) -> str:
    # Control characters would make the written row unreadable ("row contains control characters").
    return "".join(ch if ch >= " " or ch == "\t" else " " for ch in (value or "")).strip()


def norm_ts(value: str | None) -> str | None:
    dt = parse_ts(value or "")
    return format_ts(dt) if dt else None


@lru_cache(maxsize=16384)
def _ts(value: str | None) -> datetime | None:
    # Cached: a pass compares thousands of rows whose timestamps rarely change (strptime is slow).
    return parse_ts(value or "")


def _id_parts(session_id: str) -> tuple[str, str]:
    """(agent name, start time) encoded in a Session ID."""
    m = SESSION_ID_RE.match(session_id)
    if not m:
        return "", ""
    y, mo, d, h, mi, agent = m.groups()
    # A trailing -N collision suffix belongs to the ID, not to the agent name.
    parts = agent.rsplit("-", 1)
    if len(parts) == 2 and parts[1].isdigit():
        agent = parts[0]
    return agent, f"{y}-{mo}-{d} {h}:{mi}"


def row_from_snapshot(session_id: str, entry: Entry) -> it.Row:
    meta = entry.meta_dict
    id_agent, id_start = _id_parts(session_id)
    started = norm_ts(meta.get("Started At")) or norm_ts(meta.get("Updated At")) or id_start
    updated = norm_ts(meta.get("Updated At")) or started
    return it.Row(
        session_id,
        _clean(meta.get("Agent Name", "")) or id_agent,
        _clean(meta.get("Topic", "")) or DEFAULT_TOPIC,
        _clean(entry.summary) or ADDED_SUMMARY,
        ADDED_KEYWORDS,
        "active",
        "-",
        started,
        updated,
    )


def synced_row(row: it.Row, entry: Entry) -> it.Row | None:
    """The row with the snapshot's Topic/Status/Updated At when the snapshot is newer, else None."""
    meta = entry.meta_dict
    snap = _ts(meta.get("Updated At"))
    if snap is None:
        return None
    mine = _ts(row.updated_at)
    if mine is not None and snap <= mine:
        return None
    status = _clean(meta.get("Status", "")).lower()
    new = row.with_(
        topic=_clean(meta.get("Topic", "")) or row.topic,
        status=status if status in it.STATUSES else row.status,
        updated_at=format_ts(snap),
    )
    return new if new != row else None


def _union_refs(a: str, b: str) -> str:
    ids = it.split_id_list(a)
    ids += [x for x in it.split_id_list(b) if x not in ids]
    return it.join_id_list(ids)


def archived_in_copy(index_text: str, copy_rows: list[it.Row], archived: Collection[str]) -> list[str]:
    """IDs only the copy has that were archived meanwhile: the copy predates the archive, and an
    archived session never goes back on the board (its row lives in archive/<id>/index.md)."""
    if not archived:
        return []
    doc = it.parse_index(index_text)
    out: list[str] = []
    for r in copy_rows:
        if r.session_id in archived and doc.find(r.session_id) is None and r.session_id not in out:
            out.append(r.session_id)
    return out


def fold_rows(index_text: str, copy_rows: list[it.Row], *, archived: Collection[str] = ()) -> tuple[str, list[str], list[str]]:
    """Fold rows of a conflict copy into the index text: (new text, added IDs, updated IDs).
    Rows of ``archived`` sessions that the index no longer has are not added back."""
    skip = set(archived_in_copy(index_text, copy_rows, archived))
    newest: dict[str, it.Row] = {}
    for r in copy_rows:  # a copy may itself hold a row twice: its newest wins
        if r.session_id in skip:
            continue
        cur = newest.get(r.session_id)
        if cur is None or (_ts(r.updated_at) or datetime.min) > (_ts(cur.updated_at) or datetime.min):
            newest[r.session_id] = r
    text = index_text
    added: list[str] = []
    updated: list[str] = []
    for sid, theirs in newest.items():
        doc = it.parse_index(text)
        ours = doc.find(sid)
        if ours is None:
            text, _ = it.append_row(doc, theirs)
            added.append(sid)
            continue
        t_theirs, t_ours = _ts(theirs.updated_at), _ts(ours.updated_at)
        winner = theirs if (t_theirs is not None and (t_ours is None or t_theirs > t_ours)) else ours
        merged = winner.with_(referenced_by=_union_refs(winner.referenced_by, (ours if winner is theirs else theirs).referenced_by))
        if merged != ours:
            text = it.replace_row(doc, sid, merged)
            updated.append(sid)
    return text, added, updated


def plan(folder: FolderSnapshot, index_text: str | None, *, previous_sessions: set[str] | None = None,
         archived: Collection[str] = ()) -> Plan:
    """Everything the daemon should do (and say) for this state of the folder.

    ``previous_sessions``: the session IDs that had a file at the previous pass (None on the first
    pass), to tell a snapshot deleted by hand from a row that never had one. ``archived``: the IDs
    with a folder under memory/archive/ (only needed when there are conflict copies to fold).
    """
    out = Plan()
    if index_text is None:
        out.reports.append(Report("index_missing", "index_missing",
                                  "memory/index.md is missing; run `agentmem init` (the daemon does not create it)"))
        return out
    try:
        doc = it.parse_index(index_text)
    except IndexFormatError as exc:
        out.reports.append(Report(f"damaged:{_sha(index_text)}", "index_damaged", exc.message + "; not rewritten"))
        return out
    problems = [f"line {b.line_no}: {b.reason}" for b in doc.bad]
    problems += [f"Session ID {d} appears in more than one row" for d in doc.duplicate_ids()]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        out.reports.append(Report(f"damaged:{_sha(index_text)}", "index_damaged",
                                  f"memory/index.md is damaged: {problems[0]}{more}; the daemon will not "
                                  "change it until it is repaired (see `agentmem doctor`)"))
        return out

    text = index_text
    for rel, entry in sorted(folder.conflicts().items()):
        if entry.error or entry.text is None:
            out.reports.append(Report(f"conflict:{rel}:{entry.sha}", "conflict_unreadable",
                                      f"conflict copy memory/{rel}: {entry.error or 'unreadable'}; left in place"))
            continue
        try:
            copy = it.parse_index(entry.text)
        except IndexFormatError as exc:
            out.reports.append(Report(f"conflict:{rel}:{entry.sha}", "conflict_unreadable",
                                      f"conflict copy memory/{rel}: {exc.message}; left in place"))
            continue
        for sid in archived_in_copy(text, copy.row_list(), archived):
            out.reports.append(Report(f"conflict_archived:{rel}:{sid}", "conflict_archived_row",
                                      f"conflict copy memory/{rel} still lists {sid}, which was archived since; "
                                      f"not put back on the board (see memory/archive/{sid}/)", sid))
        new_text, added, updated = fold_rows(text, copy.row_list(), archived=archived)
        move = not copy.bad
        if not move:
            out.reports.append(Report(f"conflict:{rel}:{entry.sha}", "conflict_partial",
                                      f"conflict copy memory/{rel}: {len(copy.bad)} row(s) could not be read "
                                      f"(first: line {copy.bad[0].line_no}); readable rows folded, the copy is left in place"))
        if move or new_text != text:
            out.actions.append(FoldConflict(rel, text, new_text, tuple(added), tuple(updated), move, entry.sha))
        text = new_text
    doc = it.parse_index(text)
    rows = {r.session_id: r for r in doc.row_list()}  # IDs are unique here (duplicates stop above)

    sessions = folder.sessions()
    for sid, entry in sorted(sessions.items()):
        if not is_valid_session_id(sid):
            out.reports.append(Report(f"bad_name:{sid}", "session_file_name",
                                      f"memory/sessions/{sid}.md: the file name is not a Session ID; ignored"))
            continue
        if entry.error:
            out.reports.append(Report(f"unreadable:{sid}:{entry.sha}", "session_unreadable",
                                      f"memory/sessions/{sid}.md: {entry.error}; ignored", sid))
            continue
        meta_id = entry.meta_dict.get("Session ID", "").strip()
        if meta_id and meta_id != sid:
            out.reports.append(Report(f"id_mismatch:{sid}:{meta_id}", "session_id_mismatch",
                                      f"memory/sessions/{sid}.md says Session ID {meta_id}; the file name wins", sid))
        row = rows.get(sid)
        if row is None:
            out.actions.append(AddRow(row_from_snapshot(sid, entry)))
            continue
        new = synced_row(row, entry)
        if new is not None:
            out.actions.append(SyncRow(row, new))

    for row in rows.values():
        if row.session_id in sessions:
            continue
        if previous_sessions is not None and row.session_id in previous_sessions:
            out.reports.append(Report(f"deleted:{row.session_id}", "snapshot_deleted",
                                      f"memory/sessions/{row.session_id}.md was deleted; its row is kept "
                                      "(archive or restore it)", row.session_id))
        elif previous_sessions is None and row.status in ("active", "stale"):
            out.reports.append(Report(f"missing:{row.session_id}", "snapshot_missing",
                                      f"row {row.session_id} is {row.status} but has no memory/sessions/{row.session_id}.md", row.session_id))
    return out
