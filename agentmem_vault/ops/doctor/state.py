"""What doctor reads: the board, the snapshots, archives, conflict copies and leftover
temporaries, as text (the only part of doctor that reads files; the checks are pure)."""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError
from agentmem_vault.model.ids import SESSION_ID_IN_TEXT_RE, is_valid_session_id
from agentmem_vault.board.rules import is_conflict_copy
from agentmem_vault.fs import TMP_SUFFIX, check_path, read_bytes
from agentmem_vault.fs import _kind
from agentmem_vault.ops.lifecycle import folder_names

TEMP_KIND = "temp_file"
STALE_TEMP_SECONDS = 5 * 60
# What atomic_write_bytes (and the recall index) name their temporaries: .<name>.<pid>.<n>.agentmem-tmp
TEMP_RE = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.(?P<n>\d+)" + re.escape(TMP_SUFFIX) + "$")


@dataclass(frozen=True)
class TempFile:
    rel: str  # relative to memory/, "/" separators
    age: float  # seconds since it was last modified when read (negative: dated in the future)
    size: int


@dataclass
class VaultState:
    """The files doctor looks at, as text (None: missing; ``bytes``: not UTF-8)."""

    index_text: str | bytes | None
    snapshots: dict[str, str | bytes]  # valid Session ID -> text
    other_session_files: list[str]  # names in sessions/ that are not <valid id>.md
    archived: set[str]
    conflict_copies: dict[str, str | bytes]  # name in memory/ -> text
    temp_files: list[TempFile] = field(default_factory=list)  # leftovers of interrupted writes
    # (path relative to the vault, why): FIFOs, sockets, devices, links leading outside the vault,
    # a file where a folder belongs. Never read, never "fixed" (docs/reliability.md).
    unsafe: list[tuple[str, str]] = field(default_factory=list)
    # archive/<id>/index.md of each archived session that still has a row: an archive killed halfway
    archive_indexes: dict[str, str | bytes] = field(default_factory=dict)


def _decode(data: bytes) -> str | bytes:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def find_temp_files(vault: Vault, now: float | None = None) -> list[TempFile]:
    """Atomic-write temporaries anywhere under memory/, except in doctor's own backups (the copies
    of removed temporaries live there under their old names)."""
    when = time.time() if now is None else now
    backups = os.path.normcase(str(vault.state_dir / "backups"))
    out: list[TempFile] = []
    for dirpath, dirnames, filenames in os.walk(vault.memory):
        dirnames[:] = sorted(d for d in dirnames if os.path.normcase(os.path.join(dirpath, d)) != backups)
        for name in sorted(filenames):
            if not TEMP_RE.match(name):
                continue
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue  # gone since the listing
            if not stat.S_ISREG(st.st_mode):
                continue  # a symlink or something odd: not ours
            rel = Path(full).relative_to(vault.memory).as_posix()
            out.append(TempFile(rel, when - st.st_mtime, st.st_size))
    return out


def _unsafe_entry(path: Path) -> str | None:
    """Why ``path`` must not be read (a FIFO, socket, device, or a link leading outside the vault),
    or None for a regular file, a folder or nothing."""
    try:
        check_path(path)
        st = path.stat()
    except AgentmemError as exc:
        return exc.message
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    return f"{path.name} is {_kind(st.st_mode)}, not a regular file; it is never read or written"


def read_state(vault: Vault, *, now: float | None = None) -> VaultState:
    unsafe: list[tuple[str, str]] = []
    idx: bytes | None = None
    why = _unsafe_entry(vault.index_path)
    if why:
        unsafe.append(("memory/index.md", why))
    else:
        idx = read_bytes(vault.index_path)
    for folder in (vault.sessions_dir, vault.archive_dir, vault.state_dir):
        rel = f"memory/{folder.name}"
        if folder.exists() and not folder.is_dir():
            unsafe.append(
                (rel, f"{rel} is a file, not a folder; commands that write there refuse until it is moved away")
            )
        elif why := _unsafe_entry(folder):
            unsafe.append((rel, why))
    snapshots: dict[str, str | bytes] = {}
    others: list[str] = []
    for n in sorted(folder_names(vault.sessions_dir)) if not any(u[0] == "memory/sessions" for u in unsafe) else []:
        p = vault.sessions_dir / n
        if n.startswith("."):
            continue
        if why := _unsafe_entry(p):
            unsafe.append((f"memory/sessions/{n}", why))
            continue
        if not p.is_file():
            continue
        if n.endswith(".md") and is_valid_session_id(n[:-3]):
            snapshots[n[:-3]] = _decode(read_bytes(p) or b"")
        else:
            others.append(n)
    archived = {n for n in folder_names(vault.archive_dir) if (vault.archive_dir / n).is_dir()}
    conflicts: dict[str, str | bytes] = {}
    for n in sorted(folder_names(vault.memory)):
        if n != "index.md" and is_conflict_copy(n) and (vault.memory / n).is_file():
            conflicts[n] = _decode(read_bytes(vault.memory / n) or b"")
    board = None if idx is None else _decode(idx)
    on_board = {m.group(0) for m in SESSION_ID_IN_TEXT_RE.finditer(board)} if isinstance(board, str) else set()
    indexes: dict[str, str | bytes] = {}
    for n in sorted(archived & on_board):
        path = vault.archive_path(n) / "index.md"
        if path.is_file() and not _unsafe_entry(path):
            indexes[n] = _decode(read_bytes(path) or b"")
    return VaultState(board, snapshots, others, archived, conflicts, find_temp_files(vault, now), unsafe, indexes)
