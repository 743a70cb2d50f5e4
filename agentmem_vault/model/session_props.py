"""Obsidian Properties (YAML frontmatter) on session snapshots and archives (pure, ``str -> str``);
what they hold, where each comes from and the rules are docs/obsidian.md. The Metadata table (and
the board row, or the archive index once archived) stays the source of truth; ``sync_props`` puts
a file's frontmatter in step with its tables, rewriting only stale managed keys (every other byte
kept), ``parse_frontmatter`` / ``render_frontmatter`` round-trip the YAML exactly, and
``disagreements`` names the managed keys that differ (doctor, daemon). PyYAML is imported lazily:
the sessionStart hook path never loads this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from agentmem_vault.errors import SnapshotFormatError, UsageError
from agentmem_vault.model import template_text, yamlload
from agentmem_vault.model.ids import link

SESSION_TAG = "agent-memory/session"
ARCHIVE_TAG = "agent-memory/archive"

LIVE = "session"  # memory/sessions/<id>.md
ARCHIVED = "archived_session"  # memory/archive/<id>/session.md
ARCHIVE_INDEX = "archive_index"  # memory/archive/<id>/index.md
KINDS = (LIVE, ARCHIVED, ARCHIVE_INDEX)

# Obsidian property types (``.obsidian/types.json``) of everything we write, session and long-term
# notes alike: one name has one type vault-wide, so the two note kinds must agree. Data
# (templates/obsidian_types.json); the session keys are listed in the order they are written when
# a file gets its frontmatter for the first time.
_TYPES = json.loads(template_text("obsidian_types.json"))
KEY_ORDER: tuple[str, ...] = tuple(_TYPES["session"])
PROPERTY_TYPES: dict[str, str] = {**_TYPES["session"], **_TYPES["long-term"]}
DATETIME_KEYS = frozenset(k for k, t in PROPERTY_TYPES.items() if t == "datetime")
LIST_KEYS = frozenset(k for k, t in PROPERTY_TYPES.items() if t in ("multitext", "aliases", "tags"))
# Lists the tool adds its own value to and otherwise leaves to the user.
_UNION_KEYS = frozenset({"aliases", "tags"})


class _Keep:
    """An expected value meaning: the user's value is kept; the key is added empty when missing."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


# -- values ------------------------------------------------------------------------------------

_TS_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?$")


def obsidian_datetime(value: str) -> str | None:
    """A table timestamp (``2026-05-25 13:18``, ISO forms) in the form Obsidian's Date & time
    properties store (``2026-05-25T13:18:00``); ``None`` for ``-``/empty; unreadable text as is
    (it stays a readable string rather than a wrong date)."""
    v = (value or "").strip()
    if not v or v == "-":
        return None
    m = _TS_RE.match(v)
    if not m:
        return v
    y, mo, d, h, mi, s = m.groups()
    try:
        datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    except ValueError:
        return v
    return f"{y}-{mo}-{d}T{h or '00'}:{mi or '00'}:{s or '00'}"


def _split_list(value: str, empty: tuple[str, ...] = ("-",)) -> list[str]:
    parts = (part.strip() for part in re.split(r"[,，、;]", value or ""))
    return list(dict.fromkeys(p for p in parts if p and p not in empty))


def _ids(value: str | Iterable[str]) -> list[str]:
    from agentmem_vault.model.snapshot import (
        clean_id,  # snapshot imports nothing from here
    )

    parts = _split_list(value, ("-", "None", "none")) if isinstance(value, str) else list(value)
    return list(dict.fromkeys(sid for sid in map(clean_id, parts) if sid))


def _scalar(value: str | None) -> str | None:
    v = (value or "").strip()
    return v if v and v != "-" else None


@dataclass(frozen=True)
class BoardFacts:
    """What the board row (or, once archived, the archive index) says about a session."""

    status: str = ""
    summary: str = ""
    keywords: str = ""
    referenced_by: str = "-"
    archived_at: str = ""  # archives only

    @classmethod
    def from_row(cls, row: Any) -> BoardFacts:
        return cls(row.status, row.summary, row.keywords, row.referenced_by or "-")

    @classmethod
    def from_archive_index(cls, meta: Mapping[str, str]) -> BoardFacts:
        return cls(
            meta.get("Original Status", ""),
            meta.get("Summary", ""),
            meta.get("Keywords", ""),
            meta.get("Referenced By", "-"),
            meta.get("Archived At", ""),
        )


