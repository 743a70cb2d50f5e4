"""PURE planning: a folder snapshot and the index text in, actions and reports out (the rules:
docs/daemon.md's list; the row rules themselves live in board/rules.py).

No I/O and no clock: the same inputs give the same plan, so tests feed synthetic snapshots and the
service re-plans under the vault lock right before applying (the index may have changed since the
first look).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Collection

from agentmem_vault.daemon.scan import Entry, FolderSnapshot
from agentmem_vault.errors import IndexFormatError
from agentmem_vault.board import table as it
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.rules import archived_in_copy, fold_rows, row_from_fields, synced_row


@dataclass(frozen=True)
class AddRow:
    row: it.Row
    kind: str = "add_row"


@dataclass(frozen=True)
class SyncRow:
    before: it.Row
    after: it.Row
    kind: str = "sync_row"


@dataclass(frozen=True)
class FoldConflict:
    copy: str  # path of the copy relative to memory/
    base_text: str  # the index text this fold was computed from
    new_text: str  # the index text with the copy's rows folded in
    added: tuple[str, ...]
    updated: tuple[str, ...]
    move: bool  # False when some of the copy's rows could not be read: it stays for a person
    copy_sha: str | None = None
    kind: str = "fold_conflict"


@dataclass(frozen=True)
class Report:
    key: str  # stable identity: the service logs a report once per key
    kind: str
    message: str
    session_id: str | None = None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "session_id": self.session_id}


Action = AddRow | SyncRow | FoldConflict


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)

    @property
    def writes(self) -> bool:
        return bool(self.actions)

    def report(self, key: str, kind: str, message: str, session_id: str | None = None) -> None:
        self.reports.append(Report(key, kind, message, session_id))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def plan(
    folder: FolderSnapshot,
    index_text: str | None,
    *,
    previous_sessions: set[str] | None = None,
    archived: Collection[str] = (),
) -> Plan:
    """Everything the daemon should do (and say) for this state of the folder.

    ``previous_sessions``: the session IDs that had a file at the previous pass (None on the first
    pass), to tell a snapshot deleted by hand from a row that never had one. ``archived``: the IDs
    with a folder under memory/archive/ (only needed when there are conflict copies to fold).
    """
    out = Plan()
    if index_text is None:
        out.report(
            "index_missing",
            "index_missing",
            "memory/index.md is missing; run `agentmem init` (the daemon does not create it)",
        )
        return out
    try:
        doc = it.parse_index(index_text)
    except IndexFormatError as exc:
        out.report(f"damaged:{_sha(index_text)}", "index_damaged", exc.message + "; not rewritten")
        return out
    problems = [f"line {b.line_no}: {b.reason}" for b in doc.bad]
    problems += [f"Session ID {d} appears in more than one row" for d in doc.duplicate_ids()]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        out.report(
            f"damaged:{_sha(index_text)}",
            "index_damaged",
            f"memory/index.md is damaged: {problems[0]}{more}; the daemon will not "
            "change it until it is repaired (see `agentmem doctor`)",
        )
        return out

    text = _fold_conflicts(folder, index_text, archived, out)
    rows = {r.session_id: r for r in it.parse_index(text).row_list()}  # IDs are unique here (duplicates stop above)
    sessions = folder.sessions()
    _plan_sessions(sessions, rows, out)
    _report_rows_without_snapshot(rows, sessions, previous_sessions, out)
    return out


def _fold_conflicts(folder: FolderSnapshot, text: str, archived: Collection[str], out: Plan) -> str:
    """Sync-conflict copies of the index folded in (docs/board.md); the board's text after them."""
    for rel, entry in sorted(folder.conflicts().items()):
        try:
            if entry.error or entry.text is None:  # a copy that cannot be read is reported as one that does not parse
                raise IndexFormatError(entry.error or "unreadable")
            copy = it.parse_index(entry.text)
        except IndexFormatError as exc:
            out.report(
                f"conflict:{rel}:{entry.sha}",
                "conflict_unreadable",
                f"conflict copy memory/{rel}: {exc.message}; left in place",
            )
            continue
        for sid in archived_in_copy(text, copy.row_list(), archived):
            out.report(
                f"conflict_archived:{rel}:{sid}",
                "conflict_archived_row",
                f"conflict copy memory/{rel} still lists {sid}, which was archived since; "
                f"not put back on the board (see memory/archive/{sid}/)",
                sid,
            )
        new_text, added, updated = fold_rows(text, copy.row_list(), archived=archived)
        move = not copy.bad
        if not move:
            out.report(
                f"conflict:{rel}:{entry.sha}",
                "conflict_partial",
                f"conflict copy memory/{rel}: {len(copy.bad)} row(s) could not be read "
                f"(first: line {copy.bad[0].line_no}); readable rows folded, the copy is left in place",
            )
        if move or new_text != text:
            out.actions.append(FoldConflict(rel, text, new_text, tuple(added), tuple(updated), move, entry.sha))
        text = new_text
    return text


def _plan_sessions(sessions: dict[str, Entry], rows: dict[str, it.Row], out: Plan) -> None:
    """A snapshot without a row gets one; a row out of step with its snapshot is synced."""
    for sid, entry in sorted(sessions.items()):
        if not is_valid_session_id(sid):
            out.report(
                f"bad_name:{sid}",
                "session_file_name",
                f"memory/sessions/{sid}.md: the file name is not a Session ID; ignored",
            )
            continue
        if entry.error:
            out.report(
                f"unreadable:{sid}:{entry.sha}",
                "session_unreadable",
                f"memory/sessions/{sid}.md: {entry.error}; ignored",
                sid,
            )
            continue
        meta_id = entry.meta_dict.get("Session ID", "").strip()
        if meta_id and meta_id != sid:
            out.report(
                f"id_mismatch:{sid}:{meta_id}",
                "session_id_mismatch",
                f"memory/sessions/{sid}.md says Session ID {meta_id}; the file name wins",
                sid,
            )
        row = rows.get(sid)
        if row is None:
            out.actions.append(AddRow(row_from_fields(sid, entry.meta_dict, entry.summary)))
            continue
        new = synced_row(row, entry.meta_dict)
        if new is not None:
            out.actions.append(SyncRow(row, new))


def _report_rows_without_snapshot(
    rows: dict[str, it.Row], sessions: dict[str, Entry], previous_sessions: set[str] | None, out: Plan
) -> None:
    for row in rows.values():
        if row.session_id in sessions:
            continue
        if previous_sessions is not None and row.session_id in previous_sessions:
            out.report(
                f"deleted:{row.session_id}",
                "snapshot_deleted",
                f"memory/sessions/{row.session_id}.md was deleted; its row is kept (archive or restore it)",
                row.session_id,
            )
        elif previous_sessions is None and row.status in ("active", "stale"):
            out.report(
                f"missing:{row.session_id}",
                "snapshot_missing",
                f"row {row.session_id} is {row.status} but has no memory/sessions/{row.session_id}.md",
                row.session_id,
            )
