"""The vault's one writer: the lock, the journal and the all-or-nothing transaction.

Every change follows the safe-write rule (docs/board.md "Writing rules"): take the vault's exclusive
lock (kept outside the synced folder), re-read the file under the lock, change only the target,
write it (``fs``: append in place, or an atomic temp+fsync+replace), re-read and verify, and journal
the change to ``memory/.agentmem/journal.jsonl`` *before* it is made, so that anything removed can
be recovered from the journal. The board's own writes (rows, the table) are ``board.store``'s,
built on this class; this module never imports the board.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from agentmem_vault import clock, redaction
from agentmem_vault.config import vault_config
from agentmem_vault.errors import AgentmemError, Refused, VerifyFailed, WriteFailed
from agentmem_vault.fs import (
    TMP_SUFFIX,
    _retry,
    remove_file,
    append_line,
    atomic_write_bytes,
    atomic_write_text,
    check_path,
    dry_running,
    ensure_writable,
    make_dirs,
    read_bytes,
    read_text,
    write_cache_file,
)
from agentmem_vault.locking import exclusive_lock
from agentmem_vault.vault import user_cache_dir

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from typing import Any, Self

    from agentmem_vault.vault import Vault


CRASH_ENV = "AGENTMEM_CRASH_AT"  # "txn:N": die (as SIGKILL would) once a transaction wrote N files
_MANIFEST = "manifest.jsonl"


def undo_folder(vault: Vault) -> Path:
    """Where open transactions keep the previous bytes of the files they change: beside the
    vault's lock, outside the synced folder (docs/reliability.md, "Crash safety")."""
    return user_cache_dir() / "undo" / vault.key


def _crash_point(written: int) -> None:
    if os.environ.get(CRASH_ENV) == f"txn:{written}":
        os._exit(137)


class _UndoRecord:
    """A transaction's previous bytes on disk, ``<undo folder>/<pid>-<n>/``: one file per changed
    path holding its bytes before the transaction (``<i>.old``), and ``manifest.jsonl``, one line
    per path (where, which copy, or none when it did not exist) and per folder the transaction
    creates. Each line is written before its file is changed; the record is removed once the
    transaction is done or undone. A process killed in between leaves it for the next writer,
    which puts every file back (``VaultWriter._recover``): old or new files, never a mix.
    Not fsynced: a killed process loses nothing the kernel was given; a power cut may lose it."""

    __slots__ = ("count", "folder")

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def add_entry(self, entry: dict) -> None:
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        if self.count == 0:  # a new manifest replaces whatever is at its name, never appends through it
            write_cache_file(self.folder / _MANIFEST, line)
        else:
            append_line(self.folder / _MANIFEST, line, durable=False)
        self.count += 1

    def add(self, path: Path, data: bytes | None) -> None:
        copy = None
        if data is not None:  # the folder exists: the record's first line (the command) made it
            copy = f"{self.count}.old"
            # By the fs rule, as every file of the cache: a link or a hard link planted at the
            # copy's name is replaced (or refused when it leads out of the cache), never written through.
            write_cache_file(self.folder / copy, data)
        self.add_entry({"path": str(path), "copy": copy})


def _read_record(folder: Path) -> tuple[str, list[tuple[Path, bytes | None]], list[Path]] | None:
    """(command, files with their previous bytes, folders created) of a record; None without a
    manifest."""
    try:
        raw = read_bytes(folder / _MANIFEST)
    except AgentmemError:  # a FIFO, a link out of the cache...: not a record of ours
        raw = None
    if raw is None:
        return None
    command = ""
    files: list[tuple[Path, bytes | None]] = []
    dirs: list[Path] = []
    for line in raw.splitlines():
        try:
            e = json.loads(line)
            if "command" in e:
                command = str(e["command"])
            elif "dir" in e:
                dirs.append(Path(e["dir"]))
            else:
                copy = e["copy"]
                data = None if copy is None else read_bytes(folder / copy)
                if copy is None or data is not None:  # a missing copy: its file was not changed yet
                    files.append((Path(e["path"]), data))
        except (OSError, ValueError, KeyError, TypeError, AgentmemError):
            continue  # a line cut off by the kill (its file was not changed yet), or not ours to read
    return command, files, dirs


