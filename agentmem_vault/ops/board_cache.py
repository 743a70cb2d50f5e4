"""A small derived summary of the board, so that the sessionStart hook never parses, nor even
reads, the whole of ``memory/index.md`` (see docs/performance.md).

``memory/.agentmem/board-cache.json`` records, for the board's first ``size`` bytes (CRC-32): where
the table's rows start, whether every row is well formed (the board is writable), whether the
table runs to the end of the file (a new row is a pure append), the line-ending counts, the row
count, the most recently updated ``active`` rows (the session-start context), the newest minute
among the row IDs with the IDs of that minute, and the board's ``(size, mtime_ns, inode)`` when
the summary was written.

When that stat still matches (and the file system keeps sub-millisecond times), the summary is
trusted without reading the board: a new chat's ID is checked against the newest minute (an ID of
a later minute cannot have a row yet), the row is appended, and the appended bytes are read back.
Otherwise the board is read and checked by CRC; when it has only grown since (a row appended by
any process), just the new bytes are parsed; any other change means one full parse, after which
the summary is rewritten. Every writer of the board (``VaultWriter``, the hook's append) refreshes
it after its verified write.

Deleting the file loses nothing. It is never the authority: on any doubt the caller parses the
board as before. Pure stdlib (zlib, json), no dataclasses: this module is on the hook path.
"""

from __future__ import annotations

import json
import os

from agentmem_vault.fastimport import datetime  # the C type without datetime.py (docs/performance.md)
from agentmem_vault.model import index_table as it

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)
if TYPE_CHECKING:
    from pathlib import Path

    from agentmem_vault.config import Vault

VERSION = 2
CACHE_NAME = "board-cache.json"
SAVE_EVERY = 64  # rows appended by others since the summary was written before it is rewritten
STAMP = 15  # "YYYY-MM-DD-HHMM": the minute every Session ID starts with (docs/board.md)
KEEP_ACTIVE = 12  # the hook lists 5; more kept so that excluding the chat's own row still leaves 5


def cache_path(vault: Vault) -> Path:
    return vault.state_dir / CACHE_NAME


def ts_key(value: str) -> str:
    """A string that sorts like the timestamp (``YYYY-MM-DD HH:MM:SS``; "" when unreadable).

    The board's own format ``YYYY-MM-DD HH:MM`` is recognised without ``strptime`` (which costs
    ~1 ms per 100 rows, and its import more); other forms go through ``config.parse_ts``."""
    v = (value or "").strip()
    if len(v) == 16 and v[4] == "-" and v[7] == "-" and v[10] == " " and v[13] == ":":
        y, mo, d, h, mi = v[:4], v[5:7], v[8:10], v[11:13], v[14:16]
        if y.isdigit() and mo.isdigit() and d.isdigit() and h.isdigit() and mi.isdigit():
            try:
                datetime(int(y), int(mo), int(d), int(h), int(mi))  # a real date, as strptime demands
            except ValueError:
                return ""
            return v + ":00"
    from agentmem_vault.clock import parse_ts

    dt = parse_ts(v)
    return dt.strftime("%Y-%m-%d %H:%M:%S") if dt else ""


def _active_entry(row: it.Row, ordinal: int) -> list:
    return [ts_key(row.updated_at), ordinal, *row]


def _top(entries: list[list]) -> list[list]:
    """Newest first; equal times keep board order (as a stable sort by time would)."""
    entries.sort(key=lambda e: e[1])
    entries.sort(key=lambda e: e[0], reverse=True)
    return entries[:KEEP_ACTIVE]


def _fast_status(line: str) -> str | None:
    """The Status cell of a well-formed row line without splitting all ten cells (None: use split_cells)."""
    if "\\" in line:
        return None
    parts = line.rstrip("\r\n").rstrip().rsplit("|", 5)
    return parts[1].strip() if len(parts) == 6 else None


def _crc32(data: bytes, value: int = 0) -> int:
    """``zlib.crc32``, imported on first use: a known chat whose summary the stat vouches for never
    needs it (docs/performance.md)."""
    import zlib

    return zlib.crc32(data, value)


