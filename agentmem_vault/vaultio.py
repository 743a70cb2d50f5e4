"""The only module that writes vault files.

Every change follows the safe-write rule (docs/board.md "Writing rules"), enforced here: take the vault's exclusive lock
(kept outside the synced folder), re-read the file under the lock, change only the target, write
(append in place, or an atomic temp+fsync+replace with retries on Windows sharing violations),
re-read and verify, and journal the change to ``memory/.agentmem/journal.jsonl`` *before* it is
made, so that anything removed can be recovered from the journal.

Read-only files and folders are honoured even for root (``chmod a-w`` means "do not touch"); on
Windows only files, because Windows ignores the read-only attribute of folders.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from agentmem_vault import clock
from agentmem_vault.config import Vault, vault_config
from agentmem_vault.errors import (
    AgentmemError,
    IndexFormatError,
    NotRegularFile,
    OutsideVault,
    Refused,
    SnapshotFormatError,
    VerifyFailed,
    WriteFailed,
)
from agentmem_vault.locking import exclusive_lock
from agentmem_vault.model import index_table as it

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

    from agentmem_vault.ops.board_cache import BoardState

_RETRY_SECONDS = 3.0
_WINDOWS = sys.platform == "win32"
TMP_SUFFIX = ".agentmem-tmp"


# -- primitive file operations --------------------------------------------------------------------


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


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist. Every read of a vault file goes through
    here: a FIFO, socket or device is refused (never waited on), a link outside the vault too."""
    check_inside_vault(path)

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


