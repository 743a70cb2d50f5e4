"""Parse and edit ``memory/index.md`` (pure, ``str -> IndexDoc -> str``).

Every byte outside the table, and every row not targeted by an edit, is kept exactly: the document
keeps its raw lines (with their own line endings and an optional BOM) and an edit touches only the
line of the target row. Rows that cannot be parsed are kept and reported, never dropped.
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Iterable, Mapping

from agentmem_vault.errors import IndexFormatError, SessionNotFound, UsageError
from agentmem_vault.fastimport import LazyRegex
from agentmem_vault.model.ids import is_valid_session_id

COLUMNS: tuple[str, ...] = (
    "Session ID",
    "Agent Name",
    "Topic",
    "Summary",
    "Keywords",
    "Status",
    "Referenced By",
    "Started At",
    "Updated At",
)
STATUSES = ("idle", "active", "stale")
BOM = "\ufeff"

_CTRL_RE = LazyRegex(r"[\x00-\x08\x0a-\x1f]")
# Everything a cell may not hold as is: control characters (a row with one is reported as broken)
# and what str.splitlines() treats as a line end (NEL, U+2028, U+2029). They become spaces.
_CELL_BREAK_RE = LazyRegex("\r\n|[\x00-\x08\x0a-\x1f\x85\u2028\u2029]")
_SURROGATE_RE = LazyRegex("[\ud800-\udfff]")
_PIPE_RE = LazyRegex(r"(?<!\\)\|")  # a pipe that is not escaped
# A Markdown line ends at \n, \r\n or \r, not at the other separators str.splitlines() knows.
_LINE_RE = LazyRegex(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+\Z")
_HEAD = [c.casefold() for c in COLUMNS]
_SEP_RE = LazyRegex(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


TYPE_CHECKING = False  # neither typing nor dataclasses at run time: the hook path (docs/performance.md)
if TYPE_CHECKING:
    from typing import NamedTuple

    class _RowBase(NamedTuple):
        session_id: str
        agent_name: str
        topic: str
        summary: str
        keywords: str
        status: str
        referenced_by: str
        started_at: str
        updated_at: str
else:
    _RowBase = namedtuple("Row", [c.lower().replace(" ", "_") for c in COLUMNS])


class Row(_RowBase):
    """One index row (a named tuple: 10,000 of them are built on every full parse)."""

    __slots__ = ()

    def cells(self) -> list[str]:
        return list(self)

    def with_(self, **changes: str) -> "Row":
        return self._replace(**changes)

    @property
    def referencing_ids(self) -> list[str]:
        return split_id_list(self.referenced_by)

    def to_dict(self) -> dict[str, str]:
        return dict(zip(self._fields, self, strict=True))


FIELD_NAMES: tuple[str, ...] = Row._fields


class BadRow(namedtuple("BadRow", ("line_no", "raw", "reason"))):
    """A row that cannot be parsed (kept in the file, reported); ``line_no`` is 1-based."""

    __slots__ = ()

    def to_dict(self) -> dict:
        return self._asdict()


class IndexDoc:
    """A parsed memory/index.md (plain class: see the note on ``Row``)."""

    def __init__(self, bom: bool, lines: list[str], header_at: int | None, table_end: int, newline: str = "\n") -> None:
        self.bom = bom
        self.lines = lines  # raw lines, each with its own line ending (the last one may have none)
        self.header_at = header_at  # 0-based index of the header line, None when there is no table
        self.table_end = table_end  # index just after the last table line (== header_at when there is no table)
        self.bad: list[BadRow] = []
        self.newline = newline
        # (line index, Session ID) of every good row; Row objects are built on demand because the
        # sessionStart hook only needs the IDs of a 10,000-row board.
        self.row_ids: list[tuple[int, str]] = []
        self._rows: list[tuple[int, Row]] | None = None

    # -- reading -----------------------------------------------------------------------------
    @property
    def rows(self) -> list[tuple[int, Row]]:
        if self._rows is None:
            self._rows = [(i, self._row_at(i)) for i, _ in self.row_ids]
        return self._rows

    def _row_at(self, i: int) -> Row:
        return Row(*split_cells(strip_eol(self.lines[i])))

    def row_list(self) -> list[Row]:
        return [r for _, r in self.rows]

    def ids(self) -> list[str]:
        return [sid for _, sid in self.row_ids]

    def find(self, session_id: str) -> Row | None:
        return next((self._row_at(i) for i, sid in self.row_ids if sid == session_id), None)

    def get(self, session_id: str) -> Row:
        r = self.find(session_id)
        if r is None:
            raise SessionNotFound(f"no row for Session ID {session_id} in memory/index.md")
        return r

    def duplicate_ids(self) -> list[str]:
        seen: set[str] = set()
        dup: list[str] = []
        for sid in self.ids():
            if sid in seen and sid not in dup:
                dup.append(sid)
            seen.add(sid)
        return dup

    def render(self) -> str:
        return (BOM if self.bom else "") + "".join(self.lines)

    def check_writable(self) -> None:
        """Refuse edits on a table this program cannot read fully: a person must look first."""
        if self.bad:
            first = self.bad[0]
            more = f" (and {len(self.bad) - 1} more)" if len(self.bad) > 1 else ""
            raise IndexFormatError(
                f"memory/index.md line {first.line_no}: {first.reason}{more}. Nothing was written; "
                "repair the row by hand or run `agentmem doctor`",
                details={"bad_rows": [b.to_dict() for b in self.bad]},
            )


def escape_cell(value: str) -> str:
    """Cell text for a table row: ``|`` escaped, line breaks and control characters as spaces.
    Raises UsageError for text that cannot be written as UTF-8 (undecodable bytes in an argument)."""
    v = str(value)
    if v.isprintable():  # the common case: no surrogates, breaks or control characters to look for
        return v.replace("|", "\\|").strip()
    if _SURROGATE_RE.search(v):
        shown = v.encode("utf-8", "backslashreplace").decode("utf-8")
        raise UsageError(f"{shown!r} is not UTF-8 text (undecodable bytes in an argument?); nothing was written")
    return _CELL_BREAK_RE.sub(" ", v).replace("|", "\\|").strip()


def split_lines(text: str) -> list[str]:
    """Lines with their endings, breaking only at ``\\n``, ``\\r\\n`` and ``\\r``."""
    lines = text.splitlines(keepends=True)
    # Fast path: splitlines() agrees unless the text holds NEL, U+2028, VT, FF… (rare).
    if len(lines) == text.count("\n") + (0 if not text or text.endswith("\n") else 1):
        return lines
    return _LINE_RE.findall(text)


def split_cells(line: str) -> list[str]:
    """Split a table line on unescaped pipes; ``\\|`` becomes ``|`` in the cell."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    escaped = "\\|" in s
    parts = _PIPE_RE.split(s) if escaped else s.split("|")  # the usual row has no escaped pipe
    if len(parts) > 1 and not parts[-1].strip():
        parts.pop()  # what follows the row's closing pipe
    return [p.replace("\\|", "|").strip() for p in parts] if escaped else [p.strip() for p in parts]


