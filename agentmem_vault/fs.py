"""File-system primitives for vault files: regular files only (never a FIFO, socket or device),
no link leading outside the vault, whole-file writes by temp file + fsync + rename, appends that
are cut back on failure, and retries on Windows sharing violations (docs/reliability.md).

Read-only files and folders are honoured even for root (``chmod a-w`` means "do not touch"); on
Windows only files, because Windows ignores the read-only attribute of folders.

Nothing here takes the vault lock or journals: that is ``writer.VaultWriter``'s job.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from _thread import get_ident as _get_ident
from pathlib import Path, PurePath

from agentmem_vault.errors import (
    AgentmemError,
    FileTooLarge,
    IndexFormatError,
    NotRegularFile,
    OutsideVault,
    SnapshotFormatError,
    WriteFailed,
)

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import BinaryIO

_RETRY_SECONDS = 3.0
_WINDOWS = sys.platform == "win32"
TMP_SUFFIX = ".agentmem-tmp"


def _is_sharing_violation(exc: OSError) -> bool:
    # Windows: ERROR_ACCESS_DENIED (5), ERROR_SHARING_VIOLATION (32), ERROR_LOCK_VIOLATION (33):
    # antivirus, Obsidian or the Drive client briefly holding the file.
    return getattr(exc, "winerror", None) in (5, 32, 33) or (
        sys.platform == "win32" and isinstance(exc, PermissionError)
    )


def _retry(fn: Callable[[], object]) -> object:
    deadline = time.monotonic() + _RETRY_SECONDS
    delay = 0.02
    while True:
        try:
            return fn()
        except OSError as exc:
            if not _is_sharing_violation(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _vault_root_of(path: Path | str, names: tuple[str, ...] = ("memory",)) -> str | None:
    """The vault folder of a path under ``<vault>/memory/`` (or another of ``names``); None for
    paths elsewhere. String operations: this runs on every read and write."""
    head = os.path.dirname(os.path.abspath(path))
    while True:
        parent = os.path.dirname(head)
        if os.path.basename(head) in names:
            return parent
        if parent == head:
            return None
        head = parent


def _area_of(full: str) -> tuple[str, str] | None:
    """The folder that an absolute path may not leave through a link, and its name for messages:
    the vault of a path under ``<vault>/memory/`` or ``<vault>/.obsidian/``, else the user cache
    folder holding it. None for other paths: the ones the user names (transcripts, ``--file``,
    agent configs) and the user config folder, which no vault can write and whose files dotfile
    managers (stow, home-manager) make links to elsewhere."""
    root = _vault_root_of(full, ("memory", ".obsidian"))
    if root is not None:
        return root, "the vault"
    from agentmem_vault.vault import user_cache_dir  # a few dict lookups: not worth a memo

    cache = os.path.abspath(user_cache_dir()).rstrip(os.sep)
    if full.startswith(cache + os.sep):
        return cache, "the user cache folder"
    return None


_REAL_DIRS: dict[str, tuple[str, float]] = {}  # folder -> (its realpath, when it was resolved)
_REAL_DIR_SECONDS = 1.0


def _real_dir(folder: str) -> str:
    """``os.path.realpath`` of a folder, remembered for a second: one command checks the same few
    folders many times (each realpath is one lstat per path component), while a folder swapped for
    a link later in a long-running process (the daemon) is seen again a second after."""
    now = time.monotonic()
    hit = _REAL_DIRS.get(folder)
    if hit is not None and now - hit[1] < _REAL_DIR_SECONDS:
        return hit[0]
    real = os.path.realpath(folder)
    if len(_REAL_DIRS) > 256:
        _REAL_DIRS.clear()
    _REAL_DIRS[folder] = (real, now)
    return real


def _realpath(full: str) -> str:
    """``os.path.realpath`` of an absolute path, with its folder's part from ``_real_dir``; the
    last component itself is always looked at (a file replaced by a link is seen at once)."""
    folder, name = os.path.split(full)
    if not name or name in (".", ".."):
        return os.path.realpath(full)
    try:
        if stat.S_ISLNK(os.lstat(full).st_mode):
            return os.path.realpath(full)
    except OSError:
        pass  # missing: resolved through its folder, as realpath does
    return os.path.join(_real_dir(folder), name)


def check_path(path: Path) -> str:
    """The link rule (docs/reliability.md): a path in the vault or the user cache folder may be a
    link, or lie in a linked folder, only if it resolves inside that same folder;
    otherwise a link could make the tool append to, truncate or copy a file elsewhere (a lock
    linked to ``~/.bashrc``, an index folder linked out). Returns the resolved path, which is what
    gets opened (without following a link, so one swapped in meanwhile is refused)."""
    full = os.path.abspath(path)
    real = _realpath(full)
    area = _area_of(full)
    if area is not None:
        root_real = _real_dir(area[0])
        if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
            raise OutsideVault(
                f"{path} resolves outside {area[1]} (to {real}) through a symbolic link; refusing to read or "
                "write it. Nothing was written; replace the link with the file itself"
            )
    return real


O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX: opening a FIFO must not wait for a peer
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX: the resolved path is opened, never a link
O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation

# The most any file is read whole (a file that big in the vault is damage or an attack; a
# 3 GB file must be refused on its size, not read into memory). Callers pass tighter limits.
MAX_READ_BYTES = 64 << 20


def _not_regular(path: Path, mode: int) -> NotRegularFile:
    return NotRegularFile(
        f"{path} is {_kind(mode)}, not a regular file; refusing to read or write it (nothing was written)"
    )


def _open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` of the resolved path (``check_path``) that never follows a link, never blocks
    on a FIFO and refuses anything but a regular file (checked with ``fstat`` on the descriptor)."""
    real = check_path(path)
    try:
        fd = os.open(real, flags | O_BINARY | O_NONBLOCK | O_NOFOLLOW, mode)
    except OSError as exc:
        # missing; or a link loop, or a link swapped in since check_path ("too many levels of links")
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)) or exc.errno == errno.ELOOP:
            raise
        # A socket cannot be opened at all (ENXIO), a folder not for writing: name what it is.
        try:
            st = os.lstat(real)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fd_chunks(fd: int, path: Path, limit: int, chunk: int = 0) -> Iterator[bytes]:
    """The rest of ``fd`` in pieces of ``chunk`` bytes (0: one piece as large as the file), refused
    on its size before reading and stopped past ``limit``."""
    size = os.fstat(fd).st_size - os.lseek(fd, 0, os.SEEK_CUR)
    if size > limit:
        raise FileTooLarge(f"{path} is {size:,} bytes, over the {limit:,}-byte limit for it; refusing to read it")
    got = 0
    while b := os.read(fd, chunk or max(1 << 16, min(size, limit) - got + 1)):
        got += len(b)
        if got > limit:  # it grew meanwhile
            raise FileTooLarge(f"{path} grew past the {limit:,}-byte limit for it while being read; refusing it")
        yield b


