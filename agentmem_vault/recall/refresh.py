"""Keep the recall index and the rule summary current after this program writes notes
(docs/recall.md, "Freshness"): ``NoteWriter`` re-indexes exactly the files it wrote, moved, removed
or put back under ``memory/long-term/``, once it has released the vault lock. No full reindex.

Best effort: a failure here never fails the write that already succeeded; the notes stay the
source of truth, and the next query's sync (or ``agentmem reindex``) catches up.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentmem_vault.writer import VaultWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from agentmem_vault.vault import Vault
    from agentmem_vault.recall.index import SyncStats


def longterm_paths(vault: Vault, paths: Iterable[Path]) -> list[str]:
    """The paths under ``memory/long-term/``, relative to it and '/' separated (string checks: this
    runs after every board write, the hook's included)."""
    folder = os.path.join(os.path.abspath(vault.longterm_dir), "")
    out: list[str] = []
    for p in paths:
        a = os.path.abspath(p)
        if a.endswith(".md") and a.startswith(folder):
            out.append(Path(a[len(folder) :]).as_posix())
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


class NoteWriter(VaultWriter):
    """``VaultWriter`` that, once the vault lock is released, updates the recall index rows of the
    notes it touched (``notes_written``; the index has its own lock). The writer underneath knows
    nothing of the recall index."""

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        if self.touched:
            notes_written(self.vault, self.touched)