def _records(vault: Vault) -> list[tuple[Path, tuple[str, list[tuple[Path, bytes | None]], list[Path]] | None]]:
    """Every undo record left of this vault, oldest first, with what ``_read_record`` reads of it
    (the usual case: no record, one failed listdir)."""
    root = undo_folder(vault)
    try:
        return [(root / name, _read_record(root / name)) for name in sorted(os.listdir(root))]
    except OSError:
        return []


def pending_undo(vault: Vault) -> list[tuple[str, int]]:
    """(command, files) of every transaction killed halfway and not undone yet (doctor)."""
    return [(got[0], len(got[1])) for _, got in _records(vault) if got is not None and got[1]]


def _discard(folder: Path) -> None:
    """Remove a record: the manifest first (without it nothing is restored), then the copies."""
    try:
        os.unlink(folder / _MANIFEST)
    except OSError:
        pass
    try:
        for name in os.listdir(folder):
            os.unlink(folder / name)
        os.rmdir(folder)
    except OSError:
        pass


def _restore(files: list[tuple[Path, bytes | None]], dirs: list[Path]) -> list[str]:
    """Put ``files`` back as they were (newest change first) and remove the folders created;
    the paths that could not be restored, with why."""
    failed: list[str] = []
    for path, data in reversed(files):
        try:
            if data is None:
                if os.path.lexists(path):
                    remove_file(path)
            elif read_bytes(path) != data:
                atomic_write_bytes(path, data)
        except (OSError, AgentmemError) as exc:
            failed.append(f"{path}: {exc}")
    for folder in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty or already gone: leave it
    return failed


class _Transaction:
    """The context manager of ``VaultWriter.transaction`` (a class: no contextlib on the hook path)."""

    __slots__ = ("_outer", "_writer")

    def __init__(self, writer: VaultWriter) -> None:
        self._writer = writer
        self._outer = False

    def __enter__(self) -> None:
        w = self._writer
        if w._undo is None:  # nested: the outer transaction owns the undo log
            self._outer = True
            w._undo = []
            w._created_dirs = []

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._outer:
            return
        w = self._writer
        log, w._undo = w._undo, None
        record, w._record = w._record, None
        if exc_type is not None:
            w._rollback(log or [])  # raises when a file could not be put back: the record stays
        else:
            _crash_point(len(log or []))
        if record is not None:
            _discard(record.folder)