# -- dry run ------------------------------------------------------------------------------------

_MISSING = object()
# thread id -> the active DryRun's files: a preview in one thread (an MCP tool call) never catches
# another thread's real writes
_OVERLAYS: dict[int, dict[str, bytes | None]] = {}


def _overlay() -> dict[str, bytes | None] | None:
    return _OVERLAYS.get(_get_ident()) if _OVERLAYS else None


class DryRun:
    """``with DryRun() as d:`` nothing is written, anywhere (docs/reliability.md, "Dry run"):
    every write and removal below, in this thread, goes to ``d.files`` (path -> bytes, None for
    removed) and every read through this module sees it, so an operation runs exactly as it
    would, verification included, and ``d.changed()`` lists what it would have changed. Locks are
    not taken (a lock file is a write too): a preview never blocks, and may see a write in progress."""

    __slots__ = ("_prev", "files")

    def __init__(self) -> None:
        self.files: dict[str, bytes | None] = {}
        self._prev: dict[str, bytes | None] | None = None

    def __enter__(self) -> DryRun:
        self._prev = _overlay()
        _OVERLAYS[_get_ident()] = self.files
        return self

    def __exit__(self, *exc: object) -> None:
        if self._prev is None:
            _OVERLAYS.pop(_get_ident(), None)
        else:
            _OVERLAYS[_get_ident()] = self._prev

    def changed_under(self, root: Path) -> list[str]:
        """``changed()`` as paths relative to ``root`` (others as they are)."""
        base = os.path.abspath(root)
        return [os.path.relpath(k, base) if k.startswith(base + os.sep) else k for k in self.changed()]

    def changed(self) -> list[str]:
        """The paths that would have been written or removed, in the order first touched."""
        out = []
        for key, data in self.files.items():
            try:  # the file as it is on disk (read_bytes would see the overlay); None when missing
                same = _reading(Path(key), lambda fd, p: b"".join(_fd_chunks(fd, p, MAX_READ_BYTES))) == data
            except AgentmemError:
                same = data is None
            if not same:
                out.append(key)
        return out