def expected_props(
    meta: Mapping[str, str], continues_from: Iterable[str], *, session_id: str, kind: str, board: BoardFacts | None
) -> dict[str, Any]:
    """The managed properties of one file, from its Metadata table and the board facts.

    ``board`` None: the board is not known here, so summary/keywords/referenced_by are not managed
    (whatever the file holds is kept) and status comes from the Metadata table."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    out: dict[str, Any] = {
        "aliases": [f"{session_id} archive index" if kind == ARCHIVE_INDEX else session_id],
        "tags": [ARCHIVE_TAG if kind == ARCHIVE_INDEX else SESSION_TAG],
        "session_id": session_id,
        "agent": _scalar(meta.get("Agent Name")),
        "topic": _scalar(meta.get("Topic")),
    }
    if kind == LIVE:
        out["status"] = _scalar(board.status if board and board.status.strip() else meta.get("Status"))
    else:
        out["status"] = "archived"
        out["original_status"] = _scalar(
            meta.get("Original Status") if kind == ARCHIVE_INDEX else (board.status if board else None)
        )
    if kind == ARCHIVE_INDEX:
        board = BoardFacts.from_archive_index(meta)
    if board is not None:
        out["summary"] = _scalar(board.summary)
        out["keywords"] = _split_list(board.keywords)
        out["referenced_by"] = [link(i) for i in _ids(board.referenced_by)]
    # A Project row in the table decides; otherwise the value is the user's (added empty when missing).
    out["project"] = _scalar(meta.get("Project")) if "Project" in meta else KEEP
    out["started"] = obsidian_datetime(meta.get("Started At", ""))
    out["updated"] = obsidian_datetime(meta.get("Updated At", ""))
    if kind != LIVE:
        archived = meta.get("Archived At") if kind == ARCHIVE_INDEX else (board.archived_at if board else "")
        if archived or kind == ARCHIVE_INDEX:
            out["archived"] = obsidian_datetime(archived or "")
    if kind != ARCHIVE_INDEX:
        out["continues_from"] = [link(i) for i in _ids(continues_from)]
    return out


def normal(key: str, value: Any) -> Any:
    """A loaded YAML value in the form ``expected_props`` uses, to compare the two."""
    if isinstance(value, datetime):
        value = value.strftime("%Y-%m-%dT%H:%M:%S")
    elif isinstance(value, date):
        value = value.isoformat()
    if key in LIST_KEYS:
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        return [normal("", v) for v in items]
    if key in DATETIME_KEYS and isinstance(value, str):
        return obsidian_datetime(value)
    if isinstance(value, str):
        return value.strip() or None
    return value


# -- YAML text ---------------------------------------------------------------------------------

# Characters PyYAML refuses in a stream, or that a reader may take as a line break.
_ESCAPE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_PLAIN_RE = re.compile(r"^[^\s\-?:,\[\]{}#&*!|>'\"%@`0-9+.~][^#\n]*$")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"})


def _quoted(s: str) -> str:
    body = json.dumps(s, ensure_ascii=False)[1:-1]
    body = _ESCAPE_RE.sub(
        lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) > 0x9F else f"\\x{ord(m.group()):02x}", body
    )
    return f'"{body}"'


def yaml_scalar(value: Any) -> str:
    """One value as YAML that every reader (PyYAML's 1.1, Obsidian's 1.2) reads back the same."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    s = str(value)
    if _SURROGATE_RE.search(s):  # undecodable bytes of an argument: the same refusal as a table cell
        shown = s.encode("utf-8", "backslashreplace").decode("utf-8")
        raise UsageError(f"{shown!r} is not UTF-8 text (undecodable bytes in an argument?); nothing was written")
    if _TS_RE.match(s) and "T" in s:
        return s  # a datetime as Obsidian's documentation writes it
    plain = (
        _PLAIN_RE.match(s)
        and s == s.strip()
        and ": " not in s
        and not s.endswith(":")
        and s.lower() not in _YAML_WORDS
        and not _ESCAPE_RE.search(s)
        and _reads_back(s)
    )
    return s if plain else _quoted(s)


