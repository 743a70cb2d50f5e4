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
    IndexFormatError,
    NotRegularFile,
    OutsideVault,
    SnapshotFormatError,
    WriteFailed,
)

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Callable

_RETRY_SECONDS = 3.0
_WINDOWS = sys.platform == "win32"
TMP_SUFFIX = ".agentmem-tmp"


def _is_sharing_violation(exc: OSError) -> bool:
    # Windows: ERROR_ACCESS_DENIED (5), ERROR_SHARING_VIOLATION (32), ERROR_LOCK_VIOLATION (33):
    # antivirus, Obsidian or the Drive client briefly holding the file.
    return getattr(exc, "winerror", None) in (5, 32, 33) or (
        sys.platform == "win32" and isinstance(exc, PermissionError)
    )


def _retry(fn: Callable[[], object], what: str) -> object:
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


def _vault_root_of(path: Path) -> str | None:
    """The vault folder of a path under ``<vault>/memory/``; None for paths elsewhere (user config,
    caches, transcripts), which the symlink rule does not cover. String operations: this runs on
    every read and write."""
    head = os.path.dirname(os.path.abspath(path))
    while True:
        parent = os.path.dirname(head)
        if os.path.basename(head) == "memory":
            return parent
        if parent == head:
            return None
        head = parent


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


def _realpath(path: Path) -> str:
    """``os.path.realpath(path)``, with its folder's part from ``_real_dir``; the last component
    itself is always looked at (a file replaced by a link is seen at once)."""
    full = os.path.abspath(path)
    folder, name = os.path.split(full)
    if not name or name in (".", ".."):
        return os.path.realpath(full)
    try:
        if stat.S_ISLNK(os.lstat(full).st_mode):
            return os.path.realpath(full)
    except OSError:
        pass  # missing: resolved through its folder, as realpath does
    return os.path.join(_real_dir(folder), name)


def check_inside_vault(path: Path) -> None:
    """The symlink rule (docs/reliability.md): a vault path may be a link, or lie in a linked
    folder, only if it resolves inside the vault. Otherwise a link could make the tool append to
    a file outside the vault, or copy one (``/etc/passwd``) into the archive."""
    root = _vault_root_of(path)
    if root is None:
        return
    real = _realpath(path)
    root_real = _real_dir(root)
    if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
        raise OutsideVault(
            f"{path} resolves outside the vault (to {real}) through a symbolic link; refusing to read or "
            "write it. Nothing was written; replace the link with the file itself"
        )


