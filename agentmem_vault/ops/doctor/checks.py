"""doctor's checks of the board and the snapshots: pure (the text of the files in, findings and
planned fixes out).

Each check is one small function registered with a decorator, run in the order of this file:
``@board_check`` once over the readable board, ``@row_check`` for each session's first row,
``@snapshot_check`` for each readable snapshot. A check reports through ``IndexReview.report`` and
plans a fix by changing ``current`` (the row as it will be after the fixes) or ``plan``. The rules
are those of docs/board.md and docs/reliability.md; a new check is one more function here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar
from dataclasses import dataclass, field

from agentmem_vault.clock import parse_ts
from agentmem_vault.errors import IndexFormatError, SnapshotFormatError
from agentmem_vault.board import table as it
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.rules import archived_in_copy, fold_rows, row_from_fields, row_from_snapshot, toward_snapshot
from agentmem_vault.model.snapshot import parse_snapshot
from agentmem_vault.ops.doctor.findings import ERROR, WARNING, Finding, Plan
from agentmem_vault.ops.doctor.state import STALE_TEMP_SECONDS, TEMP_KIND, TEMP_RE, TempFile, VaultState
from agentmem_vault.ops.board import archived_row
from agentmem_vault.ops.lifecycle import continues_from_of


@dataclass
class IndexReview:
    """The readable board under review: what the checks read, and the fixes they plan."""

    state: VaultState
    doc: it.IndexDoc
    plan: Plan
    out: list[Finding] = field(default_factory=list)
    first_line: dict[str, int] = field(default_factory=dict)  # Session ID -> line of its first row
    current: dict[int, it.Row] = field(default_factory=dict)  # line -> row as it will be after the fixes

    def __post_init__(self) -> None:
        for i, r in self.doc.rows:
            self.current[i] = r
            self.first_line.setdefault(r.session_id, i)
        self.live = {r.session_id for _, r in self.doc.rows}
        # A row that cannot be parsed (an extra cell, a broken ID…) still names its session: never
        # add a second row for it (docs/reliability.md).
        self.bad_ids = {cells[0] for b in self.doc.bad if (cells := it.split_cells(b.raw))}
        self.known = self.live | set(self.state.snapshots) | self.state.archived

    def report(
        self,
        kind: str,
        severity: str,
        message: str,
        session_id: str | None = None,
        line: int | None = None,
        *,
        hint: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.out.append(Finding(kind, severity, message, session_id, line, hint, fix))


BoardCheck = Callable[[IndexReview], None]
RowCheck = Callable[[IndexReview, str, int], None]  # (review, Session ID, line of its first row)
SnapshotCheck = Callable[[IndexReview, str, str], None]  # (review, Session ID, snapshot text)
C = TypeVar("C")
BOARD_CHECKS: list[BoardCheck] = []
ROW_CHECKS: list[RowCheck] = []
SNAPSHOT_CHECKS: list[SnapshotCheck] = []


def _registrar(checks: list[C]) -> Callable[[C], C]:
    def register(fn: C) -> C:
        checks.append(fn)
        return fn

    return register


board_check = _registrar(BOARD_CHECKS)
row_check = _registrar(ROW_CHECKS)
snapshot_check = _registrar(SNAPSHOT_CHECKS)


def diagnose_state(state: VaultState) -> tuple[list[Finding], Plan | None]:
    """Findings for this state, and the plan of safe fixes to the index (None when it cannot be
    edited). Temporary files are reported whatever state the index is in."""
    unsafe = [
        Finding(
            "not_a_regular_file" if "regular file" in why else "unsafe_path",
            ERROR,
            f"{rel}: {why}",
            path=rel,
            hint="move it away and put the real file (or folder) back; nothing reads or writes it until then",
        )
        for rel, why in state.unsafe
    ]
    if any(rel == "memory/index.md" for rel, _ in state.unsafe):
        return unsafe + temp_findings(state.temp_files), None  # the board cannot be read: no index fixes
    out, plan = check_index(state)
    return unsafe + out + temp_findings(state.temp_files), plan


def check_index(state: VaultState) -> tuple[list[Finding], Plan | None]:
    """The board's findings and planned fixes; None for a board that cannot be edited."""
    out: list[Finding] = []
    if state.index_text is None:
        out.append(Finding("index_missing", ERROR, "memory/index.md does not exist", hint="run `agentmem init`"))
        return out, None
    if isinstance(state.index_text, bytes):
        hint = "restore it from a backup or the journal (memory/.agentmem/journal.jsonl)"
        out.append(Finding("index_unreadable", ERROR, "memory/index.md is not UTF-8 text", hint=hint))
        return out, None
    plan = Plan(state.index_text)
    plan.base_text = fold_conflict_copies(state, plan, out)
    try:
        doc = it.parse_index(plan.base_text)
    except IndexFormatError as exc:
        out.append(Finding("index_unreadable", ERROR, exc.message, hint="repair the table header by hand"))
        return out, None
    review = IndexReview(state, doc, plan, out)
    for check in BOARD_CHECKS:
        check(review)
    orig = dict(doc.rows)
    for i, r in review.current.items():
        if r != orig[i] and i not in plan.edits:
            plan.edits[i] = r
    return out, plan


