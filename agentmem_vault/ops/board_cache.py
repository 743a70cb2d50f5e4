"""A small derived summary of the board, so that the sessionStart hook never parses the whole of
``memory/index.md`` (see docs/performance.md).

``memory/.agentmem/board-cache.json`` records, for the board's first ``size`` bytes (checked by
CRC-32 before it is trusted): where the table's rows start, whether every row is well formed (the
board is writable), whether the table runs to the end of the file (a new row is a pure append),
the line-ending counts, the row count, and the most recently updated ``active`` rows (the
session-start context). When the board has only grown since (a row appended by any process), just
the new bytes are parsed; any other change means one full parse, after which the summary is
rewritten. Every writer of the board (``VaultWriter``) refreshes it after its verified write, so
the hook normally finds it current.

Deleting the file loses nothing. It is never the authority: on any doubt the caller parses the
board as before. Pure stdlib (zlib, json), no dataclasses: this module is on the hook path.
"""

from __future__ import annotations

import json
import os
import zlib

from agentmem_vault.fastimport import datetime  # the C type without datetime.py (docs/performance.md)
from agentmem_vault.model import index_table as it

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)
if TYPE_CHECKING:
    from pathlib import Path

    from agentmem_vault.config import Vault

VERSION = 1
CACHE_NAME = "board-cache.json"
SAVE_EVERY = 64  # rows appended since the summary was written before it is rewritten
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


class BoardState:
    """What the hook needs to know about the board, without the parsed rows."""

    __slots__ = ("active", "appendable", "bom", "crc", "crlf", "data", "lf", "rows", "table_start", "writable")

    def __init__(
        self,
        data: bytes,
        table_start: int,
        writable: bool,
        appendable: bool,
        crlf: int,
        lf: int,
        rows: int,
        active: list[list],
        bom: bool,
        crc: int | None = None,
    ) -> None:
        self.data = data
        self.crc = crc  # zlib.crc32 of data, when known (carried over appends: crc32(tail, crc))
        self.table_start = table_start  # byte offset of the first row line
        self.writable = writable  # no broken rows anywhere (doc.bad is empty)
        self.appendable = appendable  # the table runs to the end of the file
        self.crlf, self.lf = crlf, lf
        self.rows = rows
        self.active = active
        self.bom = bom

    @property
    def newline(self) -> str:
        # the rule of index_table.parse_index: CRLF when at least half of the line ends are CRLF
        return "\r\n" if self.crlf and self.crlf * 2 >= self.lf else "\n"

    def has_row(self, session_id: str) -> bool:
        """Whether a table row has this Session ID (only valid when ``writable``: then every line
        from ``table_start`` on is a well-formed row)."""
        needle = session_id.encode("utf-8")
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
            self.crc = zlib.crc32(self.data)
        return json.dumps(
            {
                "v": VERSION,
                "size": len(self.data),
                "crc": self.crc,
                "table_start": self.table_start,
                "writable": self.writable,
                "appendable": self.appendable,
                "crlf": self.crlf,
                "lf": self.lf,
                "rows": self.rows,
                "active": self.active,
                "bom": self.bom,
            },
            ensure_ascii=False,
        ).encode("utf-8")


def from_doc(data: bytes, doc: it.IndexDoc) -> BoardState | None:
    """The state of a fully parsed board (None when it has no table yet)."""
    if doc.header_at is None:
        return None
    prefix = "".join(doc.lines[: doc.header_at + 2])
    table_start = len(prefix.encode("utf-8")) + (3 if doc.bom else 0)
    entries: list[list] = []
    for ordinal, (i, _sid) in enumerate(doc.row_ids):
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
    for i, ln in enumerate(lines):
        if not ln.lstrip().startswith("|"):
            return None
        before = len(probe.row_ids)
        it._parse_row_line(probe, i, True)
        if probe.bad or len(probe.row_ids) == before:
            return None
        row = probe._row_at(i)
        if row.status == "active":
            active.append(_active_entry(row, rows))
        rows += 1
        crlf += ln.endswith("\r\n")
        lf += ln.endswith("\n")
    return BoardState(data, cached["table_start"], True, True, crlf, lf, rows, _top(active), cached["bom"])


def load(vault: Vault, data: bytes | None) -> BoardState | None:
    """The board's state for ``data`` (its current bytes), from the cache when it still describes a
    prefix of them. None when the board is missing, empty or has no table (callers then take the
    full path). Raises what ``parse_index`` raises for a board that cannot be read."""
    if not data:
        return None
    path = cache_path(vault)
    cached = None
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.vaultio import read_bytes

    try:  # vaultio's read: a FIFO here is refused, never waited on (docs/reliability.md)
        cached = json.loads(read_bytes(path) or b"null")
    except (OSError, ValueError, AgentmemError):
        cached = None
    if isinstance(cached, dict) and cached.get("v") == VERSION:
        try:
            size = cached["size"]
            prefix_crc = zlib.crc32(data[:size] if len(data) != size else data)
            if len(data) >= size and prefix_crc == cached["crc"]:
                if len(data) == size:
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
                        prefix_crc,
                    )
                state = _extend(cached, data)
                if state is not None:
                    state.crc = zlib.crc32(data[size:], prefix_crc)
                    if state.rows - cached["rows"] >= SAVE_EVERY:
                        save(
                            vault, state
                        )  # else the few appended rows are parsed again next time (cheaper than a write)
                    return state
        except (KeyError, TypeError, ValueError):
            pass
    from agentmem_vault.vaultio import decode_text

    doc = it.parse_index(decode_text(data, vault.index_path))
    state = from_doc(data, doc)
    if state is not None:
        save(vault, state)
    return state


def save(vault: Vault, state: BoardState) -> None:
    """Best effort: a cache that cannot be written (read-only vault) is simply not kept."""
    from agentmem_vault.vaultio import write_cache_file

    try:
        write_cache_file(cache_path(vault), state.to_json())
    except Exception:
        pass


def refresh(vault: Vault, text: str, doc: it.IndexDoc | None = None) -> None:
    """After a verified write of the board: record the new state (``doc``: its parse, if at hand)."""
    try:
        # read_text keeps a BOM as U+FEFF, which encodes back to the same three bytes
        state = from_doc(text.encode("utf-8"), doc if doc is not None else it.parse_index(text))
    except Exception:
        return
    if state is None:
        try:
            os.unlink(cache_path(vault))
        except OSError:
            pass
        return
    save(vault, state)


def after_append(vault: Vault, state: BoardState, new_data: bytes, row: it.Row) -> BoardState:
    """The state once ``row`` was appended (verified) to the board described by ``state``. Not
    written: the summary on disk still describes a prefix, and the next ``load`` parses just the
    appended rows (rewriting the summary every ``SAVE_EVERY`` rows)."""
    active = [list(e) for e in state.active]
    if row.status == "active":
        active.append(_active_entry(row, state.rows))
    nl = state.newline
    new = BoardState(
        new_data,
        state.table_start,
        state.writable,
        state.appendable,
        state.crlf + (nl == "\r\n") + (0 if state.data.endswith((b"\n", b"\r")) else nl == "\r\n"),
        state.lf + 1 + (0 if state.data.endswith((b"\n", b"\r")) else 1),
        state.rows + 1,
        _top(active),
        state.bom,
        None if state.crc is None else zlib.crc32(new_data[len(state.data) :], state.crc),
    )
    return new


__all__ = ["BoardState", "after_append", "cache_path", "load", "refresh", "ts_key"]
