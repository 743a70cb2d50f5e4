"""A small derived summary of the board, so that the sessionStart hook never parses the whole of
``memory/index.md`` (see docs/performance.md).

``memory/.agentmem/board-cache.json`` records, for the board's first ``size`` bytes (their CRC-32):
where the table's rows start, whether every row is well formed (the board is writable), whether the
table runs to the end of the file (a new row is a pure append), the line-ending counts, the row
count, the newest minute among the row IDs with that minute's IDs (so a new chat's ID needs no
search of the board), and what a new chat is offered is chosen from (``rules.offered_sessions``):
every ``active`` row's Session ID, line offset and project, most recent first
(``rules.active_order``), the projects as their chats' pairs name them (``rules.pair_projects``)
in ``conversations.jsonl``'s first bytes (their size and CRC-32). The active rows are kept as
three columns, each stored as one comma-separated string: decoding thousands of JSON values was
most of the hook's work (~3 ms at 10,000 rows), one long plain string is a copy.

The board and the pairs are always read and checked against the summary by CRC; when one has
only grown since (a row or a pair appended by any process), just the new bytes are parsed; any
other change means one full parse of that file, after which the summary is rewritten. Every
whole-board write (``store.BoardWriter``) refreshes it; an appended row or pair (a new chat's)
does not rewrite it: the next load parses those appended since, and rewrites it once there are
``SAVE_EVERY`` of them.

Deleting the file loses nothing. It is never the authority: on any doubt the caller parses the
board as before. It is replaced by temp file + rename, never written in place or through a link.
"""

from __future__ import annotations

import zlib
from collections import namedtuple
from itertools import chain

from agentmem_vault.board import table as it
from agentmem_vault.board.rules import active_order, pair_project, pair_projects, ts_key

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from agentmem_vault.vault import Vault

VERSION = 9  # of the file's layout (fs.load_cache): a summary of any other version is ignored and rewritten
CACHE_NAME = "board-cache.json"
SAVE_EVERY = 64  # rows appended since the summary was written before it is rewritten
_KEYS = "table_start writable appendable crlf lf rows active bom crc stamp stamp_ids pairs projects".split()
STAMP = 15  # "YYYY-MM-DD-HHMM": the minute every Session ID starts with (docs/board.md)


def cache_path(vault: Vault) -> Path:
    return vault.state_dir / CACHE_NAME


class BoardState(
    namedtuple(  # noqa: PYI024
        "BoardState", "data table_start writable appendable crlf lf rows active bom crc stamp stamp_ids pairs projects"
    )
):
    """What the hook needs to know about the board, without the parsed rows: ``data`` (its bytes,
    read under the caller's lock), ``table_start`` (byte offset of the first row line),
    ``writable`` (no broken rows anywhere), ``appendable`` (the table runs to the end of the
    file), the line-ending counts, the row count, ``active`` (the active rows in
    ``rules.active_order``, as three comma-separated columns: Session IDs, line offsets, and the
    index of each one's project in ``projects``, "-" when its pairs name none), ``bom``, ``crc``
    (``zlib.crc32`` of ``data``), the newest minute among the row IDs (``stamp``) with that
    minute's IDs, and ``pairs``: ``[size, crc]`` of the ``conversations.jsonl`` bytes the projects
    were read from."""

    __slots__ = ()

    @property
    def size(self) -> int:
        return len(self.data)

    def entries(self) -> Iterator[tuple[str, int, str | None]]:
        """``(Session ID, line offset, project or None)`` of each active row, most recent first."""
        ids, ats, projects = self.active
        names = {str(i): name for i, name in enumerate(self.projects)}
        return zip(_items(ids), map(int, _items(ats)), map(names.get, _items(projects)), strict=True)

    @property
    def ends_nl(self) -> bool:
        return self.data.endswith((b"\n", b"\r"))

    @property
    def newline(self) -> str:
        # the rule of table.parse_index: CRLF when at least half of the line ends are CRLF
        return "\r\n" if self.crlf and self.crlf * 2 >= self.lf else "\n"

    def _line_of(self, session_id: str) -> tuple[int, int] | None:
        """Byte span of the table row whose first cell is ``session_id`` (valid when ``writable``:
        then every line from ``table_start`` on is a well-formed row)."""
        needle = session_id.encode("utf-8")
        data = self.data
        pos = data.find(needle, self.table_start)
        while pos != -1:
            start = data.rfind(b"\n", 0, pos) + 1
            end = pos + len(needle)
            # "| ID |" or, in a row without the outer pipes (GFM), "ID |" at the line's start
            if data[start:pos].strip() in (b"|", b"") and data[end : end + 80].lstrip(b" \t").startswith(b"|"):
                stop = data.find(b"\n", end)
                return start, len(data) if stop == -1 else stop
            pos = data.find(needle, end)
        return None

    def has_row(self, session_id: str) -> bool:
        """Whether a table row has this Session ID (the one row-existence check of the hook). On a
        writable board (every row counted) an ID of a later minute than every row's has none, and
        one of the newest minute is among that minute's IDs: a new chat's ID is answered without
        searching the board."""
        if self.writable:
            minute = session_id[:STAMP]
            if minute > self.stamp:
                return False
            if minute == self.stamp:
                return session_id in self.stamp_ids
        return self._line_of(session_id) is not None

    def row(self, session_id: str, at: int = -1) -> it.Row | None:
        """The row of ``session_id``, parsed from its line alone (at byte ``at`` when known)."""
        data = self.data
        if at >= 0:
            stop = data.find(b"\n", at)
            span: tuple[int, int] | None = (at, len(data) if stop == -1 else stop)
        else:
            span = self._line_of(session_id)
        if span is None:
            return None
        cells = _cells(data, *span)
        if len(cells) != len(it.COLUMNS) or cells[0] != session_id:
            return self.row(session_id) if at >= 0 else None
        return it.Row(*cells)