def fold_conflict_copies(state: VaultState, plan: Plan, out: list[Finding]) -> str:
    """Sync-conflict copies of the index: fold readable rows in, as the daemon does; the board's
    text with them folded."""
    assert isinstance(state.index_text, str)
    text = state.index_text
    for name, copy_text in state.conflict_copies.items():
        copy, why = None, " that is not UTF-8 text"
        if isinstance(copy_text, str):
            try:
                copy = it.parse_index(copy_text)
                it.parse_index(text)
            except IndexFormatError as exc:
                copy, why = None, f": {exc.message}"
        if copy is None:
            by_hand = f"compare it with memory/index.md by hand, then delete memory/{name}"
            out.append(Finding("conflict_copy", ERROR, f"memory/{name} is a sync-conflict copy{why}", hint=by_hand))
            continue
        gone = archived_in_copy(text, copy.row_list(), state.archived)
        new_text, added, updated = fold_rows(text, copy.row_list(), archived=state.archived)
        detail = f"{len(added)} row(s) only in the copy, {len(updated)} newer in the copy"
        if gone:
            detail += f", {len(gone)} archived since (not put back: {', '.join(gone)})"
        fold = (
            "fold its readable rows into memory/index.md (the copy stays)"
            if copy.bad
            else "fold its rows into memory/index.md (newer Updated At wins, references united) "
            "and move the copy to memory/.agentmem/conflicts/"
        )
        out.append(Finding("conflict_copy", ERROR, f"memory/{name} is a sync-conflict copy ({detail})", fix=fold))
        if copy.bad:
            first, hint = copy.bad[0].line_no, f"look at those rows of memory/{name}, then delete it"
            message = f"memory/{name}: {len(copy.bad)} row(s) cannot be read (first: line {first})"
            out.append(Finding("conflict_copy", ERROR, message, line=first, hint=hint))
        else:
            plan.fold_moves.append(name)
        text = new_text
    return text


# -- the board ----------------------------------------------------------------------------------


@board_check
def malformed_rows(r: IndexReview) -> None:
    hint = "repair the row by hand (it is kept as it is; no command changes the table until then)"
    for b in r.doc.bad:
        r.report("malformed_row", ERROR, f"memory/index.md line {b.line_no}: {b.reason}", line=b.line_no, hint=hint)


@board_check
def rows_without_outer_pipes(r: IndexReview) -> None:
    """A row that leaves out the leading or trailing ``|`` is a row (GFM; docs/board.md): read and
    counted like any other; reported so that a person sees the board is not as the tool writes it."""
    for i, row in r.doc.rows:
        s = r.doc.lines[i].strip()
        if not (s.startswith("|") and s.endswith("|")):
            where = f"memory/index.md line {i + 1}: the row of {row.session_id}"
            message = f"{where} has no leading or trailing '|' (valid Markdown; read as a row)"
            fix = "write the row with both outer pipes (the same cells)"
            r.report("row_without_outer_pipes", WARNING, message, row.session_id, i + 1, fix=fix)
            r.plan.edits.setdefault(i, r.current[i])


@board_check
def duplicate_rows(r: IndexReview) -> None:
    """A second row of a session: an exact copy goes, a differing one is for a person."""
    lines = r.doc.lines
    for i, row in r.doc.rows:
        sid = row.session_id
        j = r.first_line[sid]
        if j == i:
            continue
        lines_of = f"(lines {j + 1} and {i + 1})"
        same = it.render_row(row) == it.render_row(r.current[j])
        if same and lines[i].rstrip("\r\n") == lines[j].rstrip("\r\n"):
            fix = f"remove the second copy (line {i + 1})"
            r.report("duplicate_id", ERROR, f"{sid} appears twice with identical rows {lines_of}", sid, i + 1, fix=fix)
            r.plan.edits[i] = None
        else:
            message = f"{sid} appears in more than one row with different values {lines_of}"
            hint = "keep the right row and delete the other by hand (the journal lists earlier values)"
            r.report("duplicate_id", ERROR, message, sid, i + 1, hint=hint)


