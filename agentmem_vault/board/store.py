"""The board's writes: one row appended, updated or removed, or the whole table rewritten, each
under the vault lock, journaled and verified (docs/board.md "Writing rules"), and row existence.

``BoardWriter`` is ``recall.refresh.NoteWriter`` plus the board: every command that changes
``memory/index.md`` goes through it, and after every verified whole-board write the board summary
(``board.summary``) is refreshed (an appended row is parsed by its next load). Being a NoteWriter,
a note it writes or puts back (doctor's redaction, the undo of an operation killed halfway) is
current in the recall index at once. The writer underneath never imports the board.
"""

from __future__ import annotations

import os

from agentmem_vault.board import ids, summary
from agentmem_vault.board import table as it
from agentmem_vault.errors import AgentmemError, IndexFormatError, VerifyFailed, WriteFailed
from agentmem_vault.redaction import redact_board, redact_row
from agentmem_vault.fs import append_bytes, atomic_write_text, read_bytes, read_from, read_text
from agentmem_vault.recall.refresh import NoteWriter

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from agentmem_vault.board.summary import BoardState


def _row_ids(text: str) -> list[str]:
    """The Session IDs of a board's rows; for a board too damaged to parse (doctor repairs those),
    every valid ID on its table lines (a few too many burned is harmless; one too few is not)."""
    try:
        return it.parse_index(text).ids()
    except AgentmemError:
        from agentmem_vault.model.ids import find_ids

        return find_ids("".join(ln for ln in it.split_lines(text) if it.is_row_line(ln)))


def has_row(board: it.IndexDoc | BoardState, session_id: str) -> bool:
    """Whether the board has a row for ``session_id``: the one row-existence check (docs/board.md).
    A parsed board answers from its rows; the board summary of a writable board (the hook's path)
    from the board's bytes, without parsing them (``BoardState.has_row``)."""
    if isinstance(board, it.IndexDoc):
        return board.find(session_id) is not None
    return board.has_row(session_id)