def _reads_back(s: str) -> bool:
    """Whether ``s`` written plain loads back as the same string (YAML 1.1 resolves odd plain
    scalars such as ``=`` or ``<<`` to tags of their own)."""
    try:
        return _load(f"k: {s}") == {"k": s}
    except SnapshotFormatError:
        return False


def render_entry(key: str, value: Any) -> str:
    """``key: value`` (a list as an indented block list, as Obsidian writes it)."""
    k = key if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", key) else _quoted(key)
    if isinstance(value, list):
        if not value:
            return f"{k}: []"
        return "\n".join([f"{k}:", *(f"  - {yaml_scalar(v)}" for v in value)])
    s = yaml_scalar(value)
    return f"{k}: {s}" if s else f"{k}:"


@dataclass
class Entry:
    """A top-level entry: its key (None for leading comments/blank lines) and its exact lines."""

    key: str | None
    text: str


@dataclass
class Frontmatter:
    entries: list[Entry]
    data: dict[str, Any]


_KEY_RE = re.compile(
    r"""^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#\-?:'"{\[][^:#]*?|-[^\s:][^:#]*?))[ \t]*:(?:[ \t]|$)"""
)


def _load(raw: str) -> Any:
    # the file's name and what to do are its reader's: doctor, the writer (ops/session_files.py)
    return yamlload.load(raw, SnapshotFormatError, "the frontmatter", first_line=2) if raw.strip() else {}


def parse_frontmatter(raw: str) -> Frontmatter:
    """Split the text between the ``---`` lines into entries (exact text) and load it."""
    data = _load(raw)
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise SnapshotFormatError(f"the YAML frontmatter is not a list of properties (it is a {type(data).__name__})")
    entries: list[Entry] = []
    for line in raw.split("\n"):
        m = _KEY_RE.match(line)
        if m:
            double, single, plain = m.groups()
            if double is not None:
                try:
                    key = json.loads(f'"{double}"')
                except ValueError:
                    key = double  # a YAML-only escape: the key check below then falls back
            else:
                key = single.replace("''", "'") if single is not None else plain.strip()
            entries.append(Entry(key, line))
        elif entries:
            entries[-1].text += "\n" + line
        else:
            entries.append(Entry(None, line))
    keys = [e.key for e in entries if e.key is not None]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise SnapshotFormatError(f"the YAML frontmatter names property {dup[0]!r} more than once")
    if sorted(keys) != sorted(str(k) for k in data):
        # A layout the line split cannot follow (flow mapping, JSON, complex keys): one opaque entry.
        # Managed keys are then rewritten through a full re-render (see sync_frontmatter).
        entries = [Entry("\x00opaque", raw)]
    return Frontmatter(entries, data)


def render_frontmatter(fm: Frontmatter) -> str:
    return "\n".join(e.text for e in fm.entries)


def _merged_value(key: str, want: Any, have: Any) -> Any:
    if want is KEEP:
        return have
    if key in _UNION_KEYS:
        have_list = normal(key, have)
        return have_list + [v for v in want if v not in have_list]
    return want


def sync_frontmatter(raw: str | None, expected: Mapping[str, Any]) -> str:
    """``raw`` frontmatter (or None) with every managed key holding its expected value."""
    fm = parse_frontmatter(raw) if raw is not None else Frontmatter([], {})
    if fm.entries and fm.entries[0].key == "\x00opaque":
        data = dict(fm.data)
        for key, want in expected.items():
            data[key] = _merged_value(key, want, data.get(key))
        import yaml

        lines = [
            render_entry(str(k), normal(str(k), v))
            if str(k) in expected
            else yaml.safe_dump({k: v}, allow_unicode=True, default_flow_style=False, sort_keys=False).rstrip("\n")
            for k, v in data.items()
        ]
        return "\n".join(lines)
    changed = False
    by_key = {e.key: e for e in fm.entries if e.key is not None}
    for key in sorted(expected, key=lambda k: KEY_ORDER.index(k) if k in KEY_ORDER else len(KEY_ORDER)):
        want = expected[key]
        entry = by_key.get(key)
        if entry is not None:
            have = fm.data.get(key)
            value = _merged_value(key, want, have)
            if normal(key, have) == normal(key, value):
                continue
            # keep what followed the value (a trailing comment line, blank lines) after the entry
            entry.text = render_entry(key, value) + _trailing_blank(entry.text)
        else:
            _append(fm.entries, Entry(key, render_entry(key, _merged_value(key, want, None))))
        changed = True
    if not changed and raw is not None:
        return raw
    out = render_frontmatter(fm)
    check = _load(out)  # never write frontmatter that does not read back as intended
    for key, want in expected.items():
        if not isinstance(check, dict) or normal(key, check.get(key)) != normal(
            key, _merged_value(key, want, fm.data.get(key))
        ):
            raise SnapshotFormatError(f"property {key!r} would not read back as written; nothing was written")
    return out


