"""Session snapshots ``memory/sessions/<id>.md``: parse and render (pure, ``str -> Snapshot -> str``).

The template (docs/snapshots.md) is a ``# Session: <id>`` title, a ``## Metadata`` Field/Value table and
seven sections in a fixed order. Agents write these files by hand, so the parser is lenient: BOM,
CRLF, ``*``/``+``/numbered bullets, headings in any case or spacing, ``None``/``none``/``無`` for an
empty section, metadata as ``- Key: value`` lines. Whatever it does not understand is kept, never
dropped: YAML frontmatter (raw text), prose between the title and the first section, unknown
sections (heading + raw body, anchored after the known section they followed) and stray Metadata
lines. ``render_snapshot`` always writes the canonical template, so ``parse(render(s)) == s``.

The merge engine lives in ``snapshot_merge.py``.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from dataclasses import dataclass, field

from agentmem_vault.errors import SnapshotFormatError
from agentmem_vault.model import template_text, yamlload
from agentmem_vault.model.ids import SESSION_ID_IN_TEXT_RE, find_ids, is_valid_session_id
from agentmem_vault.board.table import escape_cell, split_cells
from agentmem_vault.model.textnorm import fold

METADATA = "Metadata"
CURRENT_CONTEXT = "Current Context"
DECISIONS = "Decisions"
FILES = "Files / Artifacts"
OPEN_QUESTIONS = "Open Questions"
NEXT_ACTIONS = "Next Actions"
CONTINUES_FROM = "Continues From"
RESOLVED = "Superseded / Resolved"
SECTIONS: tuple[str, ...] = (CURRENT_CONTEXT, DECISIONS, FILES, OPEN_QUESTIONS, NEXT_ACTIONS, CONTINUES_FROM, RESOLVED)
METADATA_FIELDS: tuple[str, ...] = ("Session ID", "Agent Name", "Topic", "Status", "Started At", "Updated At")


@lru_cache(maxsize=1)
def _heading_aliases() -> dict[str, str]:
    """Heading spellings agents actually use (``templates/snapshot_headings.txt``), keyed by the
    heading folded down to letters/digits/CJK."""
    out: dict[str, str] = {}
    for line in template_text("snapshot_headings.txt").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, spellings = line.partition(":")
            out.update(dict.fromkeys(spellings.split(), name.strip()))
    return out


_FIELD_ALIASES: dict[str, str] = {re.sub(r"[^0-9a-z]", "", f.lower()): f for f in METADATA_FIELDS}

_NONE_WORDS = frozenset({"none", "无", "n/a", "nil", "null"})

_TITLE_RE = re.compile(r"^#[ \t]+session(?:[ \t]*[:：][ \t]*(.*?)|[ \t]+(\S+))?[ \t]*$", re.IGNORECASE)
_HEADING_RE = re.compile(r"^##(?!#)[ \t]*(.*?)[ \t]*#*[ \t]*$")
_BULLET_RE = re.compile(r"^([ \t]*)([-*+]|\d{1,3}[.)])(?:[ \t]+(.*)|[ \t]*)$")
_SEPARATOR_RE = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$")
_KEY_VALUE_RE = re.compile(r"^(?:[-*+][ \t]+)?\**([^:：|*]{1,40}?)\**[ \t]*[:：][ \t]*(.*)$")
_LINK_RE = re.compile(r"\[\[([^\[\]|#]+)(?:[#|][^\[\]]*)?\]\]")


@dataclass
class ExtraSection:
    """A section the template does not know; kept verbatim after the known section it followed."""

    heading: str
    body: str
    after: str = ""  # "" = before Metadata, else "Metadata" or one of SECTIONS


@dataclass
class Snapshot:
    """A parsed snapshot. ``sections`` maps every name in SECTIONS to its items: list items without
    the bullet (continuation lines joined with ``\\n``), or paragraphs for Current Context."""

    title: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    sections: dict[str, list[str]] = field(default_factory=lambda: {name: [] for name in SECTIONS})
    frontmatter: str | None = None  # raw text between the ``---`` lines
    preamble: str = ""  # prose between the title and the first section
    metadata_notes: list[str] = field(default_factory=list)  # Metadata lines that are not fields
    extras: list[ExtraSection] = field(default_factory=list)
    # How the source text was encoded; not part of the content (so excluded from ==).
    crlf: bool = field(default=False, compare=False)
    bom: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        for name in SECTIONS:
            self.sections.setdefault(name, [])

    def items(self, section: str) -> list[str]:
        """Items of a section (``[]`` when it says ``None``); paragraphs for Current Context."""
        name = section_name(section)
        if name is None:
            raise KeyError(f"unknown snapshot section {section!r}; known: {', '.join(SECTIONS)}")
        return list(self.sections[name])

    @property
    def session_id(self) -> str:
        return clean_id(self.metadata.get("Session ID", "")) or clean_id(self.title)

    @property
    def topic(self) -> str:
        return self.metadata.get("Topic", "").strip()

    @property
    def continues_from(self) -> list[str]:
        """Session IDs in Continues From, plain or as ``[[id]]`` links, in order, without duplicates."""
        return list(dict.fromkeys(sid for item in self.sections[CONTINUES_FROM] for sid in continues_ids(item)))

    def copy(self) -> "Snapshot":
        return copy.deepcopy(self)


_ANCHORS = ("", METADATA, *SECTIONS)


def in_render_order(extras: list[ExtraSection]) -> list[ExtraSection]:
    """Extras in the order ``render_snapshot`` writes them (stable by anchor), so that a built
    snapshot equals its own re-parse."""
    return sorted(extras, key=lambda e: _ANCHORS.index(e.after) if e.after in _ANCHORS else len(_ANCHORS))


def clean_id(value: str) -> str:
    """``[[id]]`` / `` `id` `` / `` id `` -> ``id``."""
    v = (value or "").strip().strip("`").strip()
    m = _LINK_RE.fullmatch(v)
    return (m.group(1) if m else v).strip()


def continues_ids(item: str) -> list[str]:
    """Session IDs named by one Continues From item (links first, then plain IDs)."""
    ids = [clean_id(m.group(1)) for m in _LINK_RE.finditer(item)] + find_ids(_LINK_RE.sub(" ", item))
    if not ids:
        v = clean_id(item)
        if v and " " not in v:  # a non-standard ID is still an ID; prose is not
            ids.append(v)
    return [i for n, i in enumerate(ids) if i and i not in ids[:n]]


def linked_item(item: str) -> str:
    """A Continues From item with every bare Session ID written as an ``[[id]]`` link (Obsidian
    then draws the edge and resolves it before and after archive; docs/obsidian.md). IDs already
    inside a link, or inside backticks, are left as they are."""
    out: list[str] = []
    pos = 0
    protected = [m.span() for m in _LINK_RE.finditer(item)] + [m.span() for m in re.finditer(r"`[^`]*`", item)]
    for m in SESSION_ID_IN_TEXT_RE.finditer(item):
        a, b = m.span()
        if not is_valid_session_id(m.group(0)) or any(x <= a < y for x, y in protected):
            continue
        if (a and item[a - 1].isalnum()) or (b < len(item) and (item[b].isalnum() or item[b] == "-")):
            continue  # part of a longer word or path, not an ID on its own
        out += [item[pos:a], f"[[{m.group(0)}]]"]
        pos = b
    return "".join(out) + item[pos:]


def section_name(heading: str) -> str | None:
    """Canonical name (``Metadata`` or one of SECTIONS) for a heading as written, else None."""
    if heading in SECTIONS or heading == METADATA:
        return heading
    key = re.sub(r"[^0-9a-z\u3400-\u9fff]", "", fold(heading))
    return _heading_aliases().get(key)


def _is_filler(text: str) -> bool:
    """``None``/``無`` for an empty section, or a template instruction copied verbatim."""
    return re.sub(r"[`*_()（）\[\]。.\s]", "", fold(text)) in _NONE_WORDS or fold(text).rstrip(".") in _template_hints()


@lru_cache(maxsize=1)
def _template_hints() -> frozenset[str]:
    """The template's instructions (templates/snapshot_hints.txt), folded."""
    lines = template_text("snapshot_hints.txt").splitlines()
    return frozenset(fold(t).rstrip(".") for t in lines if t.strip() and not t.startswith("#"))


