"""Session IDs in use and the issued-IDs ledger (docs/reliability.md): every Session ID ever
handed out, one per line, append-only, so an ID is never handed out twice, even after organize
deleted its row. Call under the vault lock."""

from __future__ import annotations

import os

from agentmem_vault.board import table as it
from agentmem_vault.board.summary import BoardState
from agentmem_vault.errors import WriteFailed
from agentmem_vault.fs import append_line, atomic_write_bytes, make_dirs, read_bytes
from agentmem_vault.model.ids import ids_in_json_lines, ids_with_prefix, next_free_id
from agentmem_vault.writer import journal_files

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from agentmem_vault.vault import Vault


def taken_ids(vault: Vault, doc: it.IndexDoc) -> set[str]:
    """IDs in use anywhere: index rows (parsed or not), sessions/ and archive/."""
    taken = set(doc.ids())
    taken.update(cells[0] for bad in doc.bad if (cells := it.split_cells(bad.raw)))
    for folder, suffix in ((vault.sessions_dir, ".md"), (vault.archive_dir, "")):
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        taken.update(name[: len(name) - len(suffix)] for name in names if name.endswith(suffix))
    return taken


def _rebuild_ledger(vault: Vault) -> bytes:
    """The ledger is gone (or never existed): rebuild it once from the journal (every rotated file)
    and the conversation pairs, which also name every issued ID. The index, sessions/ and archive/
    are counted by ``taken_ids`` on every registration anyway."""
    files = [*journal_files(vault.journal_path), vault.state_dir / "conversations.jsonl"]
    found = set().union(*(ids_in_json_lines(read_bytes(f) or b"") for f in files))
    blob = "".join(sid + "\n" for sid in sorted(found)).encode("utf-8")
    make_dirs(vault.state_dir)
    atomic_write_bytes(vault.issued_ids_path, blob)
    return blob


def issue_session_id(
    vault: Vault, doc: it.IndexDoc | BoardState, base: str, also_taken: frozenset[str] | set[str] = frozenset()
) -> str:
    """Pick the next free ID for ``base`` and burn it in the ledger before any row is written.

    Call under the vault lock (the ledger is written under the same lock as the registration).
    An ID once issued is never issued again, even after organize deleted its row: the ledger,
    the index, sessions/, archive/ (and, when the ledger is lost, the journal) all count.
    Cost on the hook path: one read of the ledger and a byte search for this minute's prefix."""
    ledger = read_bytes(vault.issued_ids_path)
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
    append_line(vault.issued_ids_path, (sid + "\n").encode("utf-8"), durable=False)
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


def burn(vault: Vault, removed: list[str]) -> None:
    """Record IDs whose rows a write removes, fsynced, before the table is written: from then on
    the ledger alone keeps them from being handed out again (the registration's own ledger line
    is not fsynced)."""
    if not removed:
        return
    path = vault.issued_ids_path
    try:
        make_dirs(path.parent)
        append_line(path, "".join(sid + "\n" for sid in removed).encode("utf-8"))
    except (OSError, WriteFailed) as exc:
        raise WriteFailed(f"could not record removed Session IDs in {path}: {exc}; nothing was changed") from exc
