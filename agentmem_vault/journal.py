"""Reading ``memory/.agentmem/journal.jsonl``: what changed, and bringing back a removed row.

Every mutation is journaled by ``writer.VaultWriter`` before it is made (rows before/after; organize keeps
every deleted row in full), so a row that organize, archive or a person's command removed can be
put back on the board with ``agentmem restore ID``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, Refused, SessionNotFound, SnapshotFormatError, UsageError
from agentmem_vault.board import table as it
from agentmem_vault.board.rules import synced_row
from agentmem_vault.model.snapshot import parse_snapshot
from agentmem_vault.model.ids import is_valid_session_id, validate_agent_name, validate_session_id
from agentmem_vault.board.store import BoardWriter, has_row
from agentmem_vault.writer import journal_files
from agentmem_vault.fs import read_bytes, read_text


@dataclass
class Journal:
    entries: list[dict] = field(default_factory=list)
    broken_lines: int = 0


def read_journal(vault: Vault) -> Journal:
    """All entries in order. Unreadable lines (a torn last line after a crash, bytes that are not
    UTF-8, hand edits) are skipped and counted, never fatal: one bad line must not hide the rest."""
    j = Journal()
    for f in journal_files(vault.journal_path):
        for raw in (read_bytes(f) or b"").split(b"\n"):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw.decode("utf-8-sig"))
            except ValueError:  # UnicodeDecodeError is a ValueError too
                entry = None
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


def history(vault: Vault, session_id: str | None = None, limit: int = 50) -> Journal:
    j = read_journal(vault)
    if session_id:
        sid = validate_session_id(session_id)
        j.entries = [
            e
            for e in j.entries
            if e.get("session_id") == sid or any(r.get("session_id") == sid for r in removed_rows(e))
        ]
    j.entries = j.entries[-limit:] if limit > 0 else j.entries
    return j


def last_removed_row(vault: Vault, session_id: str) -> dict | None:
    """The last journaled copy of a removed row of ``session_id``, as journaled (not yet checked)."""
    rows = [r for e in read_journal(vault).entries for r in removed_rows(e) if r.get("session_id") == session_id]
    return rows[-1] if rows else None


def row_from_journal(raw: dict, session_id: str) -> it.Row:
    """A journaled row checked like any other input before it goes back on the board: every
    field present and text, the Session ID the one asked for, a known status, a valid agent name,
    Referenced By a list of Session IDs, and cells that read back as written (docs/reliability.md)."""
    where = f"the journaled row of {session_id}"
    missing = [k for k in it.FIELD_NAMES if k not in raw]
    if missing:
        raise Refused(
            f"{where} lacks {', '.join(missing)}; not restoring it (see `agentmem journal --session {session_id}`)"
        )
    bad = [k for k in it.FIELD_NAMES if not isinstance(raw[k], str)]
    if bad:
        raise Refused(f"{where} has a {bad[0]} that is not text ({type(raw[bad[0]]).__name__}); not restoring it")
    if raw["session_id"] != session_id or not is_valid_session_id(raw["session_id"]):
        raise Refused(f"{where} names Session ID {raw['session_id']!r}; not restoring it")
    if raw["status"] not in it.STATUSES:
        raise Refused(
            f"{where} has status {raw['status']!r}, expected one of {', '.join(it.STATUSES)}; not restoring it"
        )
    try:
        validate_agent_name(raw["agent_name"])
    except UsageError as exc:
        raise Refused(f"{where} has an invalid agent name {raw['agent_name']!r}; not restoring it") from exc
    refs = it.split_id_list(raw["referenced_by"])
    if any(not is_valid_session_id(r) for r in refs):
        raise Refused(
            f"{where} has a Referenced By that is not a list of Session IDs ({raw['referenced_by']!r}); not restoring it"
        )
    row = it.Row(**{k: raw[k] for k in it.FIELD_NAMES})
    try:
        cells = it.split_cells(it.render_row(row))
    except AgentmemError as exc:
        raise Refused(f"{where}: {exc.message}") from exc
    if cells != [it.escape_cell(c).replace("\\|", "|") for c in row.cells()] or len(cells) != len(it.FIELD_NAMES):
        raise Refused(f"{where} would not read back as written; not restoring it")
    return row


def _in_step_with_snapshot(vault: Vault, row: it.Row) -> it.Row:
    """The journal's row brought in step with its snapshot's Metadata (Topic, Status, Updated At),
    by the rule doctor --fix uses (docs/board.md): the snapshot may have moved on since the row was
    removed. A missing or unreadable snapshot leaves the journal's row as it was."""
    text = read_text(vault.session_path(row.session_id))
    if text is None:
        return row
    try:
        meta = parse_snapshot(text).metadata
    except SnapshotFormatError:
        return row
    return synced_row(row, meta) or row


def restore_row(vault: Vault, session_id: str) -> it.Row:
    """Put the last removed row of ``session_id`` back at the end of the board (verified, journaled).

    Refused while the ID is on the board or archived (the archive holds that session now)."""
    sid = validate_session_id(session_id)
    raw = last_removed_row(vault, sid)
    if raw is None:
        broken = read_journal(vault).broken_lines
        more = f" ({broken} unreadable journal lines were skipped)" if broken else ""
        raise SessionNotFound(f"the journal has no removed row for {sid}{more}")
    row = row_from_journal(raw, sid)
    if vault.archive_path(sid).exists():
        raise Refused(
            f"{sid} was archived: its metadata and snapshot are in memory/archive/{sid}/; not restoring the row"
        )
    with BoardWriter(vault, "restore") as w:
        if has_row(w.index(), sid):
            raise Refused(f"{sid} is already on the board; nothing to restore")
        row = _in_step_with_snapshot(vault, row)
        with w.transaction():
            w.append_row(row)
            from agentmem_vault.ops.session_files import resync_session

            resync_session(w, sid)  # a snapshot's Properties follow its row back (docs/obsidian.md)
    return row
