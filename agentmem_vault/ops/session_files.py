"""Writes of session snapshots and archive files, with their Obsidian properties in step: the one
write path of docs/obsidian.md, "Rules" (``write_session_file`` computes the frontmatter from the
text and the row read under the same lock; ``resync`` after a change that touched only the board;
a file without frontmatter is never rewritten for properties alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, SnapshotFormatError
from agentmem_vault.board import table as it
from agentmem_vault.model import session_props as sp
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import read_text

if TYPE_CHECKING:
    from agentmem_vault.model.snapshot import Snapshot


def kind_of(vault: Vault, path: Path) -> tuple[str, str] | None:
    """(kind, session id) for a snapshot or archive file path, else None."""
    p = path.absolute()
    if p.parent == vault.sessions_dir.absolute() and p.suffix == ".md" and is_valid_session_id(p.stem):
        return sp.LIVE, p.stem
    if p.parent.parent == vault.archive_dir.absolute() and is_valid_session_id(p.parent.name):
        if p.name == "session.md":
            return sp.ARCHIVED, p.parent.name
        if p.name == "index.md":
            return sp.ARCHIVE_INDEX, p.parent.name
    return None


def board_facts(w: BoardWriter, kind: str, sid: str) -> sp.BoardFacts | None:
    """What the board (or the archive index) says about ``sid`` now, under the writer's lock."""
    if kind == sp.LIVE:
        try:
            row = board_row(w.index_text(), sid)
        except AgentmemError:
            return None  # an unreadable board: keep what the file says (doctor reports the board)
        return sp.BoardFacts.from_row(row) if row is not None else None
    if kind == sp.ARCHIVED:
        text = read_text(w.vault.archive_path(sid) / "index.md")
        if text is None:
            return None
        from agentmem_vault.model.snapshot import parse_snapshot

        try:
            return sp.BoardFacts.from_archive_index(parse_snapshot(text).metadata)
        except SnapshotFormatError:
            return None
    return None


_UNSET = sp.BoardFacts(status="\x00unset")


def board_row(index_text: str, sid: str) -> it.Row | None:
    """The row of ``sid``, parsing only the lines that name it (a whole-board parse costs ~100 ms
    on 10,000 rows, and a write path asks once or twice). None when missing or not unique."""
    hit: it.Row | None = None
    lines = index_text.split("\n")
    # an example table in a code fence is text, never the board (board/table.py, as parse_index)
    fenced = it.fenced_lines(lines) if ("```" in index_text or "~~~" in index_text) else set()
    for i, line in enumerate(lines):
        if sid not in line or i in fenced or not it.is_row_line(line):
            continue
        cells = it.split_cells(line.rstrip("\r"))
        if len(cells) == len(it.COLUMNS) and cells[0] == sid:
            if hit is not None:
                return None  # a duplicate ID: doctor's business, the file is left as it says
            hit = it.Row(*cells)
    return hit


def with_props(w: BoardWriter, path: Path, text: str, board: sp.BoardFacts | None = _UNSET) -> str:
    """``text`` with its frontmatter in step (unchanged for paths that are not session files).
    ``board``: the board facts when the caller already has them (else read under the lock)."""
    found = kind_of(w.vault, path)
    if found is None:
        return text
    kind, sid = found
    if board is _UNSET:
        board = board_facts(w, kind, sid)
    try:
        return sp.sync_props(text, kind=kind, board=board, session_id=sid)
    except SnapshotFormatError as exc:
        rel = path.relative_to(w.vault.root) if path.is_relative_to(w.vault.root) else path
        raise SnapshotFormatError(
            f"{rel}: {exc.message}; fix it by hand first — nothing was written", details={"path": str(rel)}
        ) from exc


def write_session_file(
    w: BoardWriter,
    path: Path,
    text: str,
    *,
    session_id: str | None = None,
    action: str = "write_snapshot",
    board: sp.BoardFacts | None = _UNSET,
) -> bool:
    """``BoardWriter.write_file`` of a session or archive file with its properties in step.
    ``board``: the row's facts when the caller is about to write that row (else read now)."""
    return w.write_file(path, with_props(w, path, text, board), session_id=session_id, action=action)


def resync(w: BoardWriter, path: Path, board: sp.BoardFacts | None = _UNSET, *, strict: bool = False) -> bool:
    """Bring an existing frontmatter in step with the tables; False when nothing changed or the
    file has none (it is then not rewritten). A file that cannot be read (malformed frontmatter,
    not UTF-8) is left as it is for doctor to report, unless ``strict``: an operation that only
    changed the board must not fail because of another file's hand edit."""
    try:
        text = read_text(path)
        if text is None or sp.split_text(text).frontmatter is None:
            return False
        new = with_props(w, path, text, board)
    except SnapshotFormatError:
        if strict:
            raise
        return False
    if new == text:
        return False
    found = kind_of(w.vault, path)
    return w.write_file(path, new, session_id=found[1] if found else None, action="sync_properties")


def resync_session(w: BoardWriter, sid: str, board: sp.BoardFacts | None = _UNSET, *, strict: bool = False) -> bool:
    return resync(w, w.vault.session_path(sid), board, strict=strict)


def set_snapshot_status(w: BoardWriter, sid: str, status: str, board: sp.BoardFacts | None = _UNSET) -> bool:
    """The snapshot's Metadata Status set to the row's new ``status`` (organize's stale mark),
    Updated At unchanged: row and snapshot stay in step (docs/board.md). A snapshot that cannot be
    read is left for doctor to report; False when nothing changed."""
    from agentmem_vault.model.snapshot import parse_snapshot

    path = w.vault.session_path(sid)
    text = read_text(path)
    if text is None:
        return False
    try:
        snap = parse_snapshot(text)
    except SnapshotFormatError:
        return False
    if snap.metadata.get("Status", "").strip() == status:
        return resync(w, path, board)
    snap.metadata["Status"] = status
    return write_session_file(w, path, render_like(snap, text), session_id=sid, action="sync_status", board=board)


def render_like(snap: Snapshot, existing: str | None) -> str:
    """Render keeping the existing file's line endings and BOM (a CRLF file stays CRLF)."""
    from agentmem_vault.model.snapshot import render_snapshot

    if not existing:
        return render_snapshot(snap)
    return render_snapshot(snap, newline="\r\n" if "\r\n" in existing else "\n", bom=existing.startswith("\ufeff"))