def dry_running() -> bool:
    return _overlay() is not None


def remove_file(path: Path) -> None:
    """Remove a file (retrying Windows sharing violations); in a dry run it is only recorded."""
    ov = _overlay()
    if ov is not None:
        ov[os.path.abspath(path)] = None
        return
    _retry(path.unlink)


def read_bytes(path: Path, *, limit: int = MAX_READ_BYTES) -> bytes | None:
    """The file's bytes, or None when it does not exist. Every read goes through here or
    ``read_from`` / ``read_head`` / ``open_for_read``: a FIFO, socket or device is refused (never
    waited on), a link out of the vault, cache or config folder too, and a file over ``limit``
    bytes is refused on its size."""
    return read_from(path, 0, limit=limit)


def read_from(path: Path, offset: int, *, limit: int = MAX_READ_BYTES) -> bytes | None:
    """The file's bytes from ``offset`` to its end (None when it does not exist); as ``read_bytes``.
    In a dry run, what this thread would have written (``DryRun``)."""
    ov = _overlay()
    hit = _MISSING if ov is None else ov.get(os.path.abspath(path), _MISSING)
    if hit is not _MISSING:
        return None if hit is None else hit[offset:]  # type: ignore[index]

    def _do(fd: int, p: Path) -> bytes:
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        return b"".join(_fd_chunks(fd, p, limit))

    return _reading(path, _do)


def read_head(path: Path, size: int) -> bytes | None:
    """At most the first ``size`` bytes of a regular file (None when it does not exist), for
    files of which only a head matters (a workspace's ``.git/config``, a transcript's first lines)."""
    return _reading(path, lambda fd, _: os.read(fd, size))


def _reading(path: Path, read: Callable[[int, Path], bytes]) -> bytes | None:
    """``read(fd, path)`` on ``path`` opened by the rule (``_open_regular``); None when it does not
    exist, an error naming the path (never a traceback) when it cannot be read."""

    def _do() -> bytes:
        fd = _open_regular(path, os.O_RDONLY)
        try:
            return read(fd, path)
        finally:
            os.close(fd)

    try:
        return _retry(_do)  # type: ignore[return-value]
    except FileNotFoundError:
        return None
    except OSError as exc:  # no permission, a folder on Windows…: say which path, never a traceback
        raise AgentmemError(f"cannot read {path}: {exc.strerror or exc}; nothing was written", code="io_error") from exc


def read_chunks(path: Path, consume: Callable[[Iterator[bytes]], object], *, chunk: int = 1 << 16) -> object:
    """``consume(pieces)``: the file's bytes in pieces of ``chunk`` (None, not called, when it does
    not exist), opened and bounded as ``read_bytes``: for a big file scanned once, whose whole copy
    costs more to allocate than to scan (docs/performance.md). Called again from the start if the
    read is retried. In a dry run, what this thread would have written."""
    ov = _overlay()
    hit = _MISSING if ov is None else ov.get(os.path.abspath(path), _MISSING)
    if hit is not _MISSING:
        return None if hit is None else consume(iter([hit]))  # type: ignore[list-item]
    return _reading(path, lambda fd, p: consume(_fd_chunks(fd, p, MAX_READ_BYTES, chunk)))  # type: ignore[arg-type,return-value]