def board_stat(path: Path | str) -> list[int] | None:
    """``[size, mtime_ns, inode]`` of the board, or None when it cannot vouch for the content: a
    missing file, or a modification time with millisecond or coarser steps (FAT, exFAT, some
    network and cloud drives), where a rewrite of the same size moments later could keep it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_mtime_ns % 1_000_000 == 0:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


class BoardState:
    """What the hook needs to know about the board, without the parsed rows (and, when the stat
    vouches for the summary, without its bytes: ``data`` is then read only if asked for)."""

    __slots__ = (
        "_data",
        "active",
        "appendable",
        "bom",
        "crc",
        "crlf",
        "ends_nl",
        "lf",
        "path",
        "rows",
        "size",
        "stamp",
        "stamp_ids",
        "stat",
        "table_start",
        "writable",
    )

    def __init__(
        self,
        data: bytes | None,
        table_start: int,
        writable: bool,
        appendable: bool,
        crlf: int,
        lf: int,
        rows: int,
        active: list[list],
        bom: bool,
        crc: int | None = None,
        *,
        size: int | None = None,
        ends_nl: bool | None = None,
        stamp: str = "",
        stamp_ids: list[str] | None = None,
        stat: list[int] | None = None,
        path: Path | None = None,
    ) -> None:
        self._data = data
        self.size = len(data) if data is not None else (size or 0)
        self.ends_nl = data.endswith((b"\n", b"\r")) if data is not None else bool(ends_nl)
        self.crc = crc  # zlib.crc32 of the board's bytes, when known (carried over appends)
        self.table_start = table_start  # byte offset of the first row line
        self.writable = writable  # no broken rows anywhere (doc.bad is empty)
        self.appendable = appendable  # the table runs to the end of the file
        self.crlf, self.lf = crlf, lf
        self.rows = rows
        self.active = active
        self.bom = bom
        self.stamp = stamp  # the newest "YYYY-MM-DD-HHMM" among the row IDs ("" with no rows)
        self.stamp_ids = stamp_ids or []  # the row IDs of that minute
        self.stat = stat  # board_stat() of the board these facts describe, when known
        self.path = path  # where ``data`` is read from when it was not (yet)

    @property
    def data(self) -> bytes:
        """The board's bytes (read under the caller's lock when the summary was trusted by stat)."""
        if self._data is None:
            from agentmem_vault.errors import VerifyFailed
            from agentmem_vault.vaultio import read_bytes

            data = read_bytes(self.path) if self.path is not None else None
            if data is None or len(data) != self.size or (self.crc is not None and _crc32(data) != self.crc):
                if self.path is not None:
                    # The summary does not describe this board (written since, or rewritten at the
                    # same size within one tick of the clock that stamps mtime, which kept the
                    # stat): drop it, so that running again parses the board.
                    try:
                        os.unlink(self.path.parent / ".agentmem" / CACHE_NAME)
                    except OSError:
                        pass
                raise VerifyFailed(
                    "memory/index.md changed while it was being read (another program wrote it); "
                    "nothing was written, run the command again"
                )
            self._data = data
        return self._data

    @property
    def newline(self) -> str:
        # the rule of index_table.parse_index: CRLF when at least half of the line ends are CRLF
        return "\r\n" if self.crlf and self.crlf * 2 >= self.lf else "\n"

    def has_row(self, session_id: str) -> bool:
        """Whether a table row has this Session ID (only valid when ``writable``: then every line
        from ``table_start`` on is a well-formed row). Without the board's bytes at hand, an ID of
        a minute later than every row's cannot have a row, and one of the newest minute is looked
        up among that minute's IDs; any other ID reads the board."""
        if self._data is None and self.writable:
            minute = session_id[:STAMP]
            if minute > self.stamp:
                return False
            if minute == self.stamp:
                return session_id in self.stamp_ids
        needle = session_id.encode("utf-8")
        data = self._data
        if data is None and self.path is not None:
            # The bytes as they are now, searched without the CRC check of ``data``: the answer
            # is about the board on disk, whatever the summary's other facts.
            from agentmem_vault.vaultio import read_bytes

            data = read_bytes(self.path)
        if data is None:
            data = self.data
        pos = data.find(needle, self.table_start)
        while pos != -1:
            start = data.rfind(b"\n", 0, pos) + 1
            end = pos + len(needle)
            if data[start:pos].strip() == b"|" and data[end : end + 80].lstrip(b" \t").startswith(b"|"):
                return True
            pos = data.find(needle, end)
        return False

    def recent_active(self, exclude: tuple[str, ...] = (), limit: int = 5) -> list[it.Row]:
        return [it.Row(*e[2:]) for e in self.active if e[2] not in exclude][:limit]

    def to_json(self) -> bytes:
        if self.crc is None:
            self.crc = _crc32(self.data)
        return json.dumps(
            {
                "v": VERSION,
                "size": self.size,
                "crc": self.crc,
                "table_start": self.table_start,
                "writable": self.writable,
                "appendable": self.appendable,
                "crlf": self.crlf,
                "lf": self.lf,
                "rows": self.rows,
                "active": self.active,
                "bom": self.bom,
                "ends_nl": self.ends_nl,
                "stamp": self.stamp,
                "stamp_ids": self.stamp_ids,
                "stat": self.stat,
            },
            ensure_ascii=False,
        ).encode("utf-8")