def _cells(data: bytes, start: int, stop: int = -1) -> list[str]:
    """The cells of the board line at byte ``start`` (to ``stop``, else to its end)."""
    if stop < 0:
        stop = data.find(b"\n", start)
    return it.split_cells(data[start : len(data) if stop == -1 else stop].decode("utf-8").rstrip("\r"))


def _items(column: str) -> Iterator[str]:
    """The items of a comma-separated column, split a chunk at a time: a walk of the active rows
    (``rules.offered_sessions``) usually stops within the first few dozen of thousands."""
    return chain.from_iterable(_chunks(column))


def _chunks(column: str) -> Iterator[list[str]]:
    n = 64
    while column:
        parts = column.split(",", n)
        column = parts.pop() if len(parts) > n else ""
        yield parts
        n *= 8


def _split(column: str) -> list[str]:
    return column.split(",") if column else []


def _newest(stamp: str, ids: list[str], sid: str) -> tuple[str, list[str]]:
    """The newest minute and its IDs once a row ``sid`` is counted too."""
    minute = sid[:STAMP]
    if minute > stamp:
        return minute, [sid]
    if minute == stamp and sid not in ids:
        return stamp, [*ids, sid]
    return stamp, ids


def _offsets(lines: list[str], start: int) -> list[int]:
    """The byte offset of each line, the first at ``start``."""
    out = []
    for ln in lines:
        out.append(start)
        start += len(ln) if ln.isascii() else len(ln.encode("utf-8"))
    return out


def from_doc(data: bytes, doc: it.IndexDoc, pairs: bytes) -> BoardState | None:
    """The state of a fully parsed board and the pairs file's bytes (None when it has no table yet)."""
    if doc.header_at is None:
        return None
    prefix = "".join(doc.lines[: doc.header_at + 2])
    table_start = len(prefix.encode("utf-8")) + (3 if doc.bom else 0)
    at = _offsets(doc.lines, 3 if doc.bom else 0)
    order = active_order((doc._row_at(i), at[i]) for i, _ in doc.row_ids if _maybe_active(doc.lines[i]))
    stamp, stamp_ids = "", list[str]()
    for _, sid in doc.row_ids:
        stamp, stamp_ids = _newest(stamp, stamp_ids, sid)
    named = pair_projects(pairs)
    names = sorted({named[e[1]] for e in order if e[1] in named})
    where = {name: str(i) for i, name in enumerate(names)}
    sids = [e[1] for e in order]
    active = [
        ",".join(sids),
        ",".join(str(e[2]) for e in order),
        ",".join(where.get(named.get(s, ""), "-") for s in sids),
    ]
    return BoardState(
        data,
        table_start,
        not doc.bad,
        doc.table_end == len(doc.lines),
        sum(1 for ln in doc.lines if ln.endswith("\r\n")),
        sum(1 for ln in doc.lines if ln.endswith("\n")),
        len(doc.row_ids),
        active,
        doc.bom,
        zlib.crc32(data),
        stamp,
        stamp_ids,
        [len(pairs), zlib.crc32(pairs)],
        names,
    )


