"""A small derived summary of the board, ``memory/.agentmem/board-cache.json``, so that the
sessionStart hook never parses the whole of ``memory/index.md``: what it records, how the board
and ``conversations.jsonl`` are checked against it by CRC, and when it is rewritten is stated in
docs/performance.md ("The hook path does not grow with the board"). Deleting it loses nothing:
it is never the authority, and it is replaced by temp file + rename, never written in place or
through a link.
"""

from __future__ import annotations

import zlib
from collections import namedtuple
from itertools import chain

from agentmem_vault.board import table as it
from agentmem_vault.board.rules import active_order, pair_project, pair_projects, ts_key
from agentmem_vault.model.ids import ids_in_json_lines
from agentmem_vault.ops.conversations import PairScan

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from agentmem_vault.vault import Vault

VERSION = 10  # of the file's layout (fs.load_cache): a summary of any other version is ignored and rewritten
CACHE_NAME = "board-cache.json"
SAVE_EVERY = 16  # rows (or pairs) appended since the summary was written before it is rewritten
_KEYS = "table_start writable appendable crlf lf rows active bom crc stamp stamp_ids pairs projects pair_stamp".split()
STAMP = 15  # "YYYY-MM-DD-HHMM": the minute every Session ID starts with (docs/board.md)


def cache_path(vault: Vault) -> Path:
    return vault.state_dir / CACHE_NAME


class BoardState(
    namedtuple(  # noqa: PYI024
        "BoardState",
        "data table_start writable appendable crlf lf rows active bom crc stamp stamp_ids pairs projects pair_stamp",
    )
):
    """What the hook needs to know about the board (``data``: its bytes, read under the caller's
    lock), without the parsed rows: the facts of docs/performance.md's board summary. ``active``:
    three comma-separated columns (Session IDs, line offsets, the index of each one's project in
    ``projects``, "-" when its pairs name none); ``pairs``: ``[size, crc]`` of the pairs read;
    ``pair_stamp``: ``[the newest minute, its IDs]`` among the Session IDs those pairs name."""

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
        _pair_stamp(pairs),
    )


def _pair_stamp(data: bytes, stamp: tuple = ("", [])) -> list:
    """``stamp`` (``[minute, IDs]``) once the Session IDs named in ``data`` are counted too."""
    minute, ids = stamp
    for sid in sorted(ids_in_json_lines(data)):
        minute, ids = _newest(minute, ids, sid)
    return [minute, ids]


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


def _extend(cached: dict, data: bytes, crc: int, pairs: PairScan) -> BoardState | None:
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
            _insert(active, names, data, row, at[i], pair_project(pairs.whole(), row.session_id))
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
        cached["pair_stamp"],
    )


def _read_cache(vault: Vault) -> dict | None:
    """The summary's facts, with the ``size`` of the board prefix they describe (whose ``crc`` is
    among them); None when there is none of this version."""
    from agentmem_vault.fs import load_cache

    got = load_cache(cache_path(vault), VERSION)
    if got is None or not isinstance(got[0], int) or not isinstance(got[1], dict):
        return None
    return {**got[1], "size": got[0]}


def _with_pairs(state: BoardState, pairs: PairScan, stamp: str) -> tuple[BoardState, bool]:
    """``state`` with its active sessions' projects (and ``pair_stamp``) as ``pairs`` (read with
    ``state.pairs``'s size as the split) name them, and whether that took enough work to save it:
    pairs appended since are read alone (the last line naming a project wins), any other change
    means all of them. ``stamp``: the newest minute among the rows whose projects the summary read
    (a later one is a row appended since, whose project ``_extend`` read from all of ``pairs``)."""
    size, crc = state.pairs
    same = size == pairs.split and pairs.head == crc
    if same and size == pairs.size:
        return state, False
    redone = not (same and pairs.whole_lines)  # else whole new lines follow
    tail, names, active = (pairs.whole() if redone else pairs.tail), state.projects, state.active
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
    stamped = _pair_stamp(tail) if redone else _pair_stamp(tail, state.pair_stamp)
    new = state._replace(pairs=[len(tail), zlib.crc32(tail)] if redone else [pairs.size, pairs.crc], pair_stamp=stamped)
    return new, redone or tail.count(b"\n") >= SAVE_EVERY


def _prefix_ids(vault: Vault, scan: PairScan, cached: dict | None) -> set[str]:
    """The IDs of ``scan.want``'s minute among those the pairs before ``scan.split`` name: known
    from the summary's ``pair_stamp`` when those pairs are the ones it read (their CRC, whole
    lines), else searched in all of the file. (The issued-IDs ledger, not this, is what keeps an
    ID from being handed out twice: docs/reliability.md.)"""
    prefix = scan.want[1]
    if not prefix or not scan.split:
        return set()  # nothing asked, or the pass searched it all
    try:
        got = cached["pair_stamp"] if scan.head == cached["pairs"][1] and scan.whole_lines else None  # type: ignore[index]
        minute, ids = got if isinstance(got, list) and isinstance(got[1], list) else (None, None)
    except (KeyError, TypeError, ValueError, IndexError):
        minute = ids = None
    if isinstance(minute, str) and prefix[:STAMP] > minute:
        return set()  # a minute later than every ID they name
    if minute == prefix[:STAMP]:
        return {sid for sid in ids if isinstance(sid, str) and sid.startswith(prefix)}  # type: ignore[union-attr]
    return PairScan(vault, scan.whole(), prefix=prefix).read().ids


def load(vault: Vault, data: bytes | None = None, pairs: PairScan | bytes | None = None) -> BoardState | None:
    """The board's state: its bytes (``data``, or read now) and the pairs' (``pairs``: a
    ``PairScan`` not read yet, read here with the split the summary needs; or the bytes; or None)
    checked against the summary by CRC. None when the board is missing, empty or has no table (the
    caller takes the full path); what ``parse_index`` raises for an unreadable board. Under the lock."""
    from agentmem_vault.fs import decode_text, read_bytes

    if data is None:
        data = read_bytes(vault.index_path)
    scan = pairs if isinstance(pairs, PairScan) else PairScan(vault, pairs)
    cached = _read_cache(vault)
    got = cached.get("pairs") if cached is not None else None
    split = got[0] if isinstance(got, list) and got and type(got[0]) is int and got[0] > 0 else 0
    scan.read(split, tail_only=True)  # this minute's IDs in the pairs the summary read: _prefix_ids
    scan.ids |= _prefix_ids(vault, scan, cached)
    if not data:
        return None
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
                    state = _extend(cached, data, crc, scan)
                if state is not None:
                    state, redone = _with_pairs(state, scan, cached["stamp"])
                    if redone or state.rows - cached["rows"] >= SAVE_EVERY:
                        save(vault, state)  # else the few appended rows and pairs are read again next time
                    return state
        except (KeyError, TypeError, ValueError):
            pass
    doc = it.parse_index(decode_text(data, vault.index_path))
    parsed = from_doc(data, doc, scan.whole())
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
        pairs = PairScan(vault).whole()
        state = from_doc(text.encode("utf-8"), doc if doc is not None else it.parse_index(text), pairs)
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