def render_row(row: Row) -> str:
    return "| " + " | ".join(escape_cell(c) for c in row.cells()) + " |"


def header_lines(newline: str = "\n") -> str:
    return "| " + " | ".join(COLUMNS) + " |" + newline + "|" + "---|" * len(COLUMNS) + newline


def split_id_list(value: str) -> list[str]:
    """``-`` / empty -> []; ``a, b`` -> [a, b] (order kept, duplicates dropped)."""
    parts = (part.strip().strip("[]") for part in re.split(r"[,，、;\s]+", (value or "").strip()))
    return list(dict.fromkeys(p for p in parts if p and p not in ("-", "None", "none")))


def join_id_list(ids: list[str]) -> str:
    return ", ".join(ids) if ids else "-"


def strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


_FENCE_RE = LazyRegex(r"^ {0,3}(`{3,}|~{3,})")


def fenced_lines(lines: list[str]) -> set[int]:
    """Indices of lines inside fenced code blocks (fence lines included): an example table in a
    code fence is text, never the board (docs/reliability.md). An unclosed fence runs to the end."""
    out: set[int] = set()
    open_: str | None = None
    for i, ln in enumerate(lines):
        m = _FENCE_RE.match(ln)
        if open_ is None:
            if m:
                open_ = m.group(1)
                out.add(i)
        else:
            out.add(i)
            if (
                m
                and m.group(1)[0] == open_[0]
                and len(m.group(1)) >= len(open_)
                and not ln.strip()[len(m.group(1)) :].strip()
            ):
                open_ = None
    return out


def parse_index(text: str) -> IndexDoc:
    """Parse the whole file. Raises IndexFormatError only when the text is not a text file or its
    table header is not the index header; broken rows are kept in ``bad``."""
    if "\x00" in text:
        raise IndexFormatError("memory/index.md contains binary data (NUL bytes); refusing to touch it")
    bom = text.startswith(BOM)
    text = text[1:] if bom else text
    lines = split_lines(text)
    crlf = sum(1 for ln in lines if ln.endswith("\r\n"))
    newline = "\r\n" if crlf and crlf * 2 >= sum(1 for ln in lines if ln.endswith("\n")) else "\n"

    fenced = fenced_lines(lines) if ("```" in text or "~~~" in text) else set()
    header_at = None
    for i, ln in enumerate(lines):
        s = strip_eol(ln).strip()
        if "|" not in s or i in fenced or i + 1 >= len(lines):
            continue
        sep = strip_eol(lines[i + 1])
        if not (_SEP_RE.match(sep) and "|" in sep):
            continue
        # GFM lets a table leave out the outer pipes; such a header counts when it is ours.
        if s.startswith("|") or [c.casefold() for c in split_cells(s)] == _HEAD:
            header_at = i
            break
    if header_at is None:
        stray = [i for i, ln in enumerate(lines) if i not in fenced and is_row_line(ln)]
        if stray:
            raise IndexFormatError(
                f"memory/index.md line {stray[0] + 1}: table rows without the header line "
                f"'| {' | '.join(COLUMNS)} |' and its separator; refusing to guess"
            )
        return IndexDoc(bom, lines, None, len(lines), newline=newline)

    head = [c.casefold() for c in split_cells(strip_eol(lines[header_at]))]
    if head != _HEAD:
        raise IndexFormatError(
            f"memory/index.md line {header_at + 1}: unexpected table header {split_cells(strip_eol(lines[header_at]))}; "
            f"expected the columns {list(COLUMNS)}"
        )
    doc = IndexDoc(bom, lines, header_at, header_at + 2, newline=newline)
    i = header_at + 2
    check_ctrl = bool(_CTRL_RE.search(text.replace("\r\n", "").replace("\n", "")))
    while i < len(lines) and is_row_line(lines[i]):
        _parse_row_line(doc, i, check_ctrl)
        i += 1
    doc.table_end = i
    # Table-like lines after a break in the table: stray text split the table. Keep and report.
    for j in range(i, len(lines)):
        if j not in fenced and is_row_line(lines[j]):
            doc.bad.append(
                BadRow(
                    j + 1,
                    strip_eol(lines[j]),
                    "table row after a break in the table (stray text or blank line inside the table)",
                )
            )
    return doc