def _maybe_active(line: str) -> bool:
    """False only for a well-formed row line whose Status cell is not ``active`` (read without
    splitting all ten cells; anything unusual is parsed in full)."""
    if "\\" in line:
        return True
    parts = line.rstrip("\r\n").rstrip().rsplit("|", 5)
    return len(parts) != 6 or parts[1].strip() == "active"


def _project_index(names: list[str], project: str) -> str:
    """The index of ``project`` in ``names`` (added when new), as the ``active`` column holds it."""
    if not project:
        return "-"
    if project not in names:
        names.append(project)
    return str(names.index(project))


def _insert(active: list[str], names: list[str], data: bytes, row: it.Row, at: int, project: str) -> None:
    """Add a row appended at the end of ``data`` (its line at byte ``at``) to the ``active``
    columns, where ``rules.active_order`` of the new board would put it."""
    key = ts_key(row.updated_at)
    columns = [_split(column) for column in active]
    i = 0  # from the front: an appended row is usually the most recent one
    while i < len(columns[0]) and ts_key(_cells(data, int(columns[1][i]))[-1]) >= key:
        i += 1
    for column, value in zip(columns, (row.session_id, str(at), _project_index(names, project)), strict=True):
        column.insert(i, value)
    active[:] = [",".join(column) for column in columns]


