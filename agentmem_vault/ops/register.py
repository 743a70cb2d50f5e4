"""Session registration and lookups on the board (memory/index.md).

The snapshot-dependent operations (manual registration's snapshot, update, continue, release)
live in ``ops/sessions.py``; this module stays light because the sessionStart hook imports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

from agentmem_vault.model import index_table as it
from agentmem_vault.clock import format_ts, now as clock_now
from agentmem_vault.config import Vault
from agentmem_vault.model.ids import base_session_id, next_free_id
from agentmem_vault.model.session_rules import idle_row
from agentmem_vault.vaultio import VaultWriter



@dataclass(frozen=True)
class Registration:
    session_id: str
    row: it.Row

    @property
    def message(self) -> str:
        return f"Your Memory Session ID is: {self.session_id}"


def taken_ids(vault: Vault, doc: it.IndexDoc) -> set[str]:
    """IDs in use anywhere: index rows (parsed or not), sessions/ and archive/."""
    taken = set(doc.ids())
    for bad in doc.bad:
        cells = it.split_cells(bad.raw)
        if cells:
            taken.add(cells[0])
    for folder, strip_md in ((vault.sessions_dir, True), (vault.archive_dir, False)):
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            if strip_md:
                if name.endswith(".md"):
                    taken.add(name[:-3])
            else:
                taken.add(name)
    return taken


def register_idle(vault: Vault, agent: str, *, when: datetime | None = None, command: str = "register",
                  also_taken: frozenset[str] | set[str] = frozenset()) -> Registration:
    """sessionStart registration: append an idle row, verified, under the vault lock.

    ``also_taken``: IDs handed out before whose rows are gone (the hook passes the IDs recorded in
    ``conversations.jsonl``, so a deleted idle row's ID is never given to another chat)."""
    when = when or clock_now()
    ts = format_ts(when)
    base = base_session_id(when, agent)
    with VaultWriter(vault, command) as w:
        text, doc = w.read_index()
        doc.check_writable()
        sid = next_free_id(base, taken_ids(vault, doc) | set(also_taken))
        row = idle_row(sid, agent, ts)
        w.append_row(row, read=(text, doc))
    return Registration(sid, row)


__all__ = ["Registration", "register_idle", "taken_ids"]
