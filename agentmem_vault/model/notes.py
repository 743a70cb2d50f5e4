"""The long-term note: ``memory/long-term/<name>.md``, YAML frontmatter (Obsidian Properties) + body.

One model, read one way by every part of the program (extraction, curation, ``memories``, the recall
index): ``parse_note(text) -> Note`` and ``render_note(note) -> str`` are the only reader and writer
of the format, and every normalisation rule lives in this module (the rules: docs/notes.md).

The frontmatter's YAML is loaded and dumped through python-frontmatter's ``YAMLHandler`` (the C
LibYAML loader when present). The fence is split by ``yamlload.split_frontmatter``, not by
``frontmatter.loads``, which silently returns no properties for an unclosed fence or a non-mapping
and strips the body: a note this program would then rewrite without its properties. Pure.
"""

from __future__ import annotations

import json
import math
import re
import stat
from dataclasses import dataclass, field, fields
from datetime import date, datetime
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from agentmem_vault.errors import NoteFormatError
from agentmem_vault.model import template_text, yamlload
from agentmem_vault.model.ids import link

TAG = "agent-memory/long-term"
# With seconds: YAML readers (Obsidian, PyYAML) then take it as a date-time, as they do the
# snapshots' Properties; one format for every time property (docs/notes.md).
NOTE_TS = "%Y-%m-%dT%H:%M:%S"
# How the known properties are read and written, besides text (docs/notes.md): lists, times, and
# enums (lower-cased; the default when empty).
_LISTS = frozenset({"keywords", "usage_scenario", "sources", "tags"})
_TIMES = frozenset({"created", "updated"})
_ENUMS = {"category": "", "status": "active", "scope": ""}
# Read, never written: an older version wrote the assessment twice, as ``score`` and as
# ``assessment_score``. ``score`` is the one property (docs/notes.md); the old key stands in for
# it when ``score`` is missing or not a number, and is dropped when the note is written back.
LEGACY_SCORE_KEY = "assessment_score"

STATUSES = ("active", "deprecated")
DEFAULT_IMPORTANCE = 0.5
DEFAULT_SCORE = 3
SCORE_RANGE = (1, 5)
HISTORY_HEADING = "History"
# Headings that open the History section (compared case-insensitively, a trailing colon allowed):
# data, templates/history_headings.txt.
HISTORY_HEADINGS = frozenset(
    ln.strip() for ln in template_text("history_headings.txt").splitlines() if ln.strip() and ln[0] != "#"
)

# A scalar written for a list property is split on ASCII and full-width commas, the ideographic
# enumeration comma and semicolons (Obsidian's text field invites "pnpm，npm").
_SEPARATORS = ",，、;；"
# Short-token lists are also split inside a list item ("[pnpm，npm]" is two keywords); sentence
# lists (usage_scenario) and sources are not: a scenario may contain a comma.
_SPLIT_ITEMS = frozenset({"keywords", "tags"})

_LINK = r"\[\[[^\[\]\n]+\]\]"
_LINK_RE = re.compile(_LINK)
_LINKS_RE = re.compile(rf"{_LINK}(?:[ \t]*[{_SEPARATORS}][ \t]*{_LINK})*")
_LINK_TARGET_RE = re.compile(r"^\[\[([^\]|#]*)(?:[#|][^\]]*)?\]\]$")
# An unquoted Obsidian link as a property value or a list item: YAML would read it as a nested
# list, so it is quoted before the YAML is loaded (docs/notes.md, "Links").
_KEY_LINKS_RE = re.compile(
    rf"^(?P<lead>[ \t]*(?:-[ \t]+)?[^\s#'\"\[\]{{}}:-][^:\n]*:[ \t]+)(?P<links>{_LINKS_RE.pattern})[ \t]*$"
)
_ITEM_LINKS_RE = re.compile(rf"^(?P<lead>[ \t]*-[ \t]+)(?P<links>{_LINKS_RE.pattern})[ \t]*$")
_BARE_LINK_RE = re.compile(r"[:-][ \t]+\[\[")
_BLOCK_SCALAR_RE = re.compile(r":[ \t]*[|>][-+0-9]*[ \t]*(?:#.*)?$")
# What an earlier version of this program wrote for a link it had read as a nested list: "['x']".
_REPR_LINK_RE = re.compile(r"""^\[\s*(?:'((?:[^']|'')*)'|"([^"]*)")\s*\]$""")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")


