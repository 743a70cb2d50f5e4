"""Session registration and lookups on the board (memory/index.md).

The snapshot-dependent operations (manual registration's snapshot, update, continue, release)
live in ``ops/sessions.py``; this module stays light because the sessionStart hook imports it.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentmem_vault.clock import format_ts
from agentmem_vault.clock import now as clock_now
from agentmem_vault.config import Vault, machine_id
from agentmem_vault.fastimport import datetime  # the C type without datetime.py (docs/performance.md)
from agentmem_vault.model import index_table as it
from agentmem_vault.model.ids import (
    base_session_id,
    ids_in_json_lines,
    ids_with_prefix,
    next_free_id,
)
from agentmem_vault.model.session_rules import idle_row
from agentmem_vault.ops import board_cache
from agentmem_vault.ops.board_cache import BoardState
from agentmem_vault.vaultio import (
    VaultWriter,
    append_line,
    atomic_write_bytes,
    journal_files,
    make_dirs,
    read_bytes,
)


class Registration:
    """The registered Session ID and its row (plain class: this module is on the hook path, which
    does not import ``dataclasses``; docs/performance.md)."""

    __slots__ = ("row", "session_id")

    def __init__(self, session_id: str, row: it.Row) -> None:
        self.session_id = session_id
        self.row = row

    def __eq__(self, other: object) -> bool:
        return (
            (self.session_id, self.row) == (other.session_id, other.row)
            if type(other) is Registration
            else NotImplemented
        )

    def __hash__(self) -> int:
        return hash((self.session_id, self.row))

    def __repr__(self) -> str:
        return f"Registration(session_id={self.session_id!r}, row={self.row!r})"

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
    return vault.issued_ids_path


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


def issue_session_id(
    vault: Vault, doc: it.IndexDoc | BoardState, base: str, also_taken: frozenset[str] | set[str] = frozenset()
) -> str:
    """Pick the next free ID for ``base`` and burn it in the ledger before any row is written.

    Call under the vault lock (the ledger is written under the same lock as the registration).
    An ID once issued is never issued again, even after organize deleted its row: the ledger,
    the index, sessions/, archive/ (and, when the ledger is lost, the journal) all count.
    Cost on the hook path: one read of the ledger and a byte search for this minute's prefix."""
    ledger = read_bytes(issued_path(vault))
    if ledger is None:
        ledger = _rebuild_ledger(vault)
    burned = set(also_taken) | ids_with_prefix(ledger, base)
    if isinstance(doc, BoardState):  # the hook's path: look up only the candidate IDs
        sid = _free_id_known(vault, base, doc, burned)
    else:
        sid = next_free_id(base, taken_ids(vault, doc) | burned)
    # Written before the row, without an fsync of its own: until the row is removed the board
    # itself burns the ID, and every writer that removes a row appends its ID here again, fsynced,
    # before the table is written (VaultWriter; docs/reliability.md).
    append_line(issued_path(vault), (sid + "\n").encode("utf-8"), durable=False)
    return sid


def _free_id_known(vault: Vault, base: str, state: BoardState, also_taken: frozenset[str] | set[str]) -> str:
    """``next_free_id`` over the same taken set as ``taken_ids`` (rows, sessions/, archive/), but
    looking up only the candidate IDs instead of listing every row and folder entry."""
    n = 1
    while True:
        cand = base if n == 1 else f"{base}-{n}"
        if (
            cand not in also_taken
            and not state.has_row(cand)
            and not os.path.lexists(os.path.join(vault.sessions_dir, cand + ".md"))
            and not os.path.lexists(os.path.join(vault.archive_dir, cand))
        ):
            return cand
        n += 1


def register_idle(
    vault: Vault,
    agent: str,
    *,
    when: datetime | None = None,
    command: str = "register",
    also_taken: frozenset[str] | set[str] = frozenset(),
    state: BoardState | None = None,
) -> Registration:
    """sessionStart registration: append an idle row, verified, under the vault lock.

    ``also_taken``: IDs handed out before whose rows are gone (the hook passes the IDs recorded in
    ``conversations.jsonl``, so a deleted idle row's ID is never given to another chat).

    Common case (docs/performance.md): the board summary (``board_cache``) vouches for a well-formed
    board whose table ends the file, so the row is appended without parsing the other rows.
    ``state``: that summary as the caller loaded it while already holding the vault lock."""
    when = when or clock_now()
    ts = format_ts(when)
    base = base_session_id(when, agent, machine_id())
    with VaultWriter(vault, command) as w:
        if state is None:
            state = board_cache.load(vault)
        if state is not None and state.writable and state.appendable:
            sid = issue_session_id(vault, state, base, also_taken)
            row = idle_row(sid, agent, ts)
            tail, stat = w.append_row_known(row, state)
            board_cache.after_append(vault, state, tail, row, stat)
            return Registration(sid, row)
        text, doc = w.read_index()
        doc.check_writable()
        sid = issue_session_id(vault, doc, base, also_taken)
        row = idle_row(sid, agent, ts)
        w.append_row(row, read=(text, doc))
    return Registration(sid, row)


__all__ = ["Registration", "issue_session_id", "issued_path", "register_idle", "taken_ids"]