def _newest(stamp: str, ids: list[str], sid: str) -> tuple[str, list[str]]:
    """The newest minute and its IDs once a row ``sid`` is counted too."""
    minute = sid[:STAMP]
    if minute > stamp:
        return minute, [sid]
    if minute == stamp and sid not in ids:
        return stamp, [*ids, sid]
    return stamp, ids


def from_doc(data: bytes, doc: it.IndexDoc) -> BoardState | None:
    """The state of a fully parsed board (None when it has no table yet)."""
    if doc.header_at is None:
        return None
    prefix = "".join(doc.lines[: doc.header_at + 2])
    table_start = len(prefix.encode("utf-8")) + (3 if doc.bom else 0)
    entries: list[list] = []
    stamp, stamp_ids = "", list[str]()
    for ordinal, (i, sid) in enumerate(doc.row_ids):
        stamp, stamp_ids = _newest(stamp, stamp_ids, sid)
        status = _fast_status(doc.lines[i])
        if status is None or status == "active":
            row = doc._row_at(i)
            if row.status == "active":
                entries.append(_active_entry(row, ordinal))
    crlf = sum(1 for ln in doc.lines if ln.endswith("\r\n"))
    lf = sum(1 for ln in doc.lines if ln.endswith("\n"))
    return BoardState(
        data,
        table_start,
        not doc.bad,
        doc.table_end == len(doc.lines),
        crlf,
        lf,
        len(doc.row_ids),
        _top(entries),
        doc.bom,
        stamp=stamp,
        stamp_ids=stamp_ids,
    )


def _extend(cached: dict, data: bytes) -> BoardState | None:
    """The cached state carried over the rows appended after ``cached["size"]`` (None: parse all)."""
    size = cached["size"]
    if not (cached["writable"] and cached["appendable"]) or len(data) < size:
        return None
    tail_bytes = data[size:]
    if b"\x00" in tail_bytes:
        return None
    try:
        tail = tail_bytes.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if size and not data[:size].endswith((b"\n", b"\r")):
        return None  # the last row had no line end: it changed too (rare: parse it all once)
    lines = it.split_lines(tail)
    probe = it.IndexDoc(False, lines, 0, 0)
    active = [list(e) for e in cached["active"]]
    rows = cached["rows"]
    crlf, lf = cached["crlf"], cached["lf"]
    stamp, stamp_ids = str(cached["stamp"]), list(cached["stamp_ids"])
    for i, ln in enumerate(lines):
        if not ln.lstrip().startswith("|"):
            return None
        before = len(probe.row_ids)
        it._parse_row_line(probe, i, True)
        if probe.bad or len(probe.row_ids) == before:
            return None
        row = probe._row_at(i)
        stamp, stamp_ids = _newest(stamp, stamp_ids, row.session_id)
        if row.status == "active":
            active.append(_active_entry(row, rows))
        rows += 1
        crlf += ln.endswith("\r\n")
        lf += ln.endswith("\n")
    return BoardState(
        data,
        cached["table_start"],
        True,
        True,
        crlf,
        lf,
        rows,
        _top(active),
        cached["bom"],
        stamp=stamp,
        stamp_ids=stamp_ids,
    )


def _from_cache(cached: dict, data: bytes | None, crc: int, path: Path) -> BoardState:
    return BoardState(
        data,
        cached["table_start"],
        cached["writable"],
        cached["appendable"],
        cached["crlf"],
        cached["lf"],
        cached["rows"],
        cached["active"],
        cached["bom"],
        crc,
        size=cached["size"],
        ends_nl=cached["ends_nl"],
        stamp=str(cached["stamp"]),
        stamp_ids=list(cached["stamp_ids"]),
        stat=cached["stat"],
        path=path,
    )


def _read_cache(vault: Vault) -> dict | None:
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.vaultio import read_bytes

    try:  # vaultio's read: a FIFO here is refused, never waited on (docs/reliability.md)
        cached = json.loads(read_bytes(cache_path(vault)) or b"null")
    except (OSError, ValueError, AgentmemError):
        return None
    return cached if isinstance(cached, dict) and cached.get("v") == VERSION else None


