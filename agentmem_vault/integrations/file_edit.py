"""The one file-edit step of every installer (hooks, MCP, merge drivers, rules, setup, daemon
service): plan, compare, backup and write, verify (docs/setup.md, "How an installer edits a file").
An installer reads the file once and computes the new bytes with a pure function (checked with
the format's parser when there is one); ``apply_edit`` refuses a file that changed since
("changed while installing"), backs it up, replaces it and reads it back. An unchanged file is
never rewritten, so running an installer twice changes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentmem_vault.errors import AgentmemError, Refused, UsageError, VerifyFailed
from agentmem_vault.fs import atomic_write_bytes, read_bytes
from agentmem_vault.backups import backup_file

# A parser of the file's format: returns anything, raises on bytes that do not parse.
Check = Callable[[bytes], object]


@dataclass(frozen=True)
class FileEdit:
    path: Path
    before: bytes | None  # None: the file does not exist
    after: bytes
    what: str = "file"  # the format, for messages ("JSON", "TOML", "systemd unit")
    check: Check | None = None
    backup: bool = True

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def action(self) -> str:
        """What the installers report: create, update or unchanged."""
        return "create" if self.before is None else ("update" if self.changed else "unchanged")


def project_folder(project: str | os.PathLike) -> Path:
    """The ``--project`` folder of every installer, ``~`` expanded as a shell would; else UsageError."""
    folder = Path(project).expanduser()
    if not folder.is_dir():
        why = "not a folder" if folder.exists() else "no such folder"
        raise UsageError(f"--project {project}: {why}; pass the project's existing folder (create it if it is new)")
    return folder


def _checked(data: bytes, path: Path, what: str, check: Check | None) -> None:
    if check is None:
        return
    try:
        check(data)
    except AgentmemError:
        raise
    except Exception as exc:  # a parser's own error type, whatever the format's library raises
        raise Refused(f"{path}: the {what} this installer built does not parse ({exc}); nothing was written") from exc


def plan_edit(
    path: Path,
    before: bytes | None,
    after: bytes,
    *,
    what: str = "file",
    check: Check | None = None,
    backup: bool = True,
) -> FileEdit:
    """The edit from ``before`` (the bytes the installer read with ``read_bytes``, None for no
    file) to ``after``; the new bytes are checked with the format's parser. Nothing is written."""
    edit = FileEdit(path, before, after, what, check, backup)
    if edit.changed:
        _checked(after, path, what, check)
    return edit


def plan_text_edit(
    path: Path, before: bytes | None, text: str, *, what: str = "file", check: Check | None = None
) -> FileEdit:
    """``plan_edit`` to ``text`` in UTF-8, keeping the byte-order mark the old file had."""
    bom = b"\xef\xbb\xbf" if before and before.startswith(b"\xef\xbb\xbf") else b""
    return plan_edit(path, before, bom + text.encode("utf-8"), what=what, check=check)


def apply_edit(edit: FileEdit) -> Path | None:
    """Write a planned edit; returns the backup's path (None when nothing was backed up)."""
    if not edit.changed:
        return None
    current = read_bytes(edit.path)
    if current != edit.before:
        raise Refused(
            f"{edit.path} changed while installing (another program saved it); nothing was written: run the command again"
        )
    saved = backup_file(edit.path, current) if current is not None and edit.backup else None
    atomic_write_bytes(edit.path, edit.after)
    written = read_bytes(edit.path)
    if written != edit.after:
        raise VerifyFailed(f"{edit.path} did not read back as written; the previous file is at {saved}")
    _checked(written, edit.path, edit.what, edit.check)
    return saved


def json_object(path: Path | str, data: str | bytes | None) -> dict | None:
    """The JSON object an installer merges into: None for no file, {} for a blank one; refused
    when it is not JSON or not an object."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
        obj = json.loads(text) if text.strip() else {}
    except ValueError as exc:  # UnicodeDecodeError too
        raise Refused(f"{path} is not valid JSON ({exc}); fix or remove it first — it was not changed") from exc
    if not isinstance(obj, dict):
        raise Refused(f"{path} is a JSON {type(obj).__name__}, not an object; it was not changed")
    return obj


def read_current(path: Path) -> bytes | None:
    """The file's bytes as an installer plans on them (None: no file), read by the vault's rule."""
    return read_bytes(path)


def read_for_edit(path: Path, error: type[AgentmemError] = Refused) -> tuple[bytes | None, str | None]:
    """(bytes, text) of a text file an installer edits, (None, None) for no file; ``error`` when
    it is not UTF-8 (a byte-order mark is allowed: ``plan_text_edit`` keeps it)."""
    raw = read_current(path)
    try:
        return raw, None if raw is None else raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path} is not UTF-8 text (byte {exc.start}); fix or remove it first — it was not changed"
        ) from exc
