"""Session registration and lookups on the board (memory/index.md).

The snapshot-dependent operations (manual registration's snapshot, update, continue, release)
live in ``ops/sessions.py``; this module stays light because the sessionStart hook imports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agentmem_vault.clock import format_ts
from agentmem_vault.clock import now as clock_now
from agentmem_vault.config import Vault, machine_id
from agentmem_vault.model import index_table as it
from agentmem_vault.model.ids import (
    base_session_id,
    ids_in_json_lines,
    ids_with_prefix,
    next_free_id,
)
from agentmem_vault.model.session_rules import idle_row
from agentmem_vault.vaultio import (
    VaultWriter,
    append_line,
    atomic_write_bytes,
    journal_files,
    make_dirs,
    read_bytes,
)



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


ISSUED_IDS = "issued-ids.txt"


def issued_path(vault: Vault) -> Path:
    """The issued-IDs ledger: every Session ID ever handed out, one per line, append-only."""
    return vault.state_dir / ISSUED_IDS


def _rebuild_ledger(vault: Vault) -> bytes:
    """The ledger is gone (or never existed): rebuild it once from the journal (every rotated file)
    and the conversation pairs, which also name every issued ID. The index, sessions/ and archive/
    are counted by ``taken_ids`` on every registration anyway."""
    found: set[str] = set()
    for f in [*journal_files(vault.journal_path), vault.state_dir / "conversations.jsonl"]:
        data = read_bytes(f)
        if data:
            found |= ids_in_json_lines(data)
    blob = "".join(sid + "\n" for sid in sorted(found)).encode("utf-8")
    make_dirs(vault.state_dir)
    atomic_write_bytes(issued_path(vault), blob)
    return blob


def issue_session_id(vault: Vault, doc: it.IndexDoc, base: str, also_taken: frozenset[str] | set[str] = frozenset()) -> str:
    """Pick the next free ID for ``base`` and burn it in the ledger before any row is written.

    Call under the vault lock (the ledger is written under the same lock as the registration).
    An ID once issued is never issued again, even after organize deleted its row: the ledger,
    the index, sessions/, archive/ (and, when the ledger is lost, the journal) all count.
    Cost on the hook path: one read of the ledger and a byte search for this minute's prefix."""
    ledger = read_bytes(issued_path(vault))
    if ledger is None:
        ledger = _rebuild_ledger(vault)
    sid = next_free_id(base, taken_ids(vault, doc) | set(also_taken) | ids_with_prefix(ledger, base))
    append_line(issued_path(vault), (sid + "\n").encode("utf-8"))
    return sid


def register_idle(vault: Vault, agent: str, *, when: datetime | None = None, command: str = "register",
                  also_taken: frozenset[str] | set[str] = frozenset()) -> Registration:
    """sessionStart registration: append an idle row, verified, under the vault lock.

    ``also_taken``: IDs handed out before whose rows are gone (the hook passes the IDs recorded in
    ``conversations.jsonl``, so a deleted idle row's ID is never given to another chat)."""
    when = when or clock_now()
    ts = format_ts(when)
    base = base_session_id(when, agent, machine_id())
    with VaultWriter(vault, command) as w:
        text, doc = w.read_index()
        doc.check_writable()
        sid = issue_session_id(vault, doc, base, also_taken)
        row = idle_row(sid, agent, ts)
        w.append_row(row, read=(text, doc))
    return Registration(sid, row)


__all__ = ["Registration", "issue_session_id", "issued_path", "register_idle", "taken_ids"]