class BoardWriter(NoteWriter):
    """``NoteWriter`` (``VaultWriter``: lock, journal, transactions) with the board's operations.

    Usage::

        with BoardWriter(vault, "register") as w:
            doc = w.index()
            w.append_row(row)
    """

    def index_text(self) -> str:
        return read_text(self.vault.index_path) or ""

    def index(self, *, strict: bool = False) -> it.IndexDoc:
        """The board as read under this lock; ``strict``: refused when it has rows this program
        cannot read (a person must look first)."""
        doc = it.parse_index(self.index_text())
        if strict:
            doc.check_writable()
        return doc

    def _rewrite(self, new_text: str, action: str, *, burn: Iterable[str] = (), **data: Any) -> it.IndexDoc:
        """Write the whole board (temp file + rename), journaled first, and compare it byte for
        byte with what was meant: every other byte is as it was and nobody else wrote in between.
        ``burn``: IDs whose rows this write removes, appended to the issued-IDs ledger (fsynced)
        before the table is written (docs/reliability.md). Not undone by a rollback: the ledger is
        append-only, an ID burned too many is harmless, and restoring it (before the board, in
        reverse order) would free the ID if the board's restore then failed. Redacted once, only
        what is new (docs/redaction.md)."""
        path = self.vault.index_path
        new_text = redact_board(self.vault, self.index_text(), new_text)
        self._remember(path)
        self.journal(action, path=path, **data)
        ids.burn(self.vault, list(burn))
        atomic_write_text(path, new_text)
        got = read_text(path)
        if got != new_text:
            raise VerifyFailed(
                "memory/index.md changed during the write or did not verify; re-run the command "
                "(the journal holds the intended change)"
            )
        after = it.parse_index(got)
        summary.refresh(self.vault, new_text, after)
        return after

    def append_row(self, row: it.Row, *, strict: bool = True, state: BoardState | None = None) -> None:
        """Add one row: the one append path of every writer (registration, ``register --manual``,
        the daemon, ``restore``). ``state``: the board's summary as loaded under this same lock
        (``summary.load``), to skip a re-read.

        The usual board (every row well formed, the table ending the file) gets the row's line
        appended, and the bytes read back after the old end must be exactly that line; any other
        board is rewritten whole (temp file + rename) and compared byte for byte."""
        row = redact_row(row)  # secrets never reach the board (docs/redaction.md)
        path = self.vault.index_path
        if state is None:
            data = read_bytes(path)
            state = summary.load(self.vault, data) if data else None
        line = it.render_row(row)
        if it.split_cells(line) != [it.escape_cell(c).replace("\\|", "|") for c in row.cells()]:
            raise WriteFailed(f"row {row.session_id} would not read back as written")
        fast = state is not None and state.writable and state.appendable
        board = state if fast and state is not None else self.index(strict=strict)
        if has_row(board, row.session_id):
            raise IndexFormatError(f"Session ID {row.session_id} already has a row; refusing to add a second")
        if not isinstance(board, it.IndexDoc):
            self._append_line(row, board, line)
            return
        # a missing or empty index is created with the header
        new_text = it.edit_table(board, {}, [row]) if board.render() else it.new_index_text() + line + "\n"
        self._rewrite(new_text, "append_row", session_id=row.session_id, before=None, after=row.to_dict())

    def _append_line(self, row: it.Row, state: BoardState, line: str) -> None:
        """Append ``row``'s line to the board ``state`` describes (read under this lock), without
        parsing the other rows; verified by reading back the bytes after the old end. The summary
        is left as it is: the next ``summary.load`` parses the appended line (board/summary.py)."""
        nl = state.newline
        path = self.vault.index_path
        tail = (("" if state.ends_nl else nl) + line + nl).encode("utf-8")
        try:
            size: int | None = os.stat(path).st_size
        except OSError:
            size = None
        if size != state.size:
            raise VerifyFailed(
                f"memory/index.md changed before {row.session_id} could be added (another program wrote it); "
                "nothing was written, run the command again"
            )
        self._remember(path)
        # Not fsynced on its own: the row's fsync right after makes what matters durable, and
        # a lost audit line costs no row and no ID (docs/reliability.md, "What a power cut may cost").
        self.journal(
            "append_row", session_id=row.session_id, path=path, before=None, after=row.to_dict(), durable=False
        )
        append_bytes(path, tail)
        if read_from(path, state.size) != tail:
            raise VerifyFailed(
                f"memory/index.md did not verify after adding {row.session_id}; the journal holds the intended row"
            )

    def update_row(
        self, session_id: str, change: Callable[[it.Row], it.Row], *, strict: bool = True
    ) -> tuple[it.Row, it.Row]:
        doc = self.index(strict=strict)
        old = doc.get(session_id)
        new = redact_row(change(old))
        if new.session_id != session_id:
            raise WriteFailed("an update may not change the Session ID")
        if new == old:
            return old, new
        new_text = it.edit_table(doc, {it.line_of(doc, session_id): new})
        after = self._rewrite(new_text, "update_row", session_id=session_id, before=old.to_dict(), after=new.to_dict())
        if after.find(session_id) != new:
            raise VerifyFailed(f"row {session_id} did not verify after the write")
        return old, new

    def remove_row(self, session_id: str, *, strict: bool = True) -> it.Row:
        doc = self.index(strict=strict)
        old = doc.get(session_id)
        new_text = it.edit_table(doc, {it.line_of(doc, session_id): None})
        after = self._rewrite(
            new_text, "remove_row", burn=[session_id], session_id=session_id, before=old.to_dict(), after=None
        )
        if has_row(after, session_id):
            raise VerifyFailed(f"row {session_id} is still in memory/index.md after removal")
        return old

    def write_index_text(self, new_text: str, *, reason: str, **journal_data: Any) -> None:
        """Whole-table rewrite computed by the caller from the text read under this lock."""
        before = self.index_text()
        new_text = redact_board(self.vault, before, new_text)
        if new_text == before:
            return
        kept = set(it.parse_index(new_text).ids())  # never write a table we could not read back
        removed = [sid for sid in _row_ids(before) if sid not in kept]
        self._rewrite(new_text, reason, burn=removed, before_text=before, **journal_data)