class VaultWriter:
    """Holds the vault lock for one operation and performs verified, journaled writes (the
    board's own are ``board.store.BoardWriter``'s)."""

    def __init__(self, vault: Vault, command: str, *, timeout: float | None = None):
        self.vault = vault
        self.command = command
        if timeout is None:
            try:
                timeout = float(vault_config(vault).get("lock_timeout", 10.0))
            except (AgentmemError, ValueError, TypeError):
                timeout = 10.0
        self.timeout = timeout
        self._cm: exclusive_lock | None = None
        self._undo: list[tuple[Path, bytes | None]] | None = None
        self._created_dirs: list[Path] = []
        self._record: _UndoRecord | None = None
        self.recovered: list[tuple[str, int]] = []  # (command, files put back) of killed transactions undone
        self.touched: list[Path] = []  # every file written, moved or removed (recall/refresh.py NoteWriter)

    def __enter__(self) -> Self:
        cm = exclusive_lock(self.vault.lock_path("index"), self.timeout)
        cm.__enter__()
        self._cm = cm
        if cm.outermost and not dry_running():  # a dry run changes nothing, not even this
            try:
                self._recover()
            except BaseException:
                self.__exit__(None, None, None)
                raise
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._cm is not None
        self._cm.__exit__(*exc)

    # -- all-or-nothing ---------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        """``with w.transaction():`` everything written inside is undone (files restored byte for
        byte, new files removed) if the block raises, or by the next writer if the process is
        killed (``_UndoRecord``), so a multi-file operation is either fully done or not at all.
        Nested transactions belong to the outermost one."""
        return _Transaction(self)

    def _remember(self, path: Path) -> None:
        """Inside a transaction: keep ``path``'s bytes (and the folders its write will create) in
        memory and on disk before it is changed."""
        if self._undo is None or any(p == path for p, _ in self._undo):
            return
        _crash_point(len(self._undo))
        data = read_bytes(path)
        if dry_running():  # nothing is written: nothing to put back after a kill
            self._undo.append((path, data))
            return
        if self._record is None:
            self._record = _UndoRecord(undo_folder(self.vault) / f"{os.getpid()}-{time.monotonic_ns()}")
            self._record.add_entry({"command": self.command})
        # Folders this write will create are removed again on rollback (and only those).
        missing = path.parent
        while not missing.exists() and missing != self.vault.memory and missing.parent != missing:
            if missing not in self._created_dirs:
                self._created_dirs.append(missing)
                self._record.add_entry({"dir": str(missing)})
            missing = missing.parent
        self._record.add(path, data)
        self._undo.append((path, data))

    def _recover(self) -> None:
        """Undo the transactions of writers that were killed (their records are left; this writer
        holds the lock they held, so none of them is still running), oldest first."""
        for folder, got in _records(self.vault):
            if got is None:
                _discard(folder)
                continue
            command, files, dirs = got
            mem = self.vault.memory.absolute()
            inside = [(p, d) for p, d in files if p.absolute().is_relative_to(mem)]  # never outside the vault
            self.touched += [p for p, _ in inside]
            failed = _restore(inside, [d for d in dirs if d.absolute().is_relative_to(mem)])
            self.journal("recover", undone=command, restored=[str(p) for p, _ in inside], failed=failed)
            if failed:
                raise WriteFailed(
                    "an operation killed halfway could not be undone: " + "; ".join(failed) + " (run the command "
                    "again once the files are writable; the journal memory/.agentmem/journal.jsonl holds them)",
                    code="rollback_incomplete",
                )
            _discard(folder)
            if inside:
                self.recovered.append((command, len(inside)))

    def _rollback(self, log: list[tuple[Path, bytes | None]]) -> None:
        if not log:
            return  # refused before its first write (unknown ID, bad input): nothing to undo or journal
        failed = _restore(log, self._created_dirs)
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

    # -- other files ------------------------------------------------------------------------
    def write_file(self, path: Path, text: str, *, session_id: str | None = None, action: str = "write_file") -> bool:
        """Atomic, verified write of a whole file; returns False when the content was already so.
        Under memory/ the text is redacted first (docs/redaction.md): what is verified is what is stored."""
        self._check_inside(path)
        if redaction.in_memory(self.vault.memory, path):
            text = redaction.redact_text(text)
        before = read_text(path)
        if before == text:
            return False
        self._remember(path)
        self.journal(action, session_id=session_id, path=path, before_text=before, after_sha=_sha(text.encode("utf-8")))
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
        if redaction.in_memory(self.vault.memory, dst):
            data = redaction.redact_bytes(data)  # an older file's secret does not move into the archive
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
            remove_file(src)
        except OSError as exc:
            raise WriteFailed(f"copied {src} to {dst} but could not remove the original: {exc}") from exc

    def remove_temp_file(self, path: Path) -> bool:
        """Remove a leftover atomic-write temporary (``.<name>.<pid>.<n>.agentmem-tmp``). Its bytes
        may be anything, even cut short, so it is journaled by size and hash, not text. False: it
        was already gone."""
        self._check_inside(path)
        if not path.name.endswith(TMP_SUFFIX):
            raise WriteFailed(f"{path} is not an agentmem temporary file; refusing to remove it")
        data = read_bytes(path)
        if data is None:
            return False
        ensure_writable(path.parent)
        self._remember(path)
        self.journal("remove_temp_file", path=path, bytes=len(data), sha=_sha(data))
        try:
            remove_file(path)
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
        check_path(path)
        self.touched.append(path)


JOURNAL_ROTATE_BYTES = 8 * 1024 * 1024


def _rotate_journal(jp: Path) -> None:
    """Start a new journal file past ``JOURNAL_ROTATE_BYTES``. The old one is renamed, never
    deleted, so every removed row stays recoverable (``journal.read_journal`` reads all of them in
    order). Called under the vault lock, so two writers never rotate at once."""
    if dry_running():
        return
    try:
        if jp.stat().st_size < JOURNAL_ROTATE_BYTES:
            return
    except FileNotFoundError:
        return
    stamp = clock.stamp()
    n = 1  # a fixed-width counter keeps name order = rotation order within one second
    while (target := jp.with_name(f"{jp.stem}-{stamp}-{n:03d}{jp.suffix}")).exists():
        n += 1
    _retry(lambda: os.replace(jp, target))


def journal_files(jp: Path) -> list[Path]:
    """Rotated journals oldest first, then the current one."""
    rotated = sorted(jp.parent.glob(f"{jp.stem}-*{jp.suffix}")) if jp.parent.is_dir() else []
    return rotated + [jp]


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()[:16]