def _read_from(path: Path, offset: int) -> bytes | None:
    """The file's bytes from ``offset`` to its end (None when it does not exist); as ``read_bytes``."""
    check_inside_vault(path)

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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old or the new file."""
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
    if folder.is_dir():
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


def _row_ids(text: str) -> list[str]:
    """The Session IDs of a board's rows; for a board too damaged to parse (doctor repairs those),
    every valid ID on its table lines (a few too many burned is harmless; one too few is not)."""
    try:
        return it.parse_index(text).ids()
    except AgentmemError:
        from agentmem_vault.model.ids import find_ids

        return find_ids("".join(ln for ln in it.split_lines(text) if ln.lstrip().startswith("|")))


def write_cache_file(path: Path, data: bytes, *, in_place: bool = False) -> None:
    """Derived state that can be rebuilt at any time (docs/performance.md): temp file + rename, no
    fsync. Read-only folders are honoured as for vault files, and so is the symlink rule.

    ``in_place``: truncate and rewrite the file itself (no new file, no rename: about half the
    cost), for a JSON cache whose every reader treats unparseable content as "no cache", so a
    reader that catches it half written, or a crash in the middle, costs a rebuild, nothing more."""
    check_inside_vault(path)
    for p in (path.parent.parent, path.parent, path):
        ensure_writable(p)
    path.parent.mkdir(parents=True, exist_ok=True)
    if in_place and not os.path.islink(path):  # a link is replaced (below), never written through

        def _do() -> None:
            fd = _open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)

        _retry(_do, f"write {path}")
        return
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


# -- the locked writer ----------------------------------------------------------------------------


class _Transaction:
    """The context manager of ``VaultWriter.transaction`` (a class: no contextlib on the hook path)."""

    __slots__ = ("_outer", "_writer")

    def __init__(self, writer: VaultWriter) -> None:
        self._writer = writer
        self._outer = False

    def __enter__(self) -> VaultWriter:
        w = self._writer
        if w._undo is None:  # nested: the outer transaction owns the undo log
            self._outer = True
            w._undo = []
            w._created_dirs = []
        return w

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._outer:
            return
        w = self._writer
        log, w._undo = w._undo, None
        if exc_type is not None:
            w._rollback(log or [])


class VaultWriter:
    """Holds the vault lock for one operation and performs verified, journaled writes.

    Usage::

        with VaultWriter(vault, "register") as w:
            doc = w.index()
            w.append_row(row)
    """

    def __init__(self, vault: Vault, command: str, *, timeout: float | None = None, now: str | None = None):
        self.vault = vault
        self.command = command
        if timeout is None:
            try:
                timeout = float(vault_config(vault).get("lock_timeout", 10.0))
            except (AgentmemError, ValueError, TypeError):
                timeout = 10.0
        self.timeout = timeout
        self.now = now
        self._cm: exclusive_lock | None = None
        self.changes: list[dict] = []
        self._undo: list[tuple[Path, bytes | None]] | None = None
        self._created_dirs: list[Path] = []
        self.touched: list[Path] = []  # every file written, moved or removed (for the recall index)

    def __enter__(self) -> VaultWriter:
        cm = exclusive_lock(self.vault.lock_path("index"), self.timeout)
        cm.__enter__()
        self._cm = cm
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._cm is not None
        self._cm.__exit__(*exc)
        lt = self.vault.longterm_dir.absolute()
        notes = [p for p in self.touched if p.absolute().is_relative_to(lt)]
        if notes:  # after the lock: the recall index has its own (recall/refresh.py)
            from agentmem_vault.recall.refresh import notes_written

            notes_written(self.vault, notes)

    # -- all-or-nothing ---------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        """``with w.transaction():`` everything written inside is undone (files restored byte for
        byte, new files removed) if the block raises, so a multi-file operation is either fully
        done or not at all. Nested transactions belong to the outermost one."""
        return _Transaction(self)

    def _remember(self, path: Path) -> None:
        if self._undo is not None and all(p != path for p, _ in self._undo):
            self._undo.append((path, read_bytes(path)))
            # Folders this write will create are removed again on rollback (and only those).
            missing = path.parent
            while not missing.exists() and missing != self.vault.memory and missing.parent != missing:
                if missing not in self._created_dirs:
                    self._created_dirs.append(missing)
                missing = missing.parent

    def _rollback(self, log: list[tuple[Path, bytes | None]]) -> None:
        if not log:
            return  # refused before its first write (unknown ID, bad input): nothing to undo or journal
        failed: list[str] = []
        for path, data in reversed(log):
            try:
                if data is None:
                    if path.exists():
                        _retry(path.unlink, f"remove {path}")
                elif read_bytes(path) != data:
                    atomic_write_bytes(path, data)
            except (OSError, AgentmemError) as exc:
                failed.append(f"{path}: {exc}")
        for folder in sorted(self._created_dirs, key=lambda p: len(p.parts), reverse=True):
            try:
                folder.rmdir()
            except OSError:
                pass  # not empty or already gone: leave it
        self._created_dirs = []
        try:
            self.journal("rollback", restored=[str(p) for p, _ in log], failed=failed)
        except AgentmemError:
            pass
        if failed:
            raise WriteFailed(
                "rollback could not restore: " + "; ".join(failed) + " (see memory/.agentmem/journal.jsonl)",
                code="rollback_incomplete",
            )

    # -- journal ----------------------------------------------------------------------------
    def journal(
        self,
        action: str,
        *,
        session_id: str | None = None,
        path: Path | None = None,
        durable: bool = True,
        **data: object,
    ) -> None:
        entry: dict[str, object] = {
            "time": clock.iso_now(),
            "command": self.command,
            "action": action,
            "session_id": session_id,
            "path": str(path.relative_to(self.vault.root))
            if path and path.is_relative_to(self.vault.root)
            else (str(path) if path else None),
            "pid": os.getpid(),
        }
        entry.update(data)
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        jp = self.vault.journal_path
        try:
            make_dirs(jp.parent)
            _rotate_journal(jp)
            append_line(jp, line, durable=durable)
        except (OSError, WriteFailed) as exc:
            raise WriteFailed(f"could not write the journal {jp}: {exc}; nothing was changed") from exc
        self.changes.append(entry)

    # -- index ------------------------------------------------------------------------------
    def index_text(self) -> str:
        t = read_text(self.vault.index_path)
        return "" if t is None else t

    def index(self) -> it.IndexDoc:
        return it.parse_index(self.index_text())

    def _verify_index(self, expected: str) -> it.IndexDoc:
        got = read_text(self.vault.index_path)
        if got != expected:
            raise VerifyFailed(
                "memory/index.md changed during the write or did not verify; re-run the command "
                "(the journal holds the intended change)"
            )
        return it.parse_index(got)

    def read_index(self) -> tuple[str, it.IndexDoc]:
        text = self.index_text()
        return text, it.parse_index(text)

    def append_row(self, row: it.Row, *, strict: bool = True, read: tuple[str, it.IndexDoc] | None = None) -> None:
        """Append one row. ``read`` = (text, doc) already read under this same lock, to skip a re-read."""
        before, doc = read if read is not None else (lambda t: (t, it.parse_index(t)))(self.index_text())
        if strict:
            doc.check_writable()
        if doc.find(row.session_id):
            raise IndexFormatError(f"Session ID {row.session_id} already has a row; refusing to add a second")
        if it.split_cells(it.render_row(row)) != [it.escape_cell(c).replace("\\|", "|") for c in row.cells()]:
            raise WriteFailed(f"row {row.session_id} would not read back as written")
        new_text, tail = it.append_row(doc, row)
        self._remember(self.vault.index_path)
        self.journal(
            "append_row", session_id=row.session_id, path=self.vault.index_path, before=None, after=row.to_dict()
        )
        make_dirs(self.vault.memory)
        if not before:  # missing or empty index: create it with the header
            new_text = it.new_index_text() + it.render_row(row) + "\n"
            atomic_write_text(self.vault.index_path, new_text)
        elif tail is not None:
            append_bytes(self.vault.index_path, tail.encode("utf-8"))
        else:
            atomic_write_text(self.vault.index_path, new_text)
        # Byte-exact comparison with what we meant to write: the new row is there, every other
        # byte is as it was, and nobody else wrote in between.
        if read_text(self.vault.index_path) != new_text:
            raise VerifyFailed(
                f"memory/index.md did not verify after adding {row.session_id}; the journal holds the intended row"
            )

    def append_row_known(self, row: it.Row, state: BoardState) -> tuple[bytes, list[int] | None]:
        """Append one row to a board described by ``state`` (ops/board_cache.py: every row well
        formed, the table running to the end of the file; its bytes as read under this lock, or
        its stat matching the summary's), without parsing, or even reading, the other rows.

        Verified: the board must still be the one ``state`` describes (its stat, or its bytes),
        must grow by exactly the new line, and the bytes read back after the old end must be that
        line. Returns the appended bytes and the board's stat after the append (or None)."""
        from agentmem_vault.ops.board_cache import board_stat

        if not (state.writable and state.appendable):
            raise WriteFailed("append_row_known needs a well-formed board whose table ends the file")
        if state.has_row(row.session_id):
            raise IndexFormatError(f"Session ID {row.session_id} already has a row; refusing to add a second")
        line = it.render_row(row)
        if it.split_cells(line) != [it.escape_cell(c).replace("\\|", "|") for c in row.cells()]:
            raise WriteFailed(f"row {row.session_id} would not read back as written")
        nl = state.newline
        path = self.vault.index_path
        tail = (("" if state.ends_nl else nl) + line + nl).encode("utf-8")
        changed = VerifyFailed(
            f"memory/index.md changed before {row.session_id} could be added (another program wrote it); "
            "nothing was written, run the command again"
        )
        if state.stat is not None:
            if board_stat(path) != state.stat:
                raise changed
        elif read_bytes(path) != state.data:
            raise changed
        self._remember(path)
        # Not fsynced on its own: the row's fsync right after makes what matters durable, and
        # a lost audit line costs no row and no ID (docs/reliability.md, "What a power cut may cost").
        self.journal(
            "append_row", session_id=row.session_id, path=path, before=None, after=row.to_dict(), durable=False
        )
        append_bytes(path, tail)
        # Verified without reading the whole board: the stat is taken before the read-back, so a
        # later write by another program changes it and the next hook reads the board again.
        after = board_stat(path)
        back = _read_from(path, state.size)
        if back != tail or (after is not None and after[0] != state.size + len(tail)):
            raise VerifyFailed(
                f"memory/index.md did not verify after adding {row.session_id}; the journal holds the intended row"
            )
        return tail, after

    def update_row(
        self, session_id: str, change: Callable[[it.Row], it.Row], *, strict: bool = True
    ) -> tuple[it.Row, it.Row]:
        before_text = self.index_text()
        doc = it.parse_index(before_text)
        if strict:
            doc.check_writable()
        old = doc.get(session_id)
        new = change(old)
        if new.session_id != session_id:
            raise WriteFailed("an update may not change the Session ID")
        if new == old:
            return old, new
        new_text = it.replace_row(doc, session_id, new)
        self._remember(self.vault.index_path)
        self.journal(
            "update_row", session_id=session_id, path=self.vault.index_path, before=old.to_dict(), after=new.to_dict()
        )
        atomic_write_text(self.vault.index_path, new_text)
        after = self._verify_index(new_text)
        if after.find(session_id) != new:
            raise VerifyFailed(f"row {session_id} did not verify after the write")
        _refresh_board_cache(self.vault, new_text, after)
        return old, new

    def remove_row(self, session_id: str, *, strict: bool = True) -> it.Row:
        before_text = self.index_text()
        doc = it.parse_index(before_text)
        if strict:
            doc.check_writable()
        old = doc.get(session_id)
        new_text = it.remove_row(doc, session_id)
        self._remember(self.vault.index_path)
        self.journal("remove_row", session_id=session_id, path=self.vault.index_path, before=old.to_dict(), after=None)
        self._burn([session_id])
        atomic_write_text(self.vault.index_path, new_text)
        after = self._verify_index(new_text)
        if after.find(session_id) is not None:
            raise VerifyFailed(f"row {session_id} is still in memory/index.md after removal")
        _refresh_board_cache(self.vault, new_text, after)
        return old

    def write_index_text(self, new_text: str, *, reason: str, **journal_data: Any) -> None:
        """Whole-table rewrite computed by the caller from the text read under this lock."""
        before = self.index_text()
        if new_text == before:
            return
        kept = set(it.parse_index(new_text).ids())  # never write a table we could not read back
        self._remember(self.vault.index_path)
        self.journal(reason, path=self.vault.index_path, before_text=before, **journal_data)
        self._burn([sid for sid in _row_ids(before) if sid not in kept])
        atomic_write_text(self.vault.index_path, new_text)
        _refresh_board_cache(self.vault, new_text, self._verify_index(new_text))

    def _burn(self, removed: list[str]) -> None:
        """IDs whose rows this write removes go to the issued-IDs ledger, fsynced, before the table
        is written: from then on the ledger alone keeps them from being handed out again
        (docs/reliability.md; the registration's own ledger line is not fsynced). Not undone by a
        rollback: the ledger is append-only, an ID burned too many is harmless, and restoring it
        (before the board, in reverse order) would free the ID if the board's restore then failed."""
        if not removed:
            return
        path = self.vault.issued_ids_path
        try:
            make_dirs(path.parent)
            append_line(path, "".join(sid + "\n" for sid in removed).encode("utf-8"))
        except (OSError, WriteFailed) as exc:
            raise WriteFailed(f"could not record removed Session IDs in {path}: {exc}; nothing was changed") from exc

    # -- other files ------------------------------------------------------------------------
    def write_file(self, path: Path, text: str, *, session_id: str | None = None, action: str = "write_file") -> bool:
        """Atomic, verified write of a whole file; returns False when the content was already so."""
        self._check_inside(path)
        before = read_text(path)
        if before == text:
            return False
        self._remember(path)
        self.journal(action, session_id=session_id, path=path, before_text=before, after_sha=_sha(text))
        atomic_write_text(path, text)
        if read_text(path) != text:
            raise VerifyFailed(f"{path} did not verify after the write")
        return True

    def move_file(self, src: Path, dst: Path, *, session_id: str | None = None) -> None:
        self._check_inside(src)
        self._check_inside(dst)
        if dst.exists():
            raise WriteFailed(f"{dst} already exists; refusing to overwrite it")
        if src.is_symlink():
            raise Refused(
                f"{src} is a symbolic link; only regular files are moved (replace the link with the file itself)"
            )
        data = read_bytes(src)
        if data is None:
            raise WriteFailed(f"{src} does not exist")
        ensure_writable(src.parent)
        self._remember(src)
        self._remember(dst)
        self.journal("move_file", session_id=session_id, path=src, to=str(dst))
        # Copy-then-delete rather than rename: the destination is verified before the source goes,
        # and it works across the folders a sync client may treat as separate.
        atomic_write_bytes(dst, data)
        if read_bytes(dst) != data:
            raise VerifyFailed(f"{dst} did not verify after the move")
        try:
            _retry(src.unlink, f"remove {src}")
        except OSError as exc:
            raise WriteFailed(f"copied {src} to {dst} but could not remove the original: {exc}") from exc

    def delete_file(self, path: Path, *, session_id: str | None = None) -> None:
        self._check_inside(path)
        before = read_text(path)
        if before is None:
            return
        ensure_writable(path.parent)
        self._remember(path)
        self.journal("delete_file", session_id=session_id, path=path, before_text=before)
        try:
            _retry(path.unlink, f"remove {path}")
        except OSError as exc:
            raise WriteFailed(f"could not remove {path}: {exc}") from exc

    def remove_temp_file(self, path: Path) -> bool:
        """Remove a leftover atomic-write temporary (``.<name>.<pid>.<n>.agentmem-tmp``). Its bytes
        may be anything, even cut short, so it is journaled by size and hash, not text. False: it
        was already gone."""
        import hashlib

        self._check_inside(path)
        if not path.name.endswith(TMP_SUFFIX):
            raise WriteFailed(f"{path} is not an agentmem temporary file; refusing to remove it")
        data = read_bytes(path)
        if data is None:
            return False
        ensure_writable(path.parent)
        self._remember(path)
        self.journal("remove_temp_file", path=path, bytes=len(data), sha=hashlib.sha256(data).hexdigest()[:16])
        try:
            _retry(path.unlink, f"remove {path}")
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise WriteFailed(f"could not remove {path}: {exc.strerror or exc}") from exc
        return True

    def _check_inside(self, path: Path) -> None:
        mem = self.vault.memory.absolute()
        p = path.absolute()
        if ".." in p.parts or not p.is_relative_to(mem):
            raise WriteFailed(f"refusing to write outside {mem}: {path}")
        check_inside_vault(path)
        self.touched.append(path)


JOURNAL_ROTATE_BYTES = 8 * 1024 * 1024


def _rotate_journal(jp: Path, limit: int | None = None) -> None:
    """Start a new journal file past ``limit`` bytes. The old one is renamed, never deleted, so
    every removed row stays recoverable (``journal.read_journal`` reads all of them in order).
    Called under the vault lock, so two writers never rotate at once."""
    try:
        if jp.stat().st_size < (JOURNAL_ROTATE_BYTES if limit is None else limit):
            return
    except FileNotFoundError:
        return
    stamp = clock.stamp()
    n = 1  # a fixed-width counter keeps name order = rotation order within one second
    while (target := jp.with_name(f"{jp.stem}-{stamp}-{n:03d}{jp.suffix}")).exists():
        n += 1
    _retry(lambda: os.replace(jp, target), f"rotate {jp}")


def journal_files(jp: Path) -> list[Path]:
    """Rotated journals oldest first, then the current one."""
    rotated = sorted(jp.parent.glob(f"{jp.stem}-*{jp.suffix}")) if jp.parent.is_dir() else []
    return rotated + [jp]


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _refresh_board_cache(vault: Vault, text: str, doc: it.IndexDoc) -> None:
    """Keep the hook's board summary current after a whole-table write (best effort)."""
    from agentmem_vault.ops.board_cache import refresh

    refresh(vault, text, doc)


# -- backups and set-aside copies (one naming scheme: <what>-<YYYYMMDD-HHMMSS>[-N]) -------------

BACKUP_TAG = "agentmem-backup"


def free_path(candidate: Callable[[int], Path]) -> Path:
    """``candidate(1)``, else ``candidate(2)``… : the first that does not exist (nothing is overwritten)."""
    n = 1
    while (p := candidate(n)).exists():
        n += 1
    return p


def _numbered(base: str, n: int) -> str:
    return base if n == 1 else f"{base}-{n}"


def backup_file(path: Path, data: bytes | None = None) -> Path | None:
    """Copy ``path`` (or ``data``, its bytes as read earlier) to ``<name>.agentmem-backup-<stamp>``
    next to it before it is replaced; None when there is nothing to back up. For files outside
    the vault (agent rules, hook configs) that a person may want back."""
    if data is None:
        data = read_bytes(path)
        if data is None:
            return None
    stamp = clock.stamp()
    dst = free_path(lambda n: path.with_name(_numbered(f"{path.name}.{BACKUP_TAG}-{stamp}", n)))
    atomic_write_bytes(dst, data)
    return dst


def backup_dir(into: Path, label: str) -> Path:
    """A new (not yet created) backup folder ``<into>/<stamp>-<label>[-N]``."""
    stamp = clock.stamp()
    return free_path(lambda n: into / _numbered(f"{stamp}-{label}", n))


def backup_files(paths: Iterable[Path], *, root: Path, into: Path, label: str) -> Path:
    """Copy several files into one new folder ``<into>/<stamp>-<label>`` at their paths relative
    to ``root`` (doctor's backups under memory/.agentmem/backups/); returns that folder."""
    folder = backup_dir(into, label)
    for p in paths:
        data = read_bytes(p)
        if data is not None:
            atomic_write_bytes(folder / p.relative_to(root), data)
    return folder


CONFLICTS_DIR = "conflicts"  # under memory/.agentmem/: index conflict copies after they were folded


def conflict_destination(state_dir: Path, name: str) -> Path:
    return set_aside_path(state_dir / CONFLICTS_DIR, name)


def set_aside_path(folder: Path, name: str) -> Path:
    """Where a file moved out of the way goes (a folded conflict copy into .agentmem/conflicts/):
    ``<folder>/<name>``, or ``<stem>.<stamp>[-N].md`` when that is taken."""
    dst = folder / name
    if not dst.exists():
        return dst
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    stamp = clock.stamp()
    return free_path(lambda n: folder / (_numbered(f"{stem}.{stamp}", n) + (f".{ext}" if ext else "")))