@dataclass
class HistoryEntry:
    when: str  # YYYY-MM-DDTHH:MM of the version it holds
    text: str


@dataclass
class Note:
    """One long-term note. ``extra`` holds the properties this program does not know, in file
    order, and is written back untouched; ``path`` and ``crlf`` describe the file, not the note."""

    id: str = ""
    title: str = ""
    category: str = ""
    keywords: list[str] = field(default_factory=list)
    usage_scenario: list[str] = field(default_factory=list)
    project: str = ""
    module: str = ""
    importance: float = DEFAULT_IMPORTANCE
    score: int = DEFAULT_SCORE
    status: str = "active"
    created: str = ""
    updated: str = ""
    # "[[session-id]]" for a session (an Obsidian link), "cursor:…", "claude:…", "file:…" otherwise
    sources: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=lambda: [TAG])
    scope: str = ""  # "project" / "module" / "global"; "" = not set
    assessment_reason: str = ""  # why the assessment gave ``score`` (set by extraction)
    deprecated_reason: str = ""
    content: str = ""
    history: list[HistoryEntry] = field(default_factory=list)
    history_preface: str = ""  # text under the History heading before its first dated entry
    history_heading: str = HISTORY_HEADING  # as the user wrote it (歷史, History, ...)
    extra: dict[str, Any] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)
    crlf: bool = field(default=False, compare=False)
    # The fields up to ``tags`` are the properties always written, in this order (KEY_ORDER); the
    # three after it are written after them, each only when set (OPTIONAL_KEYS).

    @property
    def active(self) -> bool:
        return self.status != "deprecated"

    @property
    def name(self) -> str:
        """The title, or the file name for a note without one (a plain Markdown note)."""
        return self.title or (self.path.stem if self.path is not None else "")

    @property
    def changed_at(self) -> str:
        """When the note last changed (``updated``, else ``created``): what recency ranks by."""
        return self.updated or self.created

    @property
    def source_ids(self) -> list[str]:
        """The link targets of ``sources`` (Session IDs); other references as written."""
        return [link_target(s) for s in self.sources]


_FIELDS = tuple(f.name for f in fields(Note))
KEY_ORDER = _FIELDS[: _FIELDS.index("tags") + 1]
OPTIONAL_KEYS = ("scope", "assessment_reason", "deprecated_reason")
KNOWN_KEYS = frozenset(KEY_ORDER) | frozenset(OPTIONAL_KEYS)


# -- small normalisers (the rules; docs/notes.md) ------------------------------------------------


def link_target(value: str) -> str:
    """``[[2026-05-25-1318-cursor-main-agent|alias]]`` -> ``2026-05-25-1318-cursor-main-agent``;
    anything that is not a link is returned stripped."""
    s = value.strip()
    m = _LINK_TARGET_RE.match(s)
    return m.group(1).strip() if m else s


def format_note_ts(dt: datetime) -> str:
    """A time this program writes into a note (docs/notes.md): to the second."""
    return dt.strftime(NOTE_TS)