# -- parsing ----------------------------------------------------------------------------------


def parse_snapshot(text: str) -> Snapshot:
    """Parse snapshot text. Raises SnapshotFormatError when the text is empty, binary, or has
    neither a ``# Session:`` title nor any known section."""
    if not isinstance(text, str):
        raise SnapshotFormatError(f"snapshot must be text, got {type(text).__name__}")
    bom = text.startswith("\ufeff")
    text = text[1:] if bom else text
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise SnapshotFormatError(
            "the snapshot is empty: expected '# Session: <id>' and sections such as '## Decisions'"
        )
    if "\x00" in text:
        raise SnapshotFormatError("the snapshot contains NUL bytes (binary data?); refusing to use it")
    # an unclosed fence: no frontmatter, the tables are still read (doctor and writers report it)
    parts = yamlload.split_frontmatter(text, lenient=True)
    snap = Snapshot(crlf=crlf, bom=bom, frontmatter=parts.frontmatter)

    has_title = False
    pre: list[str] = []
    segments: list[tuple[str | None, str, list[str]]] = []  # (canonical name, heading, body)
    for line in parts.body.split("\n"):
        if not segments and not has_title:
            m = _TITLE_RE.match(line)
            if m:
                has_title = True
                snap.title = (m.group(1) or m.group(2) or "").strip()
                continue
        h = _HEADING_RE.match(line)
        if h and h.group(1):
            segments.append((section_name(h.group(1)), h.group(1), []))
            continue
        (segments[-1][2] if segments else pre).append(line)

    if not has_title and not any(name for name, _, _ in segments):
        raise SnapshotFormatError(
            "not a session snapshot: expected a '# Session: <id>' title or template sections "
            f"({', '.join('## ' + s for s in (METADATA,) + SECTIONS)})"
        )

    snap.preamble = _trim_block(pre)
    anchor = ""
    for name, heading, body in segments:
        if name is None:
            snap.extras.append(ExtraSection(heading=heading, body=_trim_block(body), after=anchor))
            continue
        anchor = name
        if name == METADATA:
            _parse_metadata(body, snap)
        elif name == CURRENT_CONTEXT:
            snap.sections[name].extend(_parse_paragraphs(body))
        else:
            snap.sections[name].extend(_parse_list(body))
    # Sections may come in any order; render writes extras in template order, so list them so.
    snap.extras = in_render_order(snap.extras)
    return snap


