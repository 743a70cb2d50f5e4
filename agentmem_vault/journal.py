"""Reading ``memory/.agentmem/journal.jsonl``: what changed, and bringing back a removed row.

Every mutation is journaled by ``vaultio`` before it is made (rows before/after; organize keeps
every deleted row in full), so a row that organize, archive or a person's command removed can be
put back on the board with ``agentmem restore ID``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from agentmem_vault.model import index_table as it
from agentmem_vault.config import Vault
from agentmem_vault.errors import Refused, SessionNotFound
from agentmem_vault.model.ids import validate_session_id
from agentmem_vault.vaultio import VaultWriter, journal_files, read_text


@dataclass
class Journal:
    entries: list[dict] = field(default_factory=list)
    broken_lines: int = 0


def read_journal(vault: Vault) -> Journal:
    """All entries in order; unreadable lines (a torn last line after a crash) are counted, not fatal."""
    j = Journal()
    text = "".join((read_text(f) or "") for f in journal_files(vault.journal_path))
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            j.broken_lines += 1
            continue
        if isinstance(entry, dict):
            j.entries.append(entry)
        else:
            j.broken_lines += 1
    return j


def removed_rows(entry: dict) -> list[dict]:
    """The rows an entry took off the board (one remove_row, or all of an organize run)."""
    if entry.get("action") == "remove_row" and isinstance(entry.get("before"), dict):
        return [entry["before"]]
    rows = entry.get("deleted_rows")  # organize: one entry for the whole run
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def mentions(entry: dict, session_id: str) -> bool:
    return entry.get("session_id") == session_id or any(r.get("session_id") == session_id for r in removed_rows(entry))


def history(vault: Vault, session_id: str | None = None, limit: int = 50) -> Journal:
    j = read_journal(vault)
    if session_id:
        sid = validate_session_id(session_id)
        j.entries = [e for e in j.entries if mentions(e, sid)]
    j.entries = j.entries[-limit:] if limit > 0 else j.entries
    return j


def last_removed_row(vault: Vault, session_id: str) -> it.Row | None:
    found: it.Row | None = None
    for e in read_journal(vault).entries:
        for r in removed_rows(e):
            if r.get("session_id") == session_id:
                try:
                    found = it.Row(**{k: str(r.get(k, "")) for k in it.FIELD_NAMES})
                except TypeError:
                    continue
    return found


def restore_row(vault: Vault, session_id: str) -> it.Row:
    """Put the last removed row of ``session_id`` back at the end of the board (verified, journaled).

    Refused while the ID is on the board or archived (the archive holds that session now)."""
    sid = validate_session_id(session_id)
    row = last_removed_row(vault, sid)
    if row is None:
        raise SessionNotFound(f"the journal has no removed row for {sid}")
    if vault.archive_path(sid).exists():
        raise Refused(f"{sid} was archived: its metadata and snapshot are in memory/archive/{sid}/; not restoring the row")
    with VaultWriter(vault, "restore") as w:
        text, doc = w.read_index()
        if doc.find(sid) is not None:
            raise Refused(f"{sid} is already on the board; nothing to restore")
        w.append_row(row, read=(text, doc))
    return row