def _text(value: Any, key: str) -> str:
    """A text property: numbers and dates as written, a one-item list (an unquoted link) as its item."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.strftime(NOTE_TS)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return ", ".join(_list(value, key))
    if isinstance(value, dict):
        raise NoteFormatError(f"property {key!r} is a mapping, expected text")
    return str(value).strip()


def _ts(value: Any, key: str) -> str:
    if isinstance(value, datetime):
        return value.strftime(NOTE_TS)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).strftime(NOTE_TS)
    text = _text(value, key)
    m = _MINUTES_TS.match(text)
    # an older note's "2026-11-29T15:20" (YAML reads it as a string): one format from now on
    return f"{m.group(1)}T{m.group(2)}:00" if m else text


_MINUTES_TS = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})$")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        f = float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _importance(value: Any) -> float:
    f = _number(value)
    return DEFAULT_IMPORTANCE if f is None else min(1.0, max(0.0, f))


def _int_in(value: Any, lo: int, hi: int) -> int | None:
    f = _number(value)
    return None if f is None else int(min(hi, max(lo, round(f))))


_SEP_RE = re.compile(f"[{_SEPARATORS}]")
_SPLIT_RE = re.compile(f"\\[\\[|\\]\\]|[{_SEPARATORS}]")  # link brackets and separators
_H2_RE = re.compile(r"^##[ \t]", re.MULTILINE)


def _split_scalar(s: str) -> list[str]:
    """Split on the separators, but never inside an Obsidian link (``[[a, b]]`` is one target)."""
    out: list[str] = []
    depth = start = 0
    for m in _SPLIT_RE.finditer(s):
        if m.group() == "[[":
            depth += 1
        elif m.group() == "]]":
            depth = max(0, depth - 1)
        elif not depth:
            out.append(s[start : m.start()])
            start = m.end()
    out.append(s[start:])
    return [p.strip() for p in out if p.strip()]


def _item(value: Any, key: str) -> list[str]:
    """One list item as zero or more strings (a nested list is an unquoted Obsidian link)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        # `- [[a]]` loaded without the pre-pass: [['a']]; the link text is the inner items
        inner = _nested_text(value, key, 1)
        return [link(inner)] if inner else []
    if isinstance(value, dict):
        raise NoteFormatError(f"property {key!r} holds a mapping, expected a list of text")
    s = _text(value, key)
    if not s:
        return []
    if s[0] == "[":
        m = _REPR_LINK_RE.match(s)
        if m:  # "['2026-…']": the corruption an earlier version wrote; repaired to the link it was
            return [link(m.group(1).replace("''", "'") if m.group(1) is not None else m.group(2))]
        if _LINKS_RE.fullmatch(s):
            return _split_scalar(s)
    if key in _SPLIT_ITEMS and _SEP_RE.search(s):
        return _split_scalar(s)
    return [s]


MAX_NESTING = 3  # [[[a]]] at most: deeper lists are not links but YAML alias tricks
MAX_ITEMS = 10_000


def _nested_text(value: Any, key: str, depth: int) -> str:
    if not isinstance(value, (list, tuple)):
        return _text(value, key)
    if depth > MAX_NESTING or len(value) > MAX_ITEMS:
        raise NoteFormatError(f"property {key!r} is nested too deeply to be a list of text or links")
    return ", ".join(x for x in (_nested_text(v, key, depth + 1) for v in value) if x)


def _list(value: Any, key: str) -> list[str]:
    """A list property from a list, a scalar ("a, b", "a，b"), a link or a nested-list artefact."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_ITEMS:
            raise NoteFormatError(f"property {key!r} has more than {MAX_ITEMS} items")
        out: list[str] = []
        for v in value:
            out.extend(_item(v, key))
        return out
    if isinstance(value, dict):
        raise NoteFormatError(f"property {key!r} is a mapping, expected a list of text")
    return _split_scalar(_text(value, key))


# -- reading -----------------------------------------------------------------------------------------


def quote_links(fm: str) -> str:
    """Quote the unquoted Obsidian links of property values and list items (``sources: [[id]]``,
    ``- [[id]]``, ``related: [[a]], [[b]]``), which YAML would read as nested lists or reject."""
    if not _BARE_LINK_RE.search(fm):  # the tool's own notes quote their links: nothing to do
        return fm
    out: list[str] = []
    block_indent: int | None = None  # inside a | or > block scalar: text, never touched
    for line in fm.split("\n"):
        indent = len(line) - len(line.lstrip(" \t"))
        if block_indent is not None:
            if not line.strip() or indent > block_indent:
                out.append(line)
                continue
            block_indent = None
        if _BLOCK_SCALAR_RE.search(line):
            block_indent = indent
        if "[[" in line:
            m = _KEY_LINKS_RE.match(line)
            if m:
                links = _LINK_RE.findall(m.group("links"))
                line = m.group("lead") + "[" + ", ".join(json.dumps(x, ensure_ascii=False) for x in links) + "]"
            else:
                m = _ITEM_LINKS_RE.match(line)
                if m:
                    line = m.group("lead") + json.dumps(m.group("links"), ensure_ascii=False)
        out.append(line)
    return "\n".join(out)


_HANDLER = frontmatter.YAMLHandler()


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader with YAML 1.2 booleans: only true/false. YAML 1.1 also reads yes/no/on/off as
    booleans, so a property named ``on`` would come back as ``True`` and be renamed on rewrite;
    Obsidian's Properties treat them as text too."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _load_yaml(fm: str) -> dict[str, Any]:
    if not fm.strip():
        return {}
    # the file's name and what to do are the reader's (docs/notes.md, "Malformed notes")
    data = yamlload.load(quote_links(fm), NoteFormatError, "the frontmatter", loader=_Loader, first_line=2)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise NoteFormatError(f"the frontmatter is a {type(data).__name__}, not a set of properties (key: value lines)")
    return {str(k): v for k, v in data.items()}


def _heading(line: str) -> tuple[int, str] | None:
    s = line.rstrip()
    if not s.startswith("#"):
        return None
    level = len(s) - len(s.lstrip("#"))
    if level > 6 or (len(s) > level and s[level] not in " \t"):
        return None
    return level, s[level:].strip()


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every heading outside code fences."""
    out: list[tuple[int, int, str]] = []
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE_RE.match(line):
            fenced = not fenced
        elif not fenced and (h := _heading(line)) is not None:
            out.append((i, *h))
    return out