def _trim_block(lines: list[str]) -> str:
    return "\n".join(ln.rstrip() for ln in lines).strip("\n")


def _parse_metadata(body: list[str], snap: Snapshot) -> None:
    for raw in body:
        s = raw.strip()
        if not s:
            continue
        key = value = None
        if s.startswith("|"):
            if _SEPARATOR_RE.match(s):
                continue
            cells = split_cells(s)
            if len(cells) >= 2 and cells[0]:
                key, value = cells[0], " | ".join(cells[1:])
                if fold(key) == "field" and fold(value) == "value":
                    continue  # the table header
        else:
            m = _KEY_VALUE_RE.match(s)
            if m and re.sub(r"[^0-9a-z]", "", m.group(1).lower()) in _FIELD_ALIASES:
                key, value = m.group(1), m.group(2)
        if key is not None:
            key = _FIELD_ALIASES.get(re.sub(r"[^0-9a-z]", "", key.lower()), key.strip())
        if key is None or key in snap.metadata:  # not a field, or a second row for one: kept, not guessed
            snap.metadata_notes.append(raw.rstrip())
        else:
            snap.metadata[key] = (value or "").strip()


def _parse_list(body: list[str]) -> list[str]:
    items: list[list[str]] = []
    current: list[str] | None = None
    content_indent = 2
    for raw in body:
        line = raw.rstrip().expandtabs(4)
        if not line.strip():
            current = None  # a blank line ends an item's continuation
            continue
        ind = len(line) - len(line.lstrip(" "))
        b = _BULLET_RE.match(line)
        if b and ind < 2:
            current = [(b.group(3) or "").strip()]
            items.append(current)
            content_indent = len(line) - len(b.group(3) or "") if b.group(3) else ind + len(b.group(2)) + 1
        elif current is not None and ind >= 1:
            current.append(line[min(ind, content_indent) :])
        else:
            current = [line.strip()]  # prose inside a list section is an item too: never dropped
            items.append(current)
            content_indent = 2
    texts = ("\n".join(parts).strip() for parts in items)
    return [t for t in texts if t and not _is_filler(t)]