@board_check
def half_archived(r: IndexReview) -> None:
    """A row whose session has memory/archive/<id>/ too: an archive of an older version killed
    halfway; when --fix may finish it and what a person is told otherwise: docs/lifecycle.md,
    "Archive". ``referenced_by`` drops the row from its sources' Referenced By."""
    dups = set(r.doc.duplicate_ids())
    for sid, i in r.first_line.items():
        if sid not in r.state.archived:
            continue
        row, index = r.current[i], r.state.archive_indexes.get(sid)
        held = archived_row(index) if isinstance(index, str) else None
        message = f"{sid} still has a row but memory/archive/{sid}/ exists"
        if sid in r.state.snapshots:
            hint = (
                f"its snapshot never moved: move memory/archive/{sid}/ out of the vault, then `agentmem archive {sid}`"
            )
        elif held is None or held.with_(referenced_by="") != row.with_(referenced_by=""):
            hint = f"the row differs from memory/archive/{sid}/index.md: compare them, then delete the row by hand"
        elif row.referencing_ids or sid in dups:
            hint = (
                "other sessions continue from it, or it has two rows: see those findings, then `agentmem doctor --fix`"
            )
        else:
            fix = f"finish the archive: remove the row (memory/archive/{sid}/index.md holds it)"
            r.report("half_archived", ERROR, message, sid, i + 1, fix=fix)
            r.plan.edits[i] = None
            r.live.discard(sid)
            continue
        r.report("half_archived", ERROR, message, sid, i + 1, hint=hint)


@board_check
def each_row(r: IndexReview) -> None:
    for sid, i in r.first_line.items():
        if i in r.plan.edits and r.plan.edits[i] is None:
            continue  # the row goes (half_archived)
        for check in ROW_CHECKS:
            check(r, sid, i)


@board_check
def each_snapshot(r: IndexReview) -> None:
    for sid, snap in sorted(r.state.snapshots.items()):
        if isinstance(snap, bytes):
            message = f"memory/sessions/{sid}.md is not UTF-8 text"
            r.report("snapshot_unreadable", ERROR, message, sid, hint="re-save it as UTF-8")
            continue
        for check in SNAPSHOT_CHECKS:
            check(r, sid, snap)


@board_check
def one_sided_referenced_by(r: IndexReview) -> None:
    """A Referenced By entry whose session's snapshot does not say so."""
    for src, i in r.first_line.items():
        for ref in r.current[i].referencing_ids:
            ref_snap = r.state.snapshots.get(ref)
            lists = f"{src}'s Referenced By lists {ref}"
            if ref in r.live and isinstance(ref_snap, str) and src not in continues_from_of(ref_snap):
                message = f"{lists}, but memory/sessions/{ref}.md does not continue from {src}"
                cmd = f"{src} --session {ref}"
                hint = f"record it with `agentmem continue {cmd}` or drop it with `agentmem release {cmd}`"
                r.report("one_sided_reference", WARNING, message, src, i + 1, hint=hint)
            elif ref in r.live and ref_snap is None:
                message = f"{lists}, which has no snapshot to say so"
                hint = f"`agentmem update {ref}` writes its snapshot"
                r.report("one_sided_reference", WARNING, message, src, i + 1, hint=hint)


@board_check
def session_file_names(r: IndexReview) -> None:
    for name in r.state.other_session_files:
        stem = name[:-3] if name.endswith(".md") else name
        base = stem.split(" (")[0].split(".sync-conflict")[0]
        where = f"memory/sessions/{name}"
        if is_valid_session_id(base) and base != stem:
            hint = f'merge it with `agentmem update {base} --snapshot "{where}"`, then delete it'
            r.report("conflict_copy", ERROR, f"{where} is a sync-conflict copy of {base}'s snapshot", base, hint=hint)
        else:
            hint = "rename or move it; agentmem ignores it"
            r.report("session_file_name", WARNING, f"{where}: the name is not <Session ID>.md", hint=hint)


# -- each session's row -------------------------------------------------------------------------