def _open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that never blocks on a FIFO and refuses anything but a regular file."""
    try:
        fd = os.open(str(path), flags | O_BINARY | O_NONBLOCK, mode)
    except (FileNotFoundError, NotADirectoryError):
        raise
    except OSError:
        # A socket cannot be opened at all (ENXIO), a folder not for writing: name what it is.
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(
                f"{path} is {_kind(st.st_mode)}, not a regular file; refusing to read or write it (nothing was written)"
            ) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(
                f"{path} is {_kind(st.st_mode)}, not a regular file; refusing to read or write it (nothing was written)"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


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
            try:
                with open(key, "rb") as fh:
                    same = fh.read() == data
            except OSError:
                same = data is None
            if not same:
                out.append(key)
        return out


def dry_running() -> bool:
    return _overlay() is not None


def _key(path: Path) -> str:
    return os.path.abspath(path)


def _overlaid(path: Path) -> object:
    ov = _overlay()
    return _MISSING if ov is None else ov.get(_key(path), _MISSING)


def remove_file(path: Path) -> None:
    """Remove a file (retrying Windows sharing violations); in a dry run it is only recorded."""
    ov = _overlay()
    if ov is not None:
        ov[_key(path)] = None
        return
    _retry(path.unlink, f"remove {path}")


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist. Every read of a vault file goes through
    here: a FIFO, socket or device is refused (never waited on), a link outside the vault too."""
    check_inside_vault(path)
    hit = _overlaid(path)
    if hit is not _MISSING:
        return hit  # type: ignore[return-value]

    def _do() -> bytes:
        fd = _open_regular(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    try:
        return _retry(_do, f"read {path}")  # type: ignore[return-value]
    except FileNotFoundError:
        return None
    except OSError as exc:  # no permission, a folder on Windows…: say which path
        raise AgentmemError(f"cannot read {path}: {exc.strerror or exc}; nothing was written", code="io_error") from exc


def read_from(path: Path, offset: int) -> bytes | None:
    """The file's bytes from ``offset`` to its end (None when it does not exist); as ``read_bytes``."""
    check_inside_vault(path)
    hit = _overlaid(path)
    if hit is not _MISSING:
        return None if hit is None else hit[offset:]  # type: ignore[index]

    def _do() -> bytes:
        fd = _open_regular(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            fh.seek(offset)
            return fh.read()

    try:
        return _retry(_do, f"read {path}")  # type: ignore[return-value]
    except FileNotFoundError:
        return None
    except OSError as exc:  # as read_bytes: an error naming the path, never a traceback
        raise AgentmemError(f"cannot read {path}: {exc.strerror or exc}", code="io_error") from exc


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


def read_text(path: Path) -> str | None:
    data = read_bytes(path)
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
    if sys.platform == "win32":  # directories cannot be opened for fsync on Windows
        return
    try:
        fd = os.open(str(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_target(path: Path) -> Path:
    """Where a whole-file write of ``path`` goes: the link's target when ``path`` is a symlink
    inside the vault (the link stays a link, never silently replaced by a copy)."""
    check_inside_vault(path)
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
    _retry(lambda: os.replace(tmp, path), f"replace {path}")
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
        ov[_key(path)] = data
        return
    path = _write_target(path)
    folder = path.parent
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    ensure_writable(existing)  # the folder we would create anything in must be writable
    ensure_writable(path)
    if existing == folder:
        ensure_writable(folder)  # the temporary file is created there (root would ignore the mode)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(f"could not create {folder}: {exc.strerror or exc}") from exc
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
            os.chmod(tmp, mode)
        except OSError:
            pass
        swap_in(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise WriteFailed(f"could not write {path}: {exc.strerror or exc}; the previous file is intact") from exc


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


O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX: opening a FIFO must not wait for a peer
O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


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
    check_inside_vault(path)
    ensure_writable(path)
    data = stored_bytes(path, data)
    ov = _overlay()
    if ov is not None:
        old = read_bytes(path) or b""
        sep = b"\n" if fresh_line and old and not old.endswith(b"\n") else b""
        ov[_key(path)] = old + sep + data
        return
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
        _retry(_do, f"append to {path}")
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
    """Derived state that can be rebuilt at any time (docs/performance.md): temp file + rename, no
    fsync. Read-only folders are honoured as for vault files, and so is the symlink rule. Never
    written in place: a cache that is a link (symbolic or hard) to a vault file is replaced by the
    rename, and the file it pointed to is left as it was."""
    check_inside_vault(path)
    # Not redacted again: a cache is derived from vault files that were redacted when stored, and
    # redacting the board's summary (megabytes on a big board) on every sessionStart would cost
    # the hook more than its own work (docs/redaction.md, docs/performance.md).
    ov = _overlay()
    if ov is not None:
        ov[_key(path)] = data
        return
    for p in (path.parent.parent, path.parent, path):
        ensure_writable(p)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        swap_in(tmp, path, durable=False)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def load_cache(path: Path, version: int) -> tuple[object, object] | None:
    """``(of, data)`` of a cache file written by ``save_cache`` at this ``version``; None when it
    is missing, unreadable, torn or of another version. ``of`` is what the data was derived from
    (a stamp, a CRC): the caller compares it with the source as it is now. The one way every
    derived cache is versioned and invalidated (docs/performance.md)."""
    import json

    try:
        body = json.loads(read_bytes(path) or b"null")
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