def is_row_line(line: str) -> bool:
    """A line of the board's table: one that starts with ``|``, or -- GFM rows may leave out the
    outer pipes -- one whose first cell is a Session ID or that has the board's nine cells. Prose
    with a pipe in it is not a row; a row is never hidden because its pipes are missing."""
    s = line.lstrip()
    if s.startswith("|"):
        return True
    if "|" not in s:
        return False
    first = s.split("|", 1)[0].strip()
    return is_valid_session_id(first) or len(split_cells(strip_eol(s))) == len(COLUMNS)


def _parse_row_line(doc: IndexDoc, i: int, check_ctrl: bool = True) -> None:
    raw = strip_eol(doc.lines[i])
    # Fast path for the usual well-formed row: 10 pipes, none escaped, valid ID in the first cell.
    if (
        "\\" not in raw
        and raw.count("|") == 10
        and raw.rstrip().endswith("|")
        and not (check_ctrl and _CTRL_RE.search(raw))
    ):
        a = raw.index("|")
        sid = raw[a + 1 : raw.index("|", a + 1)].strip()
        if is_valid_session_id(sid):
            doc.row_ids.append((i, sid))
            return
    cells = split_cells(raw)
    if len(cells) != len(COLUMNS):
        doc.bad.append(BadRow(i + 1, raw, f"row has {len(cells)} cells, expected {len(COLUMNS)}"))
        return
    row = Row(*cells)
    if not is_valid_session_id(row.session_id):
        doc.bad.append(BadRow(i + 1, raw, f"invalid Session ID {row.session_id!r}"))
        return
    if check_ctrl and _CTRL_RE.search(raw):
        doc.bad.append(BadRow(i + 1, raw, "row contains control characters"))
        return
    doc.row_ids.append((i, row.session_id))


# -- pure edits: each returns the new full text ---------------------------------------------------


def line_of(doc: IndexDoc, session_id: str) -> int:
    """The line index of ``session_id``'s row; SessionNotFound, or IndexFormatError when the ID
    has several rows (doctor's to sort out)."""
    hits = [i for i, sid in doc.row_ids if sid == session_id]
    if not hits:
        raise SessionNotFound(f"no row for Session ID {session_id} in memory/index.md")
    if len(hits) > 1:
        raise IndexFormatError(
            f"Session ID {session_id} appears in {len(hits)} rows of memory/index.md; run `agentmem doctor`"
        )
    return hits[0]


def edit_table(doc: IndexDoc, changes: Mapping[int, Row | None], appends: Iterable[Row] = ()) -> str:
    """Replace (Row) or delete (None) the row lines at the given 0-based line numbers, and append
    rows at the end of the table (a board without a table gets one at its end), in one pass. Every
    other line stays byte-for-byte identical."""
    lines = list(doc.lines)
    for i, new in changes.items():  # a replaced row keeps its line's own ending, if any
        lines[i] = "" if new is None else render_row(new) + lines[i][len(strip_eol(lines[i])) :]
    extra = [render_row(r) for r in appends]
    nl = doc.newline
    if extra and doc.header_at is None:  # no table yet: the header and the rows after any text there
        lead = nl if lines and not lines[-1].endswith(("\n", "\r")) else ""
        sep = nl if "".join(lines).strip() else ""
        return doc.render() + lead + sep + header_lines(nl) + "".join(r + nl for r in extra)
    if extra:
        end = doc.table_end
        if end > 0 and lines[end - 1] and not lines[end - 1].endswith(("\n", "\r")):
            lines[end - 1] += nl
        elif end > 0 and not lines[end - 1]:
            # the last table line was deleted: find the previous kept line to terminate
            j = end - 1
            while j > 0 and not lines[j]:
                j -= 1
            if lines[j] and not lines[j].endswith(("\n", "\r")):
                lines[j] += nl
        lines[end:end] = [r + nl for r in extra]
    return (BOM if doc.bom else "") + "".join(lines)


def new_index_text() -> str:
    return "# Memory Index\n\n" + header_lines("\n")