def _extend(cached: dict, data: bytes, crc: int, pairs: bytes) -> BoardState | None:
    """The cached state carried over the rows appended after ``cached["size"]`` (None: parse all)."""
    size = cached["size"]
    if not (cached["writable"] and cached["appendable"]):
        return None
    if size and not data.endswith((b"\n", b"\r"), 0, size):  # no copy of the board (a slice would be one)
        return None  # the last row had no line end: it changed too (rare: parse it all once)
    try:
        tail = data[size:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = it.split_lines(tail)
    probe = it.IndexDoc(False, lines, 0, 0)
    active, names = cached["active"], cached["projects"]  # decoded for this call alone: extended in place
    at = _offsets(lines, size)
    stamp, stamp_ids = str(cached["stamp"]), list(cached["stamp_ids"])
    for i, ln in enumerate(lines):
        before = len(probe.row_ids)
        if "\x00" in ln or not ln.lstrip().startswith("|"):
            return None
        it._parse_row_line(probe, i, True)
        if probe.bad or len(probe.row_ids) == before:
            return None
        row = probe._row_at(i)
        stamp, stamp_ids = _newest(stamp, stamp_ids, row.session_id)
        if row.status == "active":
            _insert(active, names, data, row, at[i], pair_project(pairs, row.session_id))
    return BoardState(
        data,
        cached["table_start"],
        True,
        True,
        cached["crlf"] + sum(1 for ln in lines if ln.endswith("\r\n")),
        cached["lf"] + sum(1 for ln in lines if ln.endswith("\n")),
        cached["rows"] + len(lines),
        active,
        cached["bom"],
        zlib.crc32(data[size:], crc),
        stamp,
        stamp_ids,
        cached["pairs"],
        names,
    )


def _read_pairs(vault: Vault) -> bytes:
    from agentmem_vault.fs import read_bytes

    return read_bytes(vault.state_dir / "conversations.jsonl") or b""


def _read_cache(vault: Vault) -> dict | None:
    """The summary's facts, with the ``size`` of the board prefix they describe (whose ``crc`` is
    among them); None when there is none of this version."""
    from agentmem_vault.fs import load_cache

    got = load_cache(cache_path(vault), VERSION)
    if got is None or not isinstance(got[0], int) or not isinstance(got[1], dict):
        return None
    return {**got[1], "size": got[0]}


def _with_pairs(state: BoardState, pairs: bytes, stamp: str) -> tuple[BoardState, bool]:
    """``state`` with the projects of its active sessions as ``pairs`` (the bytes of
    ``conversations.jsonl`` now) name them, and whether that took enough work to save it: pairs
    appended since are read alone (each line is read on its own and the last one naming a project
    wins), any other change means reading them all. ``stamp``: the newest minute among the rows
    whose projects the summary read from its pairs (a session of a later minute is no such row,
    or one appended since, whose project ``_extend`` read from all of ``pairs``)."""
    size, crc = state.pairs
    same = size <= len(pairs) and zlib.crc32(memoryview(pairs)[:size]) == crc
    if same and size == len(pairs):
        return state, False
    redone = not (same and (not size or pairs.endswith(b"\n", 0, size)))  # else whole new lines follow
    tail, names, active = (pairs if redone else pairs[size:]), state.projects, state.active
    named = pair_projects(tail)
    if not redone:
        named = {sid: project for sid, project in named.items() if sid[:STAMP] <= stamp}
    if redone or named:  # usually neither: a new chat's pair names its new row, of a later minute
        ids = _split(active[0])
        if redone:
            names[:] = []
        projects = ["-"] * len(ids) if redone else _split(active[2])
        for i, sid in enumerate(ids):
            if sid in named:
                projects[i] = _project_index(names, named[sid])
        active[2] = ",".join(projects)
    new = state._replace(pairs=[len(pairs), zlib.crc32(tail, 0 if redone else crc)])
    return new, redone or tail.count(b"\n") >= SAVE_EVERY


def load(vault: Vault, data: bytes | None = None, pairs: bytes | None = None) -> BoardState | None:
    """The board's state: its bytes (``data``, or read now) and the pairs' (``pairs``, or read
    now) checked against the summary by CRC. None when the board is missing, empty or has no table
    (callers then take the full path). Raises what ``parse_index`` raises for a board that cannot
    be read. Call under the vault lock."""
    from agentmem_vault.fs import decode_text, read_bytes

    if data is None:
        data = read_bytes(vault.index_path)
    if not data:
        return None
    if pairs is None:
        pairs = _read_pairs(vault)
    cached = _read_cache(vault)
    if cached is not None:
        try:
            size, active = cached["size"], cached["active"]
            indexes = {"-", *map(str, range(len(cached["projects"])))}
            if not (
                len(active) == 3
                and len({column.count(",") + bool(column) for column in active}) == 1  # as many of each
                and (not active[1] or active[1].replace(",", "").isdecimal())
                and set(_split(active[2])) <= indexes
            ):
                raise ValueError("not a summary of this layout")  # hand-edited: a full parse decides
            crc = zlib.crc32(memoryview(data)[:size])
            if len(data) >= size and crc == cached["crc"]:
                if len(data) == size:
                    state: BoardState | None = BoardState(data, *(cached[k] for k in _KEYS))
                else:
                    state = _extend(cached, data, crc, pairs)
                if state is not None:
                    state, redone = _with_pairs(state, pairs, cached["stamp"])
                    if redone or state.rows - cached["rows"] >= SAVE_EVERY:
                        save(vault, state)  # else the few appended rows and pairs are read again next time
                    return state
        except (KeyError, TypeError, ValueError):
            pass
    doc = it.parse_index(decode_text(data, vault.index_path))
    parsed = from_doc(data, doc, pairs)
    if parsed is not None:
        save(vault, parsed)
    return parsed


def save(vault: Vault, state: BoardState) -> None:
    """Best effort: a cache that cannot be written (read-only vault) is simply not kept."""
    from agentmem_vault.fs import save_cache

    save_cache(cache_path(vault), VERSION, state.size, {k: getattr(state, k) for k in _KEYS})


def refresh(vault: Vault, text: str, doc: it.IndexDoc | None = None) -> None:
    """After a verified write of the board: record the new state (``doc``: its parse, if at hand)."""
    try:
        # read_text keeps a BOM as U+FEFF, which encodes back to the same three bytes
        state = from_doc(text.encode("utf-8"), doc if doc is not None else it.parse_index(text), _read_pairs(vault))
    except Exception:
        return
    if state is None:
        import os

        try:
            os.unlink(cache_path(vault))  # a link is removed, never followed
        except OSError:
            pass
        return
    save(vault, state)


__all__ = ["BoardState", "cache_path", "load", "refresh"]
