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
from agentmem_vault.board import table as it

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)
if TYPE_CHECKING:
    from pathlib import Path

    from agentmem_vault.vault import Vault

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
    ~1 ms per 100 rows, and its import more); other forms go through ``clock.parse_ts``."""
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
    """``zlib.crc32(data, value)``. A new chat only carries the CRC over its appended line (a few
    hundred bytes): that is done here in Python, since importing zlib would cost the hook more
    (about 0.4 ms, docs/performance.md); whole boards go to zlib."""
    if len(data) > 4096:
        import zlib

        return zlib.crc32(data, value)
    crc = value ^ 0xFFFFFFFF
    table = _CRC_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_CRC_TABLE = (  # CRC-32 (IEEE, reflected 0xEDB88320), as zlib computes it
    0x00000000,
    0x77073096,
    0xEE0E612C,
    0x990951BA,
    0x076DC419,
    0x706AF48F,
    0xE963A535,
    0x9E6495A3,
    0x0EDB8832,
    0x79DCB8A4,
    0xE0D5E91E,
    0x97D2D988,
    0x09B64C2B,
    0x7EB17CBD,
    0xE7B82D07,
    0x90BF1D91,
    0x1DB71064,
    0x6AB020F2,
    0xF3B97148,
    0x84BE41DE,
    0x1ADAD47D,
    0x6DDDE4EB,
    0xF4D4B551,
    0x83D385C7,
    0x136C9856,
    0x646BA8C0,
    0xFD62F97A,
    0x8A65C9EC,
    0x14015C4F,
    0x63066CD9,
    0xFA0F3D63,
    0x8D080DF5,
    0x3B6E20C8,
    0x4C69105E,
    0xD56041E4,
    0xA2677172,
    0x3C03E4D1,
    0x4B04D447,
    0xD20D85FD,
    0xA50AB56B,
    0x35B5A8FA,
    0x42B2986C,
    0xDBBBC9D6,
    0xACBCF940,
    0x32D86CE3,
    0x45DF5C75,
    0xDCD60DCF,
    0xABD13D59,
    0x26D930AC,
    0x51DE003A,
    0xC8D75180,
    0xBFD06116,
    0x21B4F4B5,
    0x56B3C423,
    0xCFBA9599,
    0xB8BDA50F,
    0x2802B89E,
    0x5F058808,
    0xC60CD9B2,
    0xB10BE924,
    0x2F6F7C87,
    0x58684C11,
    0xC1611DAB,
    0xB6662D3D,
    0x76DC4190,
    0x01DB7106,
    0x98D220BC,
    0xEFD5102A,
    0x71B18589,
    0x06B6B51F,
    0x9FBFE4A5,
    0xE8B8D433,
    0x7807C9A2,
    0x0F00F934,
    0x9609A88E,
    0xE10E9818,
    0x7F6A0DBB,
    0x086D3D2D,
    0x91646C97,
    0xE6635C01,
    0x6B6B51F4,
    0x1C6C6162,
    0x856530D8,
    0xF262004E,
    0x6C0695ED,
    0x1B01A57B,
    0x8208F4C1,
    0xF50FC457,
    0x65B0D9C6,
    0x12B7E950,
    0x8BBEB8EA,
    0xFCB9887C,
    0x62DD1DDF,
    0x15DA2D49,
    0x8CD37CF3,
    0xFBD44C65,
    0x4DB26158,
    0x3AB551CE,
    0xA3BC0074,
    0xD4BB30E2,
    0x4ADFA541,
    0x3DD895D7,
    0xA4D1C46D,
    0xD3D6F4FB,
    0x4369E96A,
    0x346ED9FC,
    0xAD678846,
    0xDA60B8D0,
    0x44042D73,
    0x33031DE5,
    0xAA0A4C5F,
    0xDD0D7CC9,
    0x5005713C,
    0x270241AA,
    0xBE0B1010,
    0xC90C2086,
    0x5768B525,
    0x206F85B3,
    0xB966D409,
    0xCE61E49F,
    0x5EDEF90E,
    0x29D9C998,
    0xB0D09822,
    0xC7D7A8B4,
    0x59B33D17,
    0x2EB40D81,
    0xB7BD5C3B,
    0xC0BA6CAD,
    0xEDB88320,
    0x9ABFB3B6,
    0x03B6E20C,
    0x74B1D29A,
    0xEAD54739,
    0x9DD277AF,
    0x04DB2615,
    0x73DC1683,
    0xE3630B12,
    0x94643B84,
    0x0D6D6A3E,
    0x7A6A5AA8,
    0xE40ECF0B,
    0x9309FF9D,
    0x0A00AE27,
    0x7D079EB1,
    0xF00F9344,
    0x8708A3D2,
    0x1E01F268,
    0x6906C2FE,
    0xF762575D,
    0x806567CB,
    0x196C3671,
    0x6E6B06E7,
    0xFED41B76,
    0x89D32BE0,
    0x10DA7A5A,
    0x67DD4ACC,
    0xF9B9DF6F,
    0x8EBEEFF9,
    0x17B7BE43,
    0x60B08ED5,
    0xD6D6A3E8,
    0xA1D1937E,
    0x38D8C2C4,
    0x4FDFF252,
    0xD1BB67F1,
    0xA6BC5767,
    0x3FB506DD,
    0x48B2364B,
    0xD80D2BDA,
    0xAF0A1B4C,
    0x36034AF6,
    0x41047A60,
    0xDF60EFC3,
    0xA867DF55,
    0x316E8EEF,
    0x4669BE79,
    0xCB61B38C,
    0xBC66831A,
    0x256FD2A0,
    0x5268E236,
    0xCC0C7795,
    0xBB0B4703,
    0x220216B9,
    0x5505262F,
    0xC5BA3BBE,
    0xB2BD0B28,
    0x2BB45A92,
    0x5CB36A04,
    0xC2D7FFA7,
    0xB5D0CF31,
    0x2CD99E8B,
    0x5BDEAE1D,
    0x9B64C2B0,
    0xEC63F226,
    0x756AA39C,
    0x026D930A,
    0x9C0906A9,
    0xEB0E363F,
    0x72076785,
    0x05005713,
    0x95BF4A82,
    0xE2B87A14,
    0x7BB12BAE,
    0x0CB61B38,
    0x92D28E9B,
    0xE5D5BE0D,
    0x7CDCEFB7,
    0x0BDBDF21,
    0x86D3D2D4,
    0xF1D4E242,
    0x68DDB3F8,
    0x1FDA836E,
    0x81BE16CD,
    0xF6B9265B,
    0x6FB077E1,
    0x18B74777,
    0x88085AE6,
    0xFF0F6A70,
    0x66063BCA,
    0x11010B5C,
    0x8F659EFF,
    0xF862AE69,
    0x616BFFD3,
    0x166CCF45,
    0xA00AE278,
    0xD70DD2EE,
    0x4E048354,
    0x3903B3C2,
    0xA7672661,
    0xD06016F7,
    0x4969474D,
    0x3E6E77DB,
    0xAED16A4A,
    0xD9D65ADC,
    0x40DF0B66,
    0x37D83BF0,
    0xA9BCAE53,
    0xDEBB9EC5,
    0x47B2CF7F,
    0x30B5FFE9,
    0xBDBDF21C,
    0xCABAC28A,
    0x53B39330,
    0x24B4A3A6,
    0xBAD03605,
    0xCDD70693,
    0x54DE5729,
    0x23D967BF,
    0xB3667A2E,
    0xC4614AB8,
    0x5D681B02,
    0x2A6F2B94,
    0xB40BBE37,
    0xC30C8EA1,
    0x5A05DF1B,
    0x2D02EF8D,
)


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
            from agentmem_vault.fs import read_bytes

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
            from agentmem_vault.fs import read_bytes

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
    from agentmem_vault.fs import read_bytes

    try:  # fs's read: a FIFO here is refused, never waited on (docs/reliability.md)
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
        from agentmem_vault.fs import read_bytes

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
    from agentmem_vault.fs import decode_text

    doc = it.parse_index(decode_text(data, vault.index_path))
    parsed = from_doc(data, doc)
    if parsed is not None:
        parsed.stat, parsed.path = stat, vault.index_path
        save(vault, parsed)
    return parsed


def save(vault: Vault, state: BoardState) -> None:
    """Best effort: a cache that cannot be written (read-only vault) is simply not kept."""
    from agentmem_vault.fs import write_cache_file

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