def _is_bullet_line(line: str) -> bool:
    b = _BULLET_RE.match(line.split("\n", 1)[0])
    return bool(b and b.group(3) and len(b.group(1).expandtabs(4)) < 2)


def _parse_paragraphs(body: list[str]) -> list[str]:
    """Blank-line separated paragraphs; a block of top-level bullets gives one unit per bullet
    (with its marker), so each fact can be merged on its own."""
    blocks: list[list[str]] = [[]]
    for raw in body:
        line = raw.rstrip()
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    units: list[str] = []
    for block in blocks:
        if block and _is_bullet_line(block[0]):  # each bullet, with its continuation lines
            starts = [i for i, line in enumerate(block) if _is_bullet_line(line)] + [len(block)]
            units += ["\n".join(block[a:b]) for a, b in zip(starts, starts[1:], strict=False)]
        elif block:
            units.append("\n".join(block))
    out = []
    for u in units:
        u = u.strip("\n")
        if u.strip() and not _is_filler(re.sub(r"^\s*[-*+]\s+", "", u)):
            out.append(u)
    return out


# -- rendering --------------------------------------------------------------------------------


def render_snapshot(s: Snapshot, *, newline: str = "\n", bom: bool = False) -> str:
    """The canonical template text (docs/snapshots.md): title, Metadata table, the seven sections in
    order, ``None`` for an empty section; extras after the section they followed."""
    out: list[str] = []
    if s.frontmatter is not None:
        out += ["---", *s.frontmatter.split("\n"), "---", ""]
    out += [f"# Session: {s.title}".rstrip(), ""]
    if s.preamble:
        out += [s.preamble, ""]
    placed: set[int] = set()

    def extras_after(anchor: str | None) -> None:  # None: every extra not placed yet
        for n, e in enumerate(s.extras):
            if n not in placed and (anchor is None or e.after == anchor):
                placed.add(n)
                out.extend([f"## {e.heading}", *([e.body] if e.body else []), ""])

    extras_after("")
    out += [f"## {METADATA}", "| Field | Value |", "|---|---|"]
    keys = [k for k in METADATA_FIELDS if k in s.metadata] + [k for k in s.metadata if k not in METADATA_FIELDS]
    out += [f"| {escape_cell(k)} | {escape_cell(s.metadata[k])} |" for k in keys]
    out.append("")
    if s.metadata_notes:
        out += [*s.metadata_notes, ""]
    extras_after(METADATA)
    for name in SECTIONS:
        out.append(f"## {name}")
        items = s.sections.get(name) or []
        if not items:
            out.append("None")
        elif name == CURRENT_CONTEXT:
            for n, unit in enumerate(items):
                if n and not (_is_bullet_line(unit) and _is_bullet_line(items[n - 1])):
                    out.append("")  # paragraphs are separated by a blank line; bullets stay a tight list
                out.append(unit)
        else:
            for item in items:
                first, *rest = item.split("\n")
                out.append(f"- {first}")
                out += [f"  {line}" for line in rest]
        out.append("")
        extras_after(name)
    extras_after(None)  # an anchor we do not know: the section is kept at the end
    text = "\n".join(out).rstrip("\n") + "\n"
    if newline != "\n":
        text = text.replace("\n", newline)
    return ("\ufeff" if bom else "") + text