def open_for_read(path: Path) -> BinaryIO:
    """A binary file object for streaming a large regular file line by line (a transcript, a
    queue), opened as ``read_bytes`` opens; FileNotFoundError when it does not exist."""
    fd: int = _retry(lambda: _open_regular(path, os.O_RDONLY))  # type: ignore[assignment]
    return os.fdopen(fd, "rb")


def check_database(path: Path) -> str:
    """Before SQLite opens ``path`` (it follows links, blocks on a FIFO and creates ``-journal``,
    ``-wal`` and ``-shm`` files beside it): the path resolves inside its folder's area
    (``check_path``), and the file and each companion is a regular file or absent. Returns the
    resolved path, the one to connect to."""
    real = check_path(path)
    for p in (real, real + "-journal", real + "-wal", real + "-shm"):
        try:
            st = os.lstat(p)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(Path(p), st.st_mode)
    return real


def open_lock_file(path: Path) -> int:
    """A lock file's descriptor: created when missing, never truncated (``O_TRUNC`` through a link
    to another file would empty that file), never through a link out of the user cache, and a
    regular file only."""
    return _open_regular(path, os.O_RDWR | os.O_CREAT)


def prepare_lock_file(path: Path) -> None:
    """Before filelock (which opens with ``O_TRUNC``) gets ``path``: ``open_lock_file``'s rules."""
    os.close(open_lock_file(path))


