"""Keep the recall index and the rule summary current after this program writes notes.

``NoteWriter`` (the vault writer of every note write: extract, remember, deprecate, move) calls
``notes_written`` once it has released the vault lock, with every file it wrote, moved or removed
(a rollback's restores included). When any of them is under
``memory/long-term/``, exactly those rows of the recall index are updated and ``rules.json`` is
rewritten, so that the very next sessionStart (which reads the prebuilt index and never syncs it)
and the next query in any process see the change, with or without a daemon (docs/recall.md,
"Freshness"). No full reindex: the other notes are not read.

Best effort: a failure here never fails the write that already succeeded; the notes stay the
source of truth, and the next query's sync (or ``agentmem reindex``) catches up.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agentmem_vault.writer import VaultWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentmem_vault.vault import Vault
    from agentmem_vault.recall.index import SyncStats


def longterm_paths(vault: Vault, paths: Iterable[Path]) -> list[str]:
    """The paths under ``memory/long-term/``, relative to it and '/' separated."""
    folder = vault.longterm_dir.absolute()
    out: list[str] = []
    for p in paths:
        a = Path(p).absolute()
        if a.suffix == ".md" and a.is_relative_to(folder):
            out.append(a.relative_to(folder).as_posix())
    return out


def notes_written(vault: Vault, paths: Iterable[Path]) -> SyncStats | None:
    """Re-index the long-term notes among ``paths``; None when there were none or it failed."""
    rels = longterm_paths(vault, paths)
    if not rels:
        return None
    try:
        from agentmem_vault.recall.index import RecallIndex

        idx = RecallIndex(vault)
        try:
            return idx.refresh(rels)
        finally:
            idx.close()
    except Exception:  # noqa: BLE001 - the write succeeded; the next query's sync catches up
        return None


__all__ = ["longterm_paths", "notes_written"]


class NoteWriter(VaultWriter):
    """``VaultWriter`` for writes of long-term notes: once the vault lock is released, the recall
    index rows of the notes it touched are updated (``notes_written``; the index has its own lock).
    The writer underneath knows nothing of the recall index."""

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        if self.touched:
            notes_written(self.vault, self.touched)