@row_check
def row_status(r: IndexReview, sid: str, i: int) -> None:
    status = r.current[i].status.strip()
    low = status.lower()
    if low in it.STATUSES and status != low:
        r.current[i] = r.current[i].with_(status=low)
        r.report("bad_status", ERROR, f"{sid}: Status {status!r} is not lower-case", sid, i + 1, fix=f"write {low!r}")
    elif low in ("closed", "archived", "done", "finished"):
        r.current[i] = r.current[i].with_(status="stale")
        hint = (
            f"memory/archive/{sid}/ exists: the archive was not finished; check it and remove the row"
            if sid in r.state.archived
            else f"archive it with `agentmem archive {sid}`"
        )
        message = f"{sid}: Status {status!r} is not used in the index (idle/active/stale)"
        fix = "set it to 'stale' (finished, waiting to be archived)"
        r.report("bad_status", ERROR, message, sid, i + 1, fix=fix, hint=hint)
    elif low not in it.STATUSES:
        hint = "set it to idle, active or stale by hand"
        r.report("bad_status", ERROR, f"{sid}: unknown Status {status!r}", sid, i + 1, hint=hint)


@row_check
def idle_with_snapshot(r: IndexReview, sid: str, i: int) -> None:
    # The checks from here on see the status as it will be after the fixes.
    if r.current[i].status == "idle" and sid in r.state.snapshots:
        r.current[i] = r.current[i].with_(status="active")
        fix = "set it to 'active' (the snapshot is real work)"
        message = f"{sid} is idle but has memory/sessions/{sid}.md"
        r.report("idle_with_snapshot", ERROR, message, sid, i + 1, fix=fix)


@row_check
def row_without_snapshot(r: IndexReview, sid: str, i: int) -> None:
    status = r.current[i].status
    if status in ("active", "stale") and sid not in r.state.snapshots:
        message = f"{sid} is {status} but memory/sessions/{sid}.md does not exist"
        hint = f"write it with `agentmem update {sid} --snapshot -`, or archive the row"
        r.report("row_without_snapshot", WARNING, message, sid, i + 1, hint=hint)


@row_check
def row_timestamps(r: IndexReview, sid: str, i: int) -> None:
    for col in ("started_at", "updated_at"):
        v = getattr(r.current[i], col)
        if parse_ts(v) is None:
            message = f"{sid}: {col.replace('_', ' ').title()} {v!r} is not a time"
            r.report("bad_timestamp", WARNING, message, sid, i + 1, hint="write it as YYYY-MM-DD HH:MM")


@row_check
def referenced_by(r: IndexReview, sid: str, i: int) -> None:
    """Referenced By: IDs only, of sessions that still exist and are still working."""
    refs = r.current[i].referencing_ids
    keep: list[str] = []
    for ref in refs:
        if ref == sid:
            r.report("self_reference", ERROR, f"{sid} lists itself in Referenced By", sid, i + 1, fix="remove it")
        elif not is_valid_session_id(ref):
            keep.append(ref)
            message = f"{sid}: Referenced By holds {ref!r}, which is not a Session ID"
            hint = "Referenced By lists Session IDs, never agent names; correct it by hand"
            r.report("unknown_reference", ERROR, message, sid, i + 1, hint=hint)
        elif ref in r.live or ref in r.state.snapshots:
            keep.append(ref)
        elif ref in r.state.archived:
            message = f"{sid}: Referenced By lists {ref}, which is archived"
            fix = f"remove {ref} (an archived session continues nothing)"
            r.report("unknown_reference", ERROR, message, sid, i + 1, fix=fix)
        else:
            message = f"{sid}: Referenced By lists {ref}, which exists nowhere"
            r.report("unknown_reference", ERROR, message, sid, i + 1, fix=f"remove {ref}")
    if keep != refs:
        r.current[i] = r.current[i].with_(referenced_by=it.join_id_list(keep))


# -- each snapshot ------------------------------------------------------------------------------


@snapshot_check
def snapshot_without_row(r: IndexReview, sid: str, snap: str) -> None:
    if sid in r.live:
        return
    where = f"memory/sessions/{sid}.md"
    if sid in r.state.archived:
        hint = f"compare it with memory/archive/{sid}/session.md and delete one"
        r.report("snapshot_without_row", ERROR, f"{where} has no row and the session is archived", sid, hint=hint)
    elif sid in r.bad_ids:
        message = f"{where}: its row in memory/index.md cannot be read; not adding a second one"
        hint = "repair that row by hand (see the malformed-row finding)"
        r.report("snapshot_without_row", ERROR, message, sid, hint=hint)
    else:
        fix = "add its row from the snapshot's Metadata (its Status when valid, else active)"
        r.report("snapshot_without_row", ERROR, f"{where} has no row in memory/index.md", sid, fix=fix)
        r.plan.appends.append(_row_from_snapshot_text(sid, snap))