def _trailing_blank(text: str) -> str:
    lines = text.split("\n")
    n = 0
    while len(lines) - n > 1 and not lines[len(lines) - 1 - n].strip():
        n += 1
    return "\n" * n if n else ""


def _append(entries: list[Entry], entry: Entry) -> None:
    # before trailing blank lines of the last entry, so a blank line before the closing fence stays last
    if entries and entries[-1].key is not None:
        last = entries[-1]
        tail = _trailing_blank(last.text)
        if tail:
            last.text = last.text[: -len(tail)]
            entry.text += tail
    entries.append(entry)


# -- whole files -------------------------------------------------------------------------------


def split_text(text: str) -> yamlload.Fenced:
    return yamlload.split_frontmatter(text, SnapshotFormatError)


def join_text(parts: yamlload.Fenced, frontmatter: str) -> str:
    nl = parts.newline
    head = "---" + nl + (frontmatter.replace("\n", nl) + nl if frontmatter else "") + parts.fence_close + nl
    return parts.bom + head + (parts.body if parts.body.strip() else "")


def expected_for_text(
    text: str, *, kind: str, board: BoardFacts | None, session_id: str | None = None
) -> dict[str, Any]:
    from agentmem_vault.model.snapshot import parse_snapshot

    snap = parse_snapshot(text)
    return expected_props(
        snap.metadata, snap.continues_from, session_id=session_id or snap.session_id, kind=kind, board=board
    )


def sync_props(text: str, *, kind: str, board: BoardFacts | None, session_id: str | None = None) -> str:
    """The file with its frontmatter in step with its tables (added when it has none). Raises
    SnapshotFormatError for malformed frontmatter or a file that is not a snapshot/archive index."""
    parts = split_text(text)
    expected = expected_for_text(text, kind=kind, board=board, session_id=session_id)
    new_fm = sync_frontmatter(parts.frontmatter, expected)
    if parts.frontmatter is not None and new_fm == parts.frontmatter:
        return text
    if parts.frontmatter is None and parts.body.strip():
        # first frontmatter: a blank line between it and the title, as render_snapshot writes it
        parts = parts._replace(body=parts.newline + parts.body)
    return join_text(parts, new_fm)


def disagreements(text: str, *, kind: str, board: BoardFacts | None, session_id: str | None = None) -> list[str]:
    """Managed keys whose frontmatter value differs from the tables ([] when in step or when the
    file has no frontmatter). Raises SnapshotFormatError for malformed frontmatter."""
    parts = split_text(text)
    if parts.frontmatter is None:
        return []
    fm = parse_frontmatter(parts.frontmatter)
    expected = expected_for_text(text, kind=kind, board=board, session_id=session_id)
    return [
        k
        for k, want in expected.items()
        if want is not KEEP
        and (k not in fm.data or normal(k, fm.data.get(k)) != normal(k, _merged_value(k, want, fm.data.get(k))))
    ]


# -- .obsidian/types.json ----------------------------------------------------------------------


def merge_types_json(existing: str | None) -> tuple[str, list[str]]:
    """``types.json`` with our property types merged in: (new text, keys added or changed). Other
    keys and settings are kept. Raises ValueError (bad JSON) or TypeError (not the expected shape)."""
    data: dict[str, Any] = {}
    if existing is not None and existing.strip():
        data = json.loads(existing.lstrip("\ufeff"))
        if not isinstance(data, dict):
            raise TypeError("types.json is not a JSON object")
    types = {} if data.get("types") is None else data["types"]
    if not isinstance(types, dict):
        raise TypeError("the 'types' entry of types.json is not an object")
    changed = [k for k, t in PROPERTY_TYPES.items() if types.get(k) != t]
    if not changed and existing is not None:
        return existing, []
    data["types"] = {**types, **{k: PROPERTY_TYPES[k] for k in changed}}
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n", changed
