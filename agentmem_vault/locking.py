"""A small inter-process exclusive lock over the OS primitive, without importing ``filelock``.

Why not ``filelock`` itself: importing it costs ~100 ms (logging, inspect, typing…) and the
sessionStart hook runs on every new chat. This module uses the same primitive on the same kind of
file as filelock does (``fcntl.flock`` on POSIX, ``msvcrt.locking`` of byte 0 on Windows), so a
``filelock.FileLock`` on the same path excludes us and we exclude it.

Re-entrant within a process (nested operations share one OS lock) and thread-safe.
"""

from __future__ import annotations

import _thread  # not threading: its import costs the sessionStart hook ~1 ms (docs/performance.md)
import os
import sys
import time
from pathlib import Path

from agentmem_vault.errors import LockTimeout, WriteFailed
from agentmem_vault.fs import open_lock_file

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        try:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


_registry = _thread.allocate_lock()
_thread_locks: dict[str, _thread.RLock] = {}
_held: dict[str, list[int]] = {}  # path -> [fd, depth]


class exclusive_lock:  # noqa: N801 - used as ``with exclusive_lock(path, timeout):``
    """Hold an exclusive lock on ``path`` (created if missing) or raise LockTimeout.

    A class rather than a ``contextlib.contextmanager``: contextlib's import is a measurable share
    of the sessionStart hook's budget (docs/performance.md)."""

    __slots__ = ("_entry", "_key", "_rlock", "path", "timeout", "what")

    def __init__(self, path: Path, timeout: float = 10.0, *, what: str = "the memory index") -> None:
        self.path, self.timeout, self.what = path, timeout, what
        self._key = str(path)
        self._rlock: _thread.RLock | None = None
        self._entry: list[int] | None = None

    def __enter__(self) -> None:
        from agentmem_vault.fs import dry_running

        if dry_running():
            return  # a dry run writes nothing, not even a lock file (fs.DryRun)
        path, timeout = self.path, self.timeout
        with _registry:
            rlock = _thread_locks.setdefault(self._key, _thread.RLock())
        deadline = time.monotonic() + max(0.0, timeout)
        if not rlock.acquire(timeout=max(0.0, timeout)):
            raise LockTimeout(_timeout_message(path, timeout, self.what))
        try:
            entry = _held.get(self._key)
            if entry is not None:  # re-entrant use from the same thread
                entry[1] += 1
            else:
                entry = _held[self._key] = [_acquire(path, deadline, timeout, self.what), 1]
        except BaseException:
            rlock.release()
            raise
        self._rlock, self._entry = rlock, entry

    @property
    def outermost(self) -> bool:
        """Whether this hold took the lock (rather than re-entering one this thread holds)."""
        return self._entry is not None and self._entry[1] == 1

    def __exit__(self, *exc: object) -> None:
        rlock, entry = self._rlock, self._entry
        self._rlock = self._entry = None
        if rlock is None or entry is None:
            return
        try:
            entry[1] -= 1
            if entry[1] == 0:
                del _held[self._key]
                _unlock(entry[0])
                os.close(entry[0])
        finally:
            rlock.release()


def _open_busy(exc: OSError) -> bool:
    # Windows: a lock file that another process has locked, or is deleting (filelock removes it on
    # release), cannot be opened with truncation; EACCES there means "busy, retry", as in filelock.
    return sys.platform == "win32" and isinstance(exc, PermissionError)


def _acquire(path: Path, deadline: float, timeout: float, what: str) -> int:
    """Open ``path`` and lock it, retrying until ``deadline``; returns the locked descriptor."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(_unusable_message(path, exc), code="lock_unavailable") from exc
    fd: int | None = None
    delay = 0.002
    try:
        while True:
            if fd is None:
                try:
                    fd = open_lock_file(path)  # never O_TRUNC: a linked lock must not empty its target
                except OSError as exc:
                    if not _open_busy(exc):
                        raise WriteFailed(_unusable_message(path, exc), code="lock_unavailable") from exc
            if fd is not None and _try_lock(fd):
                return fd
            if time.monotonic() >= deadline:
                raise LockTimeout(_timeout_message(path, timeout, what))
            time.sleep(delay)
            delay = min(delay * 1.5, 0.05)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise


def _unusable_message(path: Path, exc: OSError) -> str:
    return (
        f"cannot use the lock file {path}: {exc.strerror or exc}. Nothing was written; locks live in the "
        "user cache folder (set AGENTMEM_CACHE_DIR to a writable local folder)"
    )


def _timeout_message(path: Path, timeout: float, what: str) -> str:
    return (
        f"could not lock {what} within {timeout:g} s: another agentmem process holds {path}. "
        "Nothing was written; try again, or raise lock_timeout in memory/.agentmem/config.yaml"
    )