@snapshot_check
def row_and_snapshot_in_step(r: IndexReview, sid: str, snap: str) -> None:
    """Topic, Status and Updated At of the row agree with the snapshot's Metadata; a disagreement
    is resolved toward the snapshot (the fuller record, docs/board.md). A placeholder Topic in the
    snapshot never replaces a real one."""
    i = r.first_line.get(sid)
    if i is None:
        return
    try:
        meta = parse_snapshot(snap).metadata
    except SnapshotFormatError:
        return
    row = r.current[i]
    written = next((x.status.strip() for j, x in r.doc.rows if j == i), "")
    # a Status fixed above (a hand-written `closed`) says what the person meant: kept
    changes = toward_snapshot(row, meta, keep_status=written not in it.STATUSES)
    if not changes:
        return
    names = {"topic": "Topic", "status": "Status", "updated_at": "Updated At"}
    said = "; ".join(f"{names[k]} {getattr(row, k)!r} vs {v!r}" for k, v in changes.items())
    message = f"{sid}: the row and memory/sessions/{sid}.md disagree ({said}: row vs snapshot)"
    r.report("row_snapshot_mismatch", WARNING, message, sid, i + 1, fix="copy the snapshot's Metadata to the row")
    r.current[i] = row.with_(**changes)


@snapshot_check
def continues_from(r: IndexReview, sid: str, snap: str) -> None:
    """Continues From against the sources' Referenced By."""
    for src in continues_from_of(snap):
        if src == sid:
            continue
        said = f"memory/sessions/{sid}.md continues from {src}"
        release = f"`agentmem release {src} --session {sid}`"
        if src not in r.known:
            hint = f"correct it, or {release}"
            r.report("unknown_reference", WARNING, f"{said}, which exists nowhere", sid, hint=hint)
        elif src in r.state.archived and src not in r.live and sid not in r.state.archived:
            # archived with --force while this session still continued from it (docs/lifecycle.md)
            hint = f"release it with {release} (the archive keeps {src}'s snapshot)"
            r.report("archived_reference", WARNING, f"{said}, which is archived", sid, hint=hint)
        elif src in r.first_line and sid not in r.state.archived:
            i = r.first_line[src]
            refs = r.current[i].referencing_ids
            if sid not in refs:
                message = f"{said}, but {src}'s Referenced By lacks {sid}"
                fix = f"add {sid} to {src}'s Referenced By"
                r.report("one_sided_reference", ERROR, message, src, i + 1, fix=fix)
                r.current[i] = r.current[i].with_(referenced_by=it.join_id_list(refs + [sid]))


def _row_from_snapshot_text(sid: str, text: str) -> it.Row:
    """The row the daemon would add for this snapshot (an unreadable one gives the ID's facts)."""
    try:
        return row_from_snapshot(sid, parse_snapshot(text))
    except SnapshotFormatError:
        return row_from_fields(sid, {}, None)


# -- leftovers of interrupted writes ------------------------------------------------------------


def _age(seconds: float) -> str:
    for unit, size, below in (("seconds", 1, 120), ("minutes", 60, 7200), ("hours", 3600, 2 * 86400)):
        if seconds < below:
            return f"{max(0, int(seconds // size))} {unit}"
    return f"{int(seconds // 86400)} days"


def temp_findings(temps: list[TempFile]) -> list[Finding]:
    out: list[Finding] = []
    for t in temps:
        m = TEMP_RE.match(t.rel.rsplit("/", 1)[-1])
        target = m.group("target") if m else "?"
        where = f"memory/{t.rel}"
        if t.age >= STALE_TEMP_SECONDS:
            message = f"{where} is left over from an interrupted write of {target} "
            message += f"({t.size} bytes, last modified {_age(t.age)} ago)"
            out.append(Finding(TEMP_KIND, WARNING, message, path=where, fix="remove it (a copy goes to the backup)"))
        else:
            when = "with a modification time in the future" if t.age < 0 else f"modified {_age(t.age)} ago"
            message = f"{where} is a temporary file of a write of {target} {when}; it may belong to a write in progress"
            hint = f"nothing to do if it goes away; --fix removes it once it is {STALE_TEMP_SECONDS // 60} minutes old"
            out.append(Finding(TEMP_KIND, WARNING, message, path=where, hint=hint))
    return out