def split_body(body: str) -> tuple[str, str, str, list[HistoryEntry]]:
    """(content, History heading as written, text before the first dated entry, entries).

    The History section is a level-2 heading (History, 歷史, 历史, ...) up to the next heading of
    level 1-2; headings inside code fences do not count. Sections after it stay content."""
    if not _H2_RE.search(body):  # no level-2 heading: no History section (the common case)
        return body.strip("\n"), HISTORY_HEADING, "", []
    lines = body.split("\n")
    heads = _headings(lines)
    found = [(i, t) for i, level, t in heads if level == 2 and t.rstrip(":：").strip().casefold() in HISTORY_HEADINGS]
    if not found:
        return body.strip("\n"), HISTORY_HEADING, "", []
    start, heading = found[0]
    end = next((i for i, level, _ in heads if i > start and level <= 2), len(lines))
    before = "\n".join(lines[:start]).strip("\n")
    after = "\n".join(lines[end:]).strip("\n")
    content = before + ("\n\n" + after if before and after else after)
    # each level-3 heading opens a dated entry that runs to the next one
    dated = [(i, t) for i, level, t in heads if start < i < end and level == 3] + [(end, "")]
    history = [
        HistoryEntry(t, "\n".join(lines[i + 1 : dated[n + 1][0]]).strip("\n")) for n, (i, t) in enumerate(dated[:-1])
    ]
    return content, heading, "\n".join(lines[start + 1 : dated[0][0]]).strip("\n"), history


def _read(key: str, value: Any) -> Any:
    """One known property as the Note holds it (every field normalised here)."""
    if key in _LISTS:
        return _list(value, key)
    if key in _TIMES:
        return _ts(value, key)
    if key in _ENUMS:
        return _text(value, key).lower() or _ENUMS[key]  # ``Deprecated`` is ``deprecated``; unknown values kept
    return _importance(value) if key == "importance" else _text(value, key)


def note_from_properties(data: dict[str, Any], body: str) -> Note:
    """A Note from loaded properties and the body (an absent ``tags`` is the default tag)."""
    content, heading, preface, history = split_body(body)
    score = _int_in(data.get("score"), *SCORE_RANGE) or _int_in(data.get(LEGACY_SCORE_KEY), *SCORE_RANGE)
    known = {k: _read(k, data.get(k)) for k in KEY_ORDER + OPTIONAL_KEYS if k != "score" and (k != "tags" or k in data)}
    return Note(
        **known,
        score=score or DEFAULT_SCORE,
        content=content,
        history=history,
        history_preface=preface,
        history_heading=heading,
        # a date-time in an extra property (source_time) is text in the one format, as the known ones
        extra={
            k: v.strftime(NOTE_TS) if isinstance(v, datetime) else v
            for k, v in data.items()
            if k not in KNOWN_KEYS and k != LEGACY_SCORE_KEY
        },
    )


def parse_note(text: str) -> Note:
    """Parse a note's text. A note without frontmatter is a note with no properties; broken
    frontmatter (unclosed fence, invalid YAML, not a mapping, a mapping where text belongs)
    raises NoteFormatError with a one-line reason."""
    parts = yamlload.split_frontmatter(text.replace("\r\n", "\n").replace("\r", "\n"), NoteFormatError)
    data = _load_yaml(parts.frontmatter) if parts.frontmatter is not None else {}
    note = note_from_properties(data, parts.body)
    note.crlf = "\r\n" in text[:4096]
    return note