def load(vault: Vault, data: bytes | None = None) -> BoardState | None:
    """The board's state, from the cache when it still describes the board (by stat, without
    reading it, when ``data`` is not given) or a prefix of ``data`` (its current bytes). None when
    the board is missing, empty or has no table (callers then take the full path). Raises what
    ``parse_index`` raises for a board that cannot be read. Call under the vault lock."""
    cached = _read_cache(vault)
    stat = None
    from_disk = data is None
    if data is None:
        stat = board_stat(vault.index_path)
        if cached is not None and stat is not None and cached.get("stat") == stat:
            try:
                if cached["size"] and cached["size"] == stat[0]:
                    return _from_cache(cached, None, cached["crc"], vault.index_path)
            except (KeyError, TypeError, ValueError):
                pass
        from agentmem_vault.vaultio import read_bytes

        data = read_bytes(vault.index_path)
        if stat is not None and (data is None or len(data) != stat[0]):
            stat = None  # written between the stat and the read: vouch for nothing
    if not data:
        return None
    if cached is not None:
        try:
            size = cached["size"]
            prefix_crc = _crc32(data[:size] if len(data) != size else data)
            if len(data) >= size and prefix_crc == cached["crc"]:
                if len(data) == size:
                    state = _from_cache(cached, data, prefix_crc, vault.index_path)
                    # The recorded stat is of another file of the same bytes (a copy on a coarse
                    # drive, a cloud drive's download): this read's stat replaces it, None too
                    # (then nothing vouches and the append compares the bytes).
                    if state.stat != stat:
                        state.stat = stat
                        if from_disk:
                            save(vault, state)  # vouched for by stat from now on (or by nothing)
                    return state
                grown = _extend(cached, data)
                if grown is not None:
                    grown.crc = _crc32(data[size:], prefix_crc)
                    grown.stat, grown.path = stat, vault.index_path
                    if stat is not None or grown.rows - cached["rows"] >= SAVE_EVERY:
                        save(vault, grown)  # else the few appended rows are parsed again next time
                    return grown
        except (KeyError, TypeError, ValueError):
            pass
    from agentmem_vault.vaultio import decode_text

    doc = it.parse_index(decode_text(data, vault.index_path))
    parsed = from_doc(data, doc)
    if parsed is not None:
        parsed.stat, parsed.path = stat, vault.index_path
        save(vault, parsed)
    return parsed


def save(vault: Vault, state: BoardState) -> None:
    """Best effort: a cache that cannot be written (read-only vault) is simply not kept."""
    from agentmem_vault.vaultio import write_cache_file

    try:
        write_cache_file(cache_path(vault), state.to_json(), in_place=True)  # a torn one does not parse
    except Exception:
        pass


def refresh(vault: Vault, text: str, doc: it.IndexDoc | None = None) -> None:
    """After a verified write of the board: record the new state (``doc``: its parse, if at hand)."""
    try:
        # read_text keeps a BOM as U+FEFF, which encodes back to the same three bytes
        data = text.encode("utf-8")
        state = from_doc(data, doc if doc is not None else it.parse_index(text))
    except Exception:
        return
    if state is None:
        try:
            os.unlink(cache_path(vault))
        except OSError:
            pass
        return
    stat = board_stat(vault.index_path)
    state.stat = stat if stat is not None and stat[0] == len(data) else None
    save(vault, state)


def after_append(vault: Vault, state: BoardState, tail: bytes, row: it.Row, stat: list[int] | None) -> BoardState:
    """The state once ``tail`` (the line of ``row``, verified) was appended to the board described
    by ``state``; saved, so that the next hook trusts it by ``stat`` (the board's stat after the
    append) without reading the board."""
    active = [list(e) for e in state.active]
    if row.status == "active":
        active.append(_active_entry(row, state.rows))
    nl = state.newline
    stamp, stamp_ids = _newest(state.stamp, state.stamp_ids, row.session_id)
    new = BoardState(
        None if state._data is None else state._data + tail,
        state.table_start,
        state.writable,
        state.appendable,
        state.crlf + (nl == "\r\n") + (0 if state.ends_nl else nl == "\r\n"),
        state.lf + 1 + (0 if state.ends_nl else 1),
        state.rows + 1,
        _top(active),
        state.bom,
        None if state.crc is None else _crc32(tail, state.crc),
        size=state.size + len(tail),
        ends_nl=True,
        stamp=stamp,
        stamp_ids=stamp_ids,
        stat=stat if stat is not None and stat[0] == state.size + len(tail) else None,
        path=state.path,
    )
    if new.crc is not None:  # never read the board just to write its summary
        save(vault, new)
    return new


__all__ = ["BoardState", "after_append", "board_stat", "cache_path", "load", "refresh", "ts_key"]
