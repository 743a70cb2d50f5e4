"""Chat registration (docs/board.md "Defaults"): a new chat gets an ``idle`` row and a Session ID
from the ledger (``board.ids``), and a chat seen before (its conversation ID paired with a Session
ID whose row still exists) gets its Session ID back. The sessionStart hook and ``agentmem
register`` are front ends of this module; it stays light because the hook imports it.

The snapshot-dependent operations (manual registration's snapshot, update, continue, release)
live in ``ops/sessions.py``.
"""

from __future__ import annotations

from collections import namedtuple

from agentmem_vault.board import summary
from agentmem_vault.board import table as it
from agentmem_vault.board.ids import issue_session_id
from agentmem_vault.board.rules import idle_row
from agentmem_vault.board.store import BoardWriter, has_row
from agentmem_vault.clock import format_ts
from agentmem_vault.clock import now as clock_now
from agentmem_vault.config import machine_id
from agentmem_vault.fastimport import datetime  # the C type without datetime.py (docs/performance.md)
from agentmem_vault.model.ids import base_session_id
from agentmem_vault.ops.conversations import PairScan, record_pair

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from agentmem_vault.board.summary import BoardState
    from agentmem_vault.vault import Vault


class Registration(namedtuple("Registration", ("session_id", "row"))):
    """The registered Session ID and its row."""

    __slots__ = ()

    @property
    def message(self) -> str:
        return f"Your Memory Session ID is: {self.session_id}"


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

    Common case (docs/performance.md): the board summary (``board.summary``) describes a well-formed
    board whose table ends the file, so the row is appended without parsing the other rows.
    ``state``: that summary as the caller loaded it while already holding the vault lock."""
    when = when or clock_now()
    ts = format_ts(when)
    base = base_session_id(when, agent, machine_id())
    with BoardWriter(vault, command) as w:
        if state is None:
            state = summary.load(vault)
        board: it.IndexDoc | BoardState
        if state is not None and state.writable and state.appendable:
            board = state  # the usual board: the row is appended without parsing the others
        else:
            board = w.index(strict=True)
        sid = issue_session_id(vault, board, base, also_taken)
        row = idle_row(sid, agent, ts)
        w.append_row(row, state=state)
    return Registration(sid, row)


def start_chat(
    vault: Vault,
    agent: str,
    *,
    command: str,
    conversation_id: str | None,
    client: str,
    source: str | None = None,
    timeout: float,
    project: str = "",
    workspace: str = "",
) -> tuple[str, bool, object]:
    """Register (or find again) the chat's Session ID; returns ``(session_id, resumed, board)``
    where ``board`` describes the index as read under the lock before any change (for recall).

    The lookup, the registration and the pair are done under one hold of the vault lock, so two
    hooks for the same conversation cannot both register it. Cost does not grow with the board
    (docs/performance.md): ``conversations.jsonl`` is one chunked pass (``PairScan``), the row check
    a search of the board's bytes checked against the board summary, and a new row is appended and
    verified without parsing the others.
    """
    with BoardWriter(vault, command, timeout=timeout) as w:
        when = clock_now()
        # one pass over conversations.jsonl: the summary's check, this chat's pair, this minute's IDs
        pairs = PairScan(vault, conversation_id=conversation_id, prefix=base_session_id(when, agent))
        state = summary.load(vault, pairs=pairs)  # the board and pairs checked against the summary
        board: it.IndexDoc | BoardState
        if state is not None and state.writable:
            board = state
        else:
            board = w.index()  # no table yet, or broken rows: the full parse, as before
        if conversation_id:
            pair = pairs.pair
            if pair is not None and has_row(board, pair["session_id"]):
                return pair["session_id"], True, board
        reg = register_idle(vault, agent, when=when, command=command, also_taken=pairs.ids, state=state)
        if conversation_id:
            record_pair(
                vault,
                conversation_id,
                reg.session_id,
                agent=client,
                source=source,
                project=project,
                workspace=workspace,
            )
        return reg.session_id, False, board
