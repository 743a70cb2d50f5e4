"""A snapshot of the files the daemon cares about (docs/daemon.md: ``index.md``, its sync-conflict
copies, ``sessions/<id>.md``; relative to ``memory/``, POSIX separators), and the comparison of two
snapshots.

I/O is injected (``listdir``, ``stat``, ``read``) in the manner of watchdog's
``DirectorySnapshot`` so that tests can feed a fake tree. A file is read only when its (mtime,
size) differs from the previous snapshot: an idle rescan of 5,000 snapshots is 5,000 stats.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from agentmem_vault.board.rules import is_conflict_copy
from agentmem_vault.errors import AgentmemError
from agentmem_vault.fs import TMP_SUFFIX, read_bytes

INDEX = "index.md"
SESSIONS = "sessions"
_SESSIONS_PREFIX = SESSIONS + "/"


def is_ignored_name(name: str) -> bool:
    """Hidden files, editor/sync temporaries and our own atomic-write temporaries."""
    return (
        not name
        or name.startswith((".", "~$"))
        or name.endswith((TMP_SUFFIX, "~", ".tmp", ".swp", ".part", ".crdownload"))
    )


def classify(rel: str) -> str | None:
    """'index' | 'conflict' | 'session' for a watched path relative to memory/, else None."""
    parts = rel.replace("\\", "/").split("/")
    name = parts[-1]
    if is_ignored_name(name) or not name.lower().endswith(".md"):
        return None
    if len(parts) == 1:
        if name == INDEX:
            return "index"
        return "conflict" if is_conflict_copy(name) else None
    if len(parts) == 2 and parts[0] == SESSIONS:
        return "session"
    return None


@dataclass(frozen=True)
class Entry:
    mtime_ns: int
    size: int
    sha: str | None  # None when the file could not be read
    meta: tuple[tuple[str, str], ...] = ()  # a session snapshot's Metadata table
    summary: str = ""  # the Summary a snapshot implies (session_rules.summary_from_snapshot)
    text: str | None = None  # conflict copies only: the whole text, for folding
    error: str | None = None  # unreadable / not UTF-8

    @property
    def meta_dict(self) -> dict[str, str]:
        return dict(self.meta)


@dataclass
class FolderSnapshot:
    entries: dict[str, Entry] = field(default_factory=dict)

    # Entries only ever hold watched paths (see classify), so a prefix tells their kind.
    def sessions(self) -> dict[str, Entry]:
        """Session ID (file stem) -> entry."""
        n = len(SESSIONS) + 1
        return {rel[n:-3]: e for rel, e in self.entries.items() if rel.startswith(_SESSIONS_PREFIX)}

    def conflicts(self) -> dict[str, Entry]:
        return {rel: e for rel, e in self.entries.items() if "/" not in rel and rel != INDEX}


def sha_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _read(path: Path) -> bytes:
    """fs's read: a FIFO, socket or device, or a link leading outside the vault, is refused
    (an OSError here, so it is reported as unreadable), never waited on (docs/reliability.md)."""
    try:
        data = read_bytes(path)
    except AgentmemError as exc:
        raise OSError(exc.message) from exc
    if data is None:
        raise FileNotFoundError(2, "No such file or directory", str(path))
    return data


def session_fields(text: str) -> tuple[dict[str, str], str]:
    """(Metadata table, the Summary it implies) of a snapshot's text, read with the snapshot
    model and the board rules; a file it cannot read yields no fields (the planner reports it)."""
    from agentmem_vault.errors import SnapshotFormatError
    from agentmem_vault.board.rules import summary_from_snapshot
    from agentmem_vault.model.snapshot import parse_snapshot

    try:
        snap = parse_snapshot(text)
    except SnapshotFormatError:
        return {}, ""
    return dict(snap.metadata), summary_from_snapshot(snap) or ""


def read_entry(path: Path, kind: str, st: os.stat_result, read: Callable[[Path], bytes] = _read) -> Entry:
    try:
        data = read(path)
    except OSError as exc:
        return Entry(st.st_mtime_ns, st.st_size, None, error=f"cannot read: {exc.strerror or exc}")
    sha = sha_of(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Entry(st.st_mtime_ns, st.st_size, sha, error=f"not UTF-8 text (byte {exc.start})")
    if kind == "session":
        meta, summary = session_fields(text)
        return Entry(st.st_mtime_ns, st.st_size, sha, tuple(meta.items()), summary)
    if kind == "conflict":
        return Entry(st.st_mtime_ns, st.st_size, sha, text=text)
    return Entry(st.st_mtime_ns, st.st_size, sha)


def watched_paths(memory: Path, listdir: Callable[[Path], Iterable[str]] = _listdir) -> list[str]:
    rels = [n for n in listdir(memory) if classify(n) in ("index", "conflict")]
    rels += [
        _SESSIONS_PREFIX + n for n in listdir(memory / SESSIONS) if n[-3:].lower() == ".md" and not is_ignored_name(n)
    ]
    return rels


def scan_file(memory: Path, rel: str) -> Entry | None:
    """Entry for one watched file, read afresh (None when it is gone)."""
    kind = classify(rel)
    if kind is None:
        return None
    path = memory / rel
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return read_entry(path, kind, st)


def scan_memory(
    memory: Path,
    previous: FolderSnapshot | None = None,
    *,
    listdir: Callable[[Path], Iterable[str]] = _listdir,
    stat: Callable = os.stat,
    read: Callable[[Path], bytes] = _read,
) -> FolderSnapshot:
    prev = previous.entries if previous else {}
    out: dict[str, Entry] = {}
    base = str(memory)
    for rel in watched_paths(memory, listdir):
        # The hot loop of an idle rescan (one stat per file): plain strings, no Path objects.
        full = os.path.join(base, rel)
        try:
            st = stat(full)
        except OSError:
            continue  # vanished between listing and stat: the next pass sees it
        old = prev.get(rel)
        if old is not None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size and old.error is None:
            out[rel] = old
            continue
        out[rel] = read_entry(Path(full), classify(rel) or "", st, read)
    return FolderSnapshot(out)


def changed(old: FolderSnapshot, new: FolderSnapshot) -> set[str]:
    """Paths added, removed or whose content changed (pure)."""
    keys = set(old.entries) | set(new.entries)
    out: set[str] = set()
    for k in keys:
        a, b = old.entries.get(k), new.entries.get(k)
        if a is None or b is None:
            out.add(k)
        elif (a.sha, a.error) != (b.sha, b.error) or (a.sha is None and (a.mtime_ns, a.size) != (b.mtime_ns, b.size)):
            out.add(k)
    return out
