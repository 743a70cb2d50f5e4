"""A small derived summary of the board, so that the sessionStart hook never parses the whole of
``memory/index.md`` (see docs/performance.md).

``memory/.agentmem/board-cache.json`` records, for the board's first ``size`` bytes (their CRC-32):
where the table's rows start, whether every row is well formed (the board is writable), whether the
table runs to the end of the file (a new row is a pure append), the line-ending counts, the row
count, every ``active`` row's update time, Session ID and line offset, most recent first
(``rules.active_order``: what a new chat is offered is chosen from it), and the newest minute
among the row IDs with that minute's IDs (so a new chat's ID needs no search of the board); and,
for ``conversations.jsonl``'s first bytes (size and CRC-32), the project of every active row's
session that its pairs name (``conversations.pair_projects``).

The board and the pairs are always read and checked against the summary by CRC; when one has
only grown since (a row or a pair appended by any process), just the new bytes are parsed; any
other change means one full parse of that file, after which the summary is rewritten. Every whole-board write (``store.BoardWriter``)
refreshes it; an appended row (a new chat's) does not rewrite it: the next load parses the rows
appended since, and rewrites it once there are ``SAVE_EVERY`` of them.

Deleting the file loses nothing. It is never the authority: on any doubt the caller parses the
board as before. It is replaced by temp file + rename, never written in place or through a link.
"""

from __future__ import annotations

import zlib
from collections import namedtuple

from agentmem_vault.board import table as it
from agentmem_vault.board.rules import active_order, insert_active, pair_project, pair_projects

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)
if TYPE_CHECKING:
    from pathlib import Path

    from agentmem_vault.vault import Vault

VERSION = 6  # of the file's layout (fs.load_cache): a summary of any other version is ignored and rewritten
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
    file), the line-ending counts, the row count, ``active`` (``rules.active_order``, with each
    row line's byte offset), ``bom``, ``crc`` (``zlib.crc32`` of ``data``), and the newest minute
    among the row IDs (``stamp``) with that minute's IDs; ``pairs``: ``[size, crc]`` of the
    ``conversations.jsonl`` bytes that ``projects`` (active Session ID -> project) was read from."""

    __slots__ = ()

    @property
    def size(self) -> int:
        return len(self.data)

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
        cells = it.split_cells(data[span[0] : span[1]].decode("utf-8").rstrip("\r"))
        if len(cells) != len(it.COLUMNS) or cells[0] != session_id:
            return self.row(session_id) if at >= 0 else None
        return it.Row(*cells)


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
    active = active_order((doc._row_at(i), at[i]) for i, _ in doc.row_ids if _maybe_active(doc.lines[i]))
    stamp, stamp_ids = "", list[str]()
    for _, sid in doc.row_ids:
        stamp, stamp_ids = _newest(stamp, stamp_ids, sid)
    named = pair_projects(pairs)
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
        {e[1]: named[e[1]] for e in active if e[1] in named},
    )


def _maybe_active(line: str) -> bool:
    """False only for a well-formed row line whose Status cell is not ``active`` (read without
    splitting all ten cells; anything unusual is parsed in full)."""
    if "\\" in line:
        return True
    parts = line.rstrip("\r\n").rstrip().rsplit("|", 5)
    return len(parts) != 6 or parts[1].strip() == "active"


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
    active, projects = cached["active"], cached["projects"]  # decoded for this call alone: extended in place
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
            insert_active(active, row, at[i])
            if project := pair_project(pairs, row.session_id):
                projects[row.session_id] = project
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
        projects,
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


def _with_pairs(state: BoardState, pairs: bytes) -> tuple[BoardState, bool]:
    """``state`` with the projects of its active sessions as ``pairs`` (the bytes of
    ``conversations.jsonl`` now) name them, and whether that took enough work to save it: pairs
    appended since are read alone (each line is read on its own and the last one naming a project
    wins), any other change means reading them all."""
    size, crc = state.pairs
    same = size <= len(pairs) and zlib.crc32(memoryview(pairs)[:size]) == crc
    if same and size == len(pairs):
        return state, False
    redone = not (same and (not size or pairs.endswith(b"\n", 0, size)))  # else whole new lines follow
    tail, projects = (pairs, {}) if redone else (pairs[size:], state.projects)
    if named := pair_projects(tail):
        active = {e[1] for e in state.active}
        projects.update((sid, p) for sid, p in named.items() if sid in active)
    new = state._replace(pairs=[len(pairs), zlib.crc32(tail, 0 if redone else crc)], projects=projects)
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
            size = cached["size"]
            crc = zlib.crc32(memoryview(data)[:size])
            if len(data) >= size and crc == cached["crc"]:
                if len(data) == size:
                    state: BoardState | None = BoardState(data, *(cached[k] for k in _KEYS))
                else:
                    state = _extend(cached, data, crc, pairs)
                if state is not None:
                    state, redone = _with_pairs(state, pairs)
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
