"""Backups and set-aside copies: one naming scheme, ``<what>-<YYYYMMDD-HHMMSS>[-N]``, and
nothing is ever overwritten (docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

from agentmem_vault import clock
from agentmem_vault.fs import atomic_write_bytes, read_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

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


def conflict_destination(state_dir: Path, name: str) -> Path:
    """Where a folded conflict copy of the index is moved: ``.agentmem/conflicts/<name>``, or
    ``<stem>.<stamp>[-N].<ext>`` there when that is taken."""
    folder = state_dir / "conflicts"
    dst = folder / name
    if not dst.exists():
        return dst
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    stamp = clock.stamp()
    return free_path(lambda n: folder / (_numbered(f"{stem}.{stamp}", n) + (f".{ext}" if ext else "")))