def decode_text(data: bytes, path: Path) -> str:
    """UTF-8 (a BOM is kept as U+FEFF so that it is written back as it was)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if path.name == "index.md" and path.parent.name == "memory":
            error: type[AgentmemError] = IndexFormatError
        elif "sessions" in path.parts or "archive" in path.parts:
            error = SnapshotFormatError
        else:
            error = AgentmemError
        raise error(f"{path} is not UTF-8 text (byte {exc.start}); refusing to read or change it") from exc


def read_text(path: Path, *, limit: int = MAX_READ_BYTES) -> str | None:
    data = read_bytes(path, limit=limit)
    return None if data is None else decode_text(data, path)


def ensure_writable(path: Path) -> None:
    """Refuse read-only targets up front (also as root, who would otherwise write anyway)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise WriteFailed(f"cannot access {path}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode) and _WINDOWS:
        return  # Windows ignores the read-only attribute of folders (so does os.access there)
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        kind = "folder" if stat.S_ISDIR(st.st_mode) else "file"
        raise WriteFailed(f"{path} is a read-only {kind}; nothing was written", code="read_only")


def _fsync_dir(folder: Path) -> None:
    if _WINDOWS:  # directories cannot be opened for fsync on Windows
        return
    try:  # best effort: the rename itself is done
        fd = os.open(str(folder), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _write_target(path: Path) -> Path:
    """Where a whole-file write of ``path`` goes: the link's target when ``path`` is a symlink
    inside the vault (the link stays a link, never silently replaced by a copy)."""
    check_path(path)
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return path
    target = path
    if stat.S_ISLNK(st.st_mode):
        target = Path(os.path.realpath(path))
        try:
            st = target.stat()
        except FileNotFoundError:
            return target  # a dangling link inside the vault: create its target
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(
            f"{path} is {_kind(st.st_mode)}, not a regular file; refusing to replace it (nothing was written)"
        )
    return target


def temp_path(path: Path) -> Path:
    """Where an atomic write of ``path`` puts its bytes first: ``.<name>.<pid>.<n>.agentmem-tmp``
    next to it (doctor recognises and cleans up leftovers of killed writers by this name)."""
    return path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns() % 10**9}{TMP_SUFFIX}"


def swap_in(tmp: Path, path: Path, *, durable: bool = True) -> None:
    """Put a finished temporary (``temp_path``) in place of ``path``: one atomic rename, retried
    on Windows sharing violations; ``durable``: the folder is synced so the rename survives a
    crash (derived caches skip it)."""
    _retry(lambda: os.replace(tmp, path))
    if durable:
        _fsync_dir(path.parent)


def stored_bytes(path: Path, data: bytes) -> bytes:
    """What may be stored at ``path``: under a vault's ``memory/`` every secret is redacted
    (docs/redaction.md). Every write primitive below passes through here, so no write path
    escapes; callers that verify their write redact first (``redaction.redact_text``)."""
    root = _vault_root_of(path)
    if root is None:
        return data
    from agentmem_vault.model import redact

    rel = PurePath(os.path.relpath(os.path.abspath(path), os.path.join(root, "memory")))
    if not redact.applies(rel):
        return data
    return (REDACT[0] if REDACT else redact.redact_bytes)(data)


# redaction.redact_bytes (the user's patterns and exceptions too) once that module is loaded; the
# built-in patterns alone before (docs/redaction.md)
REDACT: list[Callable[[bytes], bytes]] = []


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old or the new file."""
    data = stored_bytes(path, data)
    ov = _overlay()
    if ov is not None:
        ov[os.path.abspath(path)] = data
        return
    path = _write_target(path)
    make_dirs(path.parent)
    ensure_writable(path.parent)  # the temporary file is created there (root would ignore the mode)
    ensure_writable(path)
    try:
        _replace(path, data, durable=True)
    except OSError as exc:
        raise WriteFailed(f"could not write {path}: {exc.strerror or exc}; the previous file is intact") from exc


def _replace(path: Path, data: bytes, *, durable: bool) -> None:
    """``data`` into a new temporary beside ``path`` (``_create_temp``), renamed over ``path``;
    ``durable``: fsynced first, with the old file's mode. The temporary never outlives a failure."""
    tmp = temp_path(path)
    try:
        with _create_temp(tmp) as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
                try:
                    os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
                except OSError:
                    pass
        swap_in(tmp, path, durable=durable)
    except BaseException:  # a stop signal too (docs/daemon.md): no temporary is left behind
        _discard(tmp)
        raise


def _discard(tmp: Path) -> None:
    try:  # best effort after a failed write, whose own error is what the caller reports
        os.unlink(tmp)
    except OSError:
        pass


def _create_temp(tmp: Path) -> BinaryIO:
    """A new temporary: ``O_EXCL``, no link followed (nothing planted at its name is written through)."""
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_BINARY, 0o644)
    return os.fdopen(fd, "wb")  # type: ignore[return-value]


def create_fresh(path: Path) -> BinaryIO:
    """A new, empty file at ``path``, open for writing (a log a child process writes into):
    created under a temporary name and renamed over whatever was there, so an old file, a link or
    a FIFO at ``path`` is replaced, never truncated or written through."""
    check_path(path.parent)
    tmp = temp_path(path)
    fh = _create_temp(tmp)
    try:
        swap_in(tmp, path, durable=False)
    except BaseException:
        fh.close()
        _discard(tmp)
        raise
    return fh


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