MAX_NOTE_BYTES = 8 * 1024 * 1024  # a knowledge point is a paragraph; 8 MB is a pasted dump or a mistake


def note_file_problem(mode: int, size: int) -> str | None:
    """Why a file's stat (``st_mode``, ``st_size``) rules it out as a note, or None. Checked before
    reading: a FIFO would block the reader and a huge file would hold every reader up."""
    if not stat.S_ISREG(mode):
        return "not a regular file (a FIFO, socket or device); left alone"
    if size > MAX_NOTE_BYTES:
        return f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MB; left alone"
    return None


def read_note_bytes(data: bytes, path: Path | None = None) -> Note:
    """Decode and parse one note file's bytes; ``path`` is recorded on the note."""
    try:
        note = parse_note(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise NoteFormatError(f"not UTF-8 text (byte {exc.start})") from exc
    note.path = path
    return note


def salvage_body(data: bytes) -> str:
    """The body of a note whose frontmatter is broken (what a search can still find in it)."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    return split_body(yamlload.split_frontmatter(text, lenient=True).body)[0].strip()


# -- writing -------------------------------------------------------------------------------------------


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """SafeDumper that writes an Obsidian link as a double-quoted string ("[[id]]"), the form
    Obsidian's Properties editor writes and reads as a link."""


_SECONDS_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if value.startswith("[[") and value.endswith("]]"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if _SECONDS_TS.match(value):
        # unquoted, as the snapshots' Properties: YAML readers and Obsidian see a date-time (it
        # reads back as this same text, docs/notes.md)
        return dumper.represent_scalar("tag:yaml.org,2002:timestamp", value)
    return dumper.represent_str(value)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.Node:
    # A list of one-line scalars in flow style (``keywords: [a, b]``, ``sources: ["[[id]]"]``, the
    # documented layout); anything else in block style.
    flat = all(isinstance(x, (str, int, float)) and not (isinstance(x, str) and "\n" in x) for x in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flat)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(list, _represent_list)


def properties(note: Note) -> dict[str, Any]:
    """The frontmatter as written: KEY_ORDER, then the optional keys that are set, then ``extra``;
    written as they will be read (text stripped, enums lower-case, numbers clamped, no empty items)."""
    d: dict[str, Any] = {}
    for k in (*KEY_ORDER, *OPTIONAL_KEYS):
        v = getattr(note, k)
        if k in _LISTS:
            d[k] = [x.strip() for x in v if x.strip()]
        elif k in _ENUMS:
            d[k] = v.strip().lower() or _ENUMS[k]
        elif k in ("importance", "score"):
            d[k] = _importance(v) if k == "importance" else _int_in(v, *SCORE_RANGE) or DEFAULT_SCORE
        else:
            d[k] = v.strip()
    for k in OPTIONAL_KEYS:  # a deprecated note always has a deprecated_reason, empty or not
        if not d[k] and not (k == "deprecated_reason" and d["status"] == "deprecated"):
            del d[k]
    for k, v in note.extra.items():
        d.setdefault(k, v)
    return d


def _check_text(note: Note) -> None:
    """Refuse what would not read back as written (a writer never produces a note it cannot read)."""
    for f in fields(note):  # annotations are strings here (``from __future__ import annotations``)
        v = getattr(note, f.name)
        if f.type == "str" and not isinstance(v, str):
            raise NoteFormatError(f"{f.name} must be text, not {type(v).__name__}")
        if f.type == "list[str]" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise NoteFormatError(f"{f.name} must be a list of text")


def render_note(note: Note) -> str:
    """The note as file text (``\\n`` line ends, or ``\\r\\n`` when it was read from a CRLF file)."""
    _check_text(note)
    fm = _HANDLER.export(properties(note), Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=10**6)
    out = f"---\n{fm}\n---\n{note.content.strip(chr(10))}\n"
    if note.history or note.history_preface:
        out += f"\n## {note.history_heading or HISTORY_HEADING}\n"
        if note.history_preface:
            out += f"\n{note.history_preface.strip(chr(10))}\n"
        for h in note.history:
            out += f"\n### {h.when}\n{h.text.strip(chr(10))}\n"
    return out.replace("\n", "\r\n") if note.crlf else out