_os_write = os.write  # the one write call of appends (tests inject ENOSPC here)


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd`` (a short write is continued; no progress is a full disk)."""
    view = memoryview(data)
    while view:
        n = _os_write(fd, view)
        if n <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        view = view[n:]


def make_dirs(folder: Path) -> None:
    """``mkdir -p`` that honours read-only folders (also as root): the nearest existing ancestor
    must be writable before anything is created inside it (docs/reliability.md)."""
    if folder.is_dir() or _overlay() is not None:
        return
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    ensure_writable(existing)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(f"could not create {folder}: {exc.strerror or exc}; nothing was written") from exc


def append_bytes(path: Path, data: bytes, *, fresh_line: bool = False, durable: bool = True) -> None:
    """Append in place with one write (only the new row goes to disk).

    On any error (a full disk cutting the write inside a UTF-8 character, EIO…) the file is cut
    back to its exact old length and fsynced before the error is raised, so a failed append never
    leaves half a line (docs/reliability.md). ``fresh_line``: start on a new line if the file ends
    without one (a line cut off by a crash must not swallow this one). ``durable=False``: no
    fsync (the OS writes it back; a power cut may lose the line, a crash or a kill does not)."""
    data = stored_bytes(path, data)
    ov = _overlay()
    if ov is not None:
        old = read_bytes(path) or b""
        sep = b"\n" if fresh_line and old and not old.endswith(b"\n") else b""
        ov[os.path.abspath(path)] = old + sep + data
        return
    check_path(path)
    ensure_writable(path)
    undo_failed: list[str] = []

    def _do() -> None:
        fd = _open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            old = os.fstat(fd).st_size
            payload = data
            if fresh_line and old:
                os.lseek(fd, old - 1, os.SEEK_SET)  # O_APPEND: the write still goes to the end
                if os.read(fd, 1) != b"\n":
                    payload = b"\n" + data
            try:
                _write_all(fd, payload)
                if durable:
                    os.fsync(fd)
            except OSError:
                try:
                    os.ftruncate(fd, old)
                    os.fsync(fd)
                except OSError as undo:
                    undo_failed.append(undo.strerror or str(undo))
                raise
        finally:
            os.close(fd)

    try:
        _retry(_do)
    except OSError as exc:
        if undo_failed:
            raise WriteFailed(
                f"could not append to {path}: {exc.strerror or exc}, and could not cut it back "
                f"({undo_failed[0]}); its last line may be incomplete - run `agentmem doctor`"
            ) from exc
        raise WriteFailed(f"could not append to {path}: {exc.strerror or exc}; the file is as it was") from exc


def append_line(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Append one line to an append-only state file (journal, ledgers, queues)."""
    append_bytes(path, data, fresh_line=True, durable=durable)


def write_cache_file(path: Path, data: bytes) -> None:
    """Derived state that can be rebuilt at any time (docs/performance.md), or a transaction's undo
    copy (``writer._UndoRecord``, never fsynced either): temp file + rename, no fsync. Read-only folders are honoured as for vault files, and so is the link rule; a link or a
    FIFO at the cache's name is replaced, never written through (a cache hard-linked to a vault
    file too: the file it pointed to is left as it was)."""
    check_path(path)
    # Not redacted again: derived from vault files redacted when stored; redacting the board's summary
    # on every sessionStart would cost the hook more than its own work (docs/redaction.md).
    ov = _overlay()
    if ov is not None:
        ov[os.path.abspath(path)] = data
        return
    for p in (path.parent.parent, path.parent, path):
        ensure_writable(p)
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace(path, data, durable=False)


def load_cache(path: Path, version: int, *, limit: int = MAX_READ_BYTES) -> tuple[object, object] | None:
    """``(of, data)`` of a cache file written by ``save_cache`` at this ``version``; None when it
    is missing, unreadable, torn or of another version. ``of`` is what the data was derived from
    (a stamp, a CRC): the caller compares it with the source as it is now. The one way every
    derived cache is versioned and invalidated (docs/performance.md)."""
    import json

    try:
        body = json.loads(read_bytes(path, limit=limit) or b"null")
    except (OSError, ValueError, AgentmemError):
        return None
    if not isinstance(body, dict) or body.get("v") != version or "of" not in body or "data" not in body:
        return None
    return body["of"], body["data"]


def save_cache(path: Path, version: int, of: object, data: object) -> bool:
    """Write a cache file for ``load_cache`` (temp file + rename, never through a link); best
    effort: False when it could not be written (a read-only vault keeps no cache)."""
    import json

    try:
        write_cache_file(
            path, json.dumps({"v": version, "of": of, "data": data}, ensure_ascii=False, default=str).encode("utf-8")
        )
    except (OSError, AgentmemError):
        return False
    return True
