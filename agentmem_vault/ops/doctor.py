"""doctor: find what is wrong in memory/, and with ``--fix`` repair what is safe.

"Safe" means nothing is lost and no judgement is needed: a lost reference is re-recorded, a
reference to a session that no longer exists anywhere is dropped, a snapshot gets the row it lacks,
an exact duplicate row goes, ``closed``/``archived`` become ``stale``, a sync-conflict copy of the
index is folded back row by row (the rules of model/session_rules.py, as the daemon does). Everything else — broken rows, differing
duplicates, references in snapshots, conflict copies of snapshots — is reported for a person with
the command that resolves it. Files are backed up under ``memory/.agentmem/backups/`` first.

A process killed in the middle of an atomic write leaves its temporary file
(``.<name>.<pid>.<n>.agentmem-tmp``, see ``fs.TMP_SUFFIX``) next to the file it was writing.
Those are reported anywhere under ``memory/``; ``--fix`` removes the ones last modified more than
STALE_TEMP_SECONDS ago (a write takes milliseconds, so their writer is gone), under the vault lock.
Younger ones may belong to a write in progress and are only reported.

Diagnosis is pure (``diagnose_state``: the text of the files in, findings out); ``read_state``
gathers the files and ``repair`` applies the planned fixes through ``BoardWriter``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentmem_vault.clock import parse_ts
from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, IndexFormatError, SnapshotFormatError
from agentmem_vault.board import table as it
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.rules import (
    archived_in_copy,
    fold_rows,
    is_conflict_copy,
    row_from_fields,
    row_from_snapshot,
)
from agentmem_vault.model.snapshot import parse_snapshot
from agentmem_vault.ops.lifecycle import continues_from_of, edit_table
from agentmem_vault.fs import TMP_SUFFIX, check_inside_vault, read_bytes
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import _kind
from agentmem_vault.backups import backup_dir, backup_files, conflict_destination

ERROR = "error"
WARNING = "warning"
TEMP_KIND = "temp_file"
STALE_TEMP_SECONDS = 5 * 60
# What atomic_write_bytes (and the recall index) name their temporaries: .<name>.<pid>.<n>.agentmem-tmp
_TEMP_RE = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.(?P<n>\d+)" + re.escape(TMP_SUFFIX) + "$")


@dataclass
class Finding:
    kind: str
    severity: str
    message: str
    session_id: str | None = None
    line: int | None = None
    hint: str | None = None  # what a person should do (when it is not fixed)
    fix: str | None = None  # what --fix does (None: left for a person)
    fixed: bool = False
    path: str | None = None  # the file concerned, relative to the vault (temporary files)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class VaultState:
    """The files doctor looks at, as text (None: missing; ``bytes``: not UTF-8)."""

    index_text: str | bytes | None
    snapshots: dict[str, str | bytes]  # valid Session ID -> text
    other_session_files: list[str]  # names in sessions/ that are not <valid id>.md
    archived: set[str]
    conflict_copies: dict[str, str | bytes]  # name in memory/ -> text
    temp_files: list[TempFile] = field(default_factory=list)  # leftovers of interrupted writes
    # (path relative to the vault, why): FIFOs, sockets, devices, links leading outside the vault,
    # a file where a folder belongs. Never read, never "fixed" (docs/reliability.md).
    unsafe: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class TempFile:
    rel: str  # relative to memory/, "/" separators
    age: float  # seconds since it was last modified when read (negative: dated in the future)
    size: int


@dataclass
class Plan:
    """The fixes: row edits by line, rows to add, conflict copies folded into ``base_text``."""

    base_text: str
    edits: dict[int, it.Row | None] = field(default_factory=dict)
    appends: list[it.Row] = field(default_factory=list)
    fold_moves: list[str] = field(default_factory=list)


@dataclass
class DoctorReport:
    findings: list[Finding] = field(default_factory=list)
    backup: str | None = None
    fixed_run: bool = False

    def problems(self) -> list[Finding]:
        return [f for f in self.findings if not f.fixed]

    def unresolved_errors(self) -> list[Finding]:
        """Errors still there after this run (the exit status); warnings are advice."""
        return [f for f in self.findings if not f.fixed and f.severity == ERROR]

    def left_for_person(self) -> list[Finding]:
        """What ``--fix`` does not repair."""
        return [f for f in self.findings if not f.fixed and not f.fix]

    def to_dict(self) -> dict:
        return {
            "ok": not self.problems(),
            "findings": [f.to_dict() for f in self.findings],
            "fixable": [f.to_dict() for f in self.findings if f.fix and not f.fixed],
            "fixed": [f.to_dict() for f in self.findings if f.fixed],
            "left_for_person": [f.to_dict() for f in self.left_for_person()],
            "backup": self.backup,
        }


# -- reading ------------------------------------------------------------------------------------


def _decode(data: bytes) -> str | bytes:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def is_temp_name(name: str) -> bool:
    return bool(_TEMP_RE.match(name))


def find_temp_files(vault: Vault, now: float | None = None) -> list[TempFile]:
    """Atomic-write temporaries anywhere under memory/, except in doctor's own backups (the copies
    of removed temporaries live there under their old names)."""
    when = time.time() if now is None else now
    backups = os.path.normcase(str(vault.state_dir / "backups"))
    out: list[TempFile] = []
    for dirpath, dirnames, filenames in os.walk(vault.memory):
        dirnames[:] = sorted(d for d in dirnames if os.path.normcase(os.path.join(dirpath, d)) != backups)
        for name in sorted(filenames):
            if not is_temp_name(name):
                continue
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue  # gone since the listing
            if not stat.S_ISREG(st.st_mode):
                continue  # a symlink or something odd: not ours
            rel = Path(full).relative_to(vault.memory).as_posix()
            out.append(TempFile(rel, when - st.st_mtime, st.st_size))
    return out


def _unsafe_entry(path: Path) -> str | None:
    """Why ``path`` must not be read (a FIFO, socket, device, or a link leading outside the vault),
    or None for a regular file, a folder or nothing."""
    try:
        check_inside_vault(path)
        st = path.stat()
    except AgentmemError as exc:
        return exc.message
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    return f"{path.name} is {_kind(st.st_mode)}, not a regular file; it is never read or written"


def read_state(vault: Vault, *, now: float | None = None) -> VaultState:
    unsafe: list[tuple[str, str]] = []
    idx: bytes | None = None
    why = _unsafe_entry(vault.index_path)
    if why:
        unsafe.append(("memory/index.md", why))
    else:
        idx = read_bytes(vault.index_path)
    for folder in (vault.sessions_dir, vault.archive_dir, vault.state_dir):
        if folder.exists() and not folder.is_dir():
            unsafe.append(
                (
                    f"memory/{folder.name}",
                    f"memory/{folder.name} is a file, not a folder; commands that "
                    "write there refuse until it is moved away",
                )
            )
        elif why := _unsafe_entry(folder):
            unsafe.append((f"memory/{folder.name}", why))
    snapshots: dict[str, str | bytes] = {}
    others: list[str] = []
    try:
        names = sorted(os.listdir(vault.sessions_dir)) if not any(u[0] == "memory/sessions" for u in unsafe) else []
    except (FileNotFoundError, NotADirectoryError):
        names = []
    for n in names:
        p = vault.sessions_dir / n
        if n.startswith("."):
            continue
        if why := _unsafe_entry(p):
            unsafe.append((f"memory/sessions/{n}", why))
            continue
        if not p.is_file():
            continue
        if n.endswith(".md") and is_valid_session_id(n[:-3]):
            snapshots[n[:-3]] = _decode(read_bytes(p) or b"")
        else:
            others.append(n)
    try:
        archived = {n for n in os.listdir(vault.archive_dir) if (vault.archive_dir / n).is_dir()}
    except (FileNotFoundError, NotADirectoryError):
        archived = set()
    conflicts: dict[str, str | bytes] = {}
    try:
        top = sorted(os.listdir(vault.memory))
    except FileNotFoundError:
        top = []
    for n in top:
        if n != "index.md" and is_conflict_copy(n) and (vault.memory / n).is_file():
            conflicts[n] = _decode(read_bytes(vault.memory / n) or b"")
    return VaultState(
        None if idx is None else _decode(idx),
        snapshots,
        others,
        archived,
        conflicts,
        find_temp_files(vault, now),
        unsafe,
    )


# -- diagnosis (pure) ---------------------------------------------------------------------------


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
    out, plan = _diagnose_index(state)
    return unsafe + out + temp_findings(state.temp_files), plan


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{max(0, int(seconds))} seconds"
    if seconds < 7200:
        return f"{int(seconds // 60)} minutes"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} hours"
    return f"{int(seconds // 86400)} days"


def temp_findings(temps: list[TempFile]) -> list[Finding]:
    out: list[Finding] = []
    for t in temps:
        m = _TEMP_RE.match(t.rel.rsplit("/", 1)[-1])
        target = m.group("target") if m else "?"
        where = f"memory/{t.rel}"
        if t.age >= STALE_TEMP_SECONDS:
            out.append(
                Finding(
                    TEMP_KIND,
                    WARNING,
                    f"{where} is left over from an interrupted write of {target} "
                    f"({t.size} bytes, last modified {_age(t.age)} ago)",
                    path=where,
                    fix="remove it (a copy goes to the backup)",
                )
            )
        else:
            when = "with a modification time in the future" if t.age < 0 else f"modified {_age(t.age)} ago"
            out.append(
                Finding(
                    TEMP_KIND,
                    WARNING,
                    f"{where} is a temporary file of a write of {target} {when}; it may belong to a write in progress",
                    path=where,
                    hint=f"nothing to do if it goes away; --fix removes it once it is {STALE_TEMP_SECONDS // 60} "
                    "minutes old",
                )
            )
    return out


def _diagnose_index(state: VaultState) -> tuple[list[Finding], Plan | None]:
    out: list[Finding] = []
    if state.index_text is None:
        out.append(Finding("index_missing", ERROR, "memory/index.md does not exist", hint="run `agentmem init`"))
        return out, None
    if isinstance(state.index_text, bytes):
        out.append(
            Finding(
                "index_unreadable",
                ERROR,
                "memory/index.md is not UTF-8 text",
                hint="restore it from a backup or the journal (memory/.agentmem/journal.jsonl)",
            )
        )
        return out, None
    text = state.index_text
    plan = Plan(text)

    # Sync-conflict copies of the index: fold readable rows in, as the daemon does.
    for name, copy_text in state.conflict_copies.items():
        if isinstance(copy_text, bytes):
            out.append(
                Finding(
                    "conflict_copy",
                    ERROR,
                    f"memory/{name} is a sync-conflict copy that is not UTF-8 text",
                    hint=f"compare it with memory/index.md by hand, then delete memory/{name}",
                )
            )
            continue
        try:
            copy = it.parse_index(copy_text)
            it.parse_index(text)
        except IndexFormatError as exc:
            out.append(
                Finding(
                    "conflict_copy",
                    ERROR,
                    f"memory/{name} is a sync-conflict copy: {exc.message}",
                    hint=f"compare it with memory/index.md by hand, then delete memory/{name}",
                )
            )
            continue
        gone = archived_in_copy(text, copy.row_list(), state.archived)
        new_text, added, updated = fold_rows(text, copy.row_list(), archived=state.archived)
        detail = f"{len(added)} row(s) only in the copy, {len(updated)} newer in the copy"
        if gone:
            detail += f", {len(gone)} archived since (not put back: {', '.join(gone)})"
        if copy.bad:
            out.append(
                Finding(
                    "conflict_copy",
                    ERROR,
                    f"memory/{name} is a sync-conflict copy ({detail})",
                    fix="fold its readable rows into memory/index.md (the copy stays)",
                )
            )
            out.append(
                Finding(
                    "conflict_copy",
                    ERROR,
                    f"memory/{name}: {len(copy.bad)} row(s) cannot be read (first: line {copy.bad[0].line_no})",
                    line=copy.bad[0].line_no,
                    hint=f"look at those rows of memory/{name}, then delete it",
                )
            )
        else:
            out.append(
                Finding(
                    "conflict_copy",
                    ERROR,
                    f"memory/{name} is a sync-conflict copy ({detail})",
                    fix="fold its rows into memory/index.md (newer Updated At wins, references united) "
                    "and move the copy to memory/.agentmem/conflicts/",
                )
            )
            plan.fold_moves.append(name)
        text = new_text
    plan.base_text = text

    try:
        doc = it.parse_index(text)
    except IndexFormatError as exc:
        out.append(Finding("index_unreadable", ERROR, exc.message, hint="repair the table header by hand"))
        return out, None

    for b in doc.bad:
        out.append(
            Finding(
                "malformed_row",
                ERROR,
                f"memory/index.md line {b.line_no}: {b.reason}",
                line=b.line_no,
                hint="repair the row by hand (it is kept as it is; no command changes the table until then)",
            )
        )

    rows = doc.row_list()
    live = {r.session_id for r in rows}
    # A row that cannot be parsed (an extra cell, a broken ID…) still names its session: never add
    # a second row for it (docs/reliability.md).
    bad_ids = {cells[0] for b in doc.bad if (cells := it.split_cells(b.raw))}
    known = live | set(state.snapshots) | state.archived
    first_line: dict[str, int] = {}
    current: dict[int, it.Row] = {}  # line -> row as it will be after the fixes

    def row_at(i: int) -> it.Row:
        return current[i]

    for i, r in doc.rows:
        current[i] = r
        sid = r.session_id
        if sid in first_line:
            j = first_line[sid]
            if it.render_row(r) == it.render_row(row_at(j)) and doc.lines[i].rstrip("\r\n") == doc.lines[j].rstrip(
                "\r\n"
            ):
                out.append(
                    Finding(
                        "duplicate_id",
                        ERROR,
                        f"{sid} appears twice with identical rows (lines {j + 1} and {i + 1})",
                        session_id=sid,
                        line=i + 1,
                        fix=f"remove the second copy (line {i + 1})",
                    )
                )
                plan.edits[i] = None
            else:
                out.append(
                    Finding(
                        "duplicate_id",
                        ERROR,
                        f"{sid} appears in more than one row with different values (lines {j + 1} and {i + 1})",
                        session_id=sid,
                        line=i + 1,
                        hint="keep the right row and delete the other by hand (the journal lists earlier values)",
                    )
                )
            continue
        first_line[sid] = i

    for sid, i in first_line.items():
        r = current[i]
        new = r
        status = r.status.strip()
        low = status.lower()
        if low in it.STATUSES and status != low:
            new = new.with_(status=low)
            out.append(
                Finding(
                    "bad_status",
                    ERROR,
                    f"{sid}: Status {status!r} is not lower-case",
                    session_id=sid,
                    line=i + 1,
                    fix=f"write {low!r}",
                )
            )
        elif low in ("closed", "archived", "done", "finished"):
            new = new.with_(status="stale")
            hint = (
                f"memory/archive/{sid}/ exists: the archive was not finished; check it and remove the row"
                if sid in state.archived
                else f"archive it with `agentmem archive {sid}`"
            )
            out.append(
                Finding(
                    "bad_status",
                    ERROR,
                    f"{sid}: Status {status!r} is not used in the index (idle/active/stale)",
                    session_id=sid,
                    line=i + 1,
                    fix="set it to 'stale' (finished, waiting to be archived)",
                    hint=hint,
                )
            )
        elif low not in it.STATUSES:
            out.append(
                Finding(
                    "bad_status",
                    ERROR,
                    f"{sid}: unknown Status {status!r}",
                    session_id=sid,
                    line=i + 1,
                    hint="set it to idle, active or stale by hand",
                )
            )
        low = new.status  # the checks below see the status as it will be after the fixes
        if low == "idle" and sid in state.snapshots:
            new = new.with_(status="active")
            out.append(
                Finding(
                    "idle_with_snapshot",
                    ERROR,
                    f"{sid} is idle but has memory/sessions/{sid}.md",
                    session_id=sid,
                    line=i + 1,
                    fix="set it to 'active' (the snapshot is real work)",
                )
            )
        if low in ("active", "stale") and sid not in state.snapshots:
            out.append(
                Finding(
                    "row_without_snapshot",
                    WARNING,
                    f"{sid} is {low} but memory/sessions/{sid}.md does not exist",
                    session_id=sid,
                    line=i + 1,
                    hint=f"write it with `agentmem update {sid} --snapshot -`, or archive the row",
                )
            )
        if sid in state.archived:
            out.append(
                Finding(
                    "half_archived",
                    ERROR,
                    f"{sid} still has a row but memory/archive/{sid}/ exists",
                    session_id=sid,
                    line=i + 1,
                    hint=f"check memory/archive/{sid}/; if it is complete, delete the row by hand",
                )
            )
        for col in ("started_at", "updated_at"):
            v = getattr(r, col)
            if parse_ts(v) is None:
                out.append(
                    Finding(
                        "bad_timestamp",
                        WARNING,
                        f"{sid}: {col.replace('_', ' ').title()} {v!r} is not a time",
                        session_id=sid,
                        line=i + 1,
                        hint="write it as YYYY-MM-DD HH:MM",
                    )
                )
        # Referenced By: IDs only, of sessions that still exist and are still working.
        keep: list[str] = []
        for ref in r.referencing_ids:
            if ref == sid:
                out.append(
                    Finding(
                        "self_reference",
                        ERROR,
                        f"{sid} lists itself in Referenced By",
                        session_id=sid,
                        line=i + 1,
                        fix="remove it",
                    )
                )
            elif not is_valid_session_id(ref):
                keep.append(ref)
                out.append(
                    Finding(
                        "unknown_reference",
                        ERROR,
                        f"{sid}: Referenced By holds {ref!r}, which is not a Session ID",
                        session_id=sid,
                        line=i + 1,
                        hint="Referenced By lists Session IDs, never agent names; correct it by hand",
                    )
                )
            elif ref in live or ref in state.snapshots:
                keep.append(ref)
            elif ref in state.archived:
                out.append(
                    Finding(
                        "unknown_reference",
                        ERROR,
                        f"{sid}: Referenced By lists {ref}, which is archived",
                        session_id=sid,
                        line=i + 1,
                        fix=f"remove {ref} (an archived session continues nothing)",
                    )
                )
            else:
                out.append(
                    Finding(
                        "unknown_reference",
                        ERROR,
                        f"{sid}: Referenced By lists {ref}, which exists nowhere",
                        session_id=sid,
                        line=i + 1,
                        fix=f"remove {ref}",
                    )
                )
        if keep != r.referencing_ids:
            new = new.with_(referenced_by=it.join_id_list(keep))
        current[i] = new

    # Snapshots: rows they lack, and their Continues From against the sources' Referenced By.
    line_of = dict(first_line)
    for sid, snap in sorted(state.snapshots.items()):
        if isinstance(snap, bytes):
            out.append(
                Finding(
                    "snapshot_unreadable",
                    ERROR,
                    f"memory/sessions/{sid}.md is not UTF-8 text",
                    session_id=sid,
                    hint="re-save it as UTF-8",
                )
            )
            continue
        if sid not in live:
            if sid in state.archived:
                out.append(
                    Finding(
                        "snapshot_without_row",
                        ERROR,
                        f"memory/sessions/{sid}.md has no row and the session is archived",
                        session_id=sid,
                        hint=f"compare it with memory/archive/{sid}/session.md and delete one",
                    )
                )
            elif sid in bad_ids:
                out.append(
                    Finding(
                        "snapshot_without_row",
                        ERROR,
                        f"memory/sessions/{sid}.md: its row in memory/index.md cannot be read; not adding a second one",
                        session_id=sid,
                        hint="repair that row by hand (see the malformed-row finding)",
                    )
                )
            else:
                out.append(
                    Finding(
                        "snapshot_without_row",
                        ERROR,
                        f"memory/sessions/{sid}.md has no row in memory/index.md",
                        session_id=sid,
                        fix="add its row from the snapshot's Metadata (Status active)",
                    )
                )
                plan.appends.append(_row_from_snapshot_text(sid, snap))
        for src in continues_from_of(snap):
            if src == sid:
                continue
            if src not in known:
                out.append(
                    Finding(
                        "unknown_reference",
                        WARNING,
                        f"memory/sessions/{sid}.md continues from {src}, which exists nowhere",
                        session_id=sid,
                        hint=f"correct it, or `agentmem release {src} --session {sid}`",
                    )
                )
                continue
            if src in line_of and sid not in state.archived:
                i = line_of[src]
                refs = current[i].referencing_ids
                if sid not in refs:
                    out.append(
                        Finding(
                            "one_sided_reference",
                            ERROR,
                            f"memory/sessions/{sid}.md continues from {src}, but {src}'s Referenced By lacks {sid}",
                            session_id=src,
                            line=i + 1,
                            fix=f"add {sid} to {src}'s Referenced By",
                        )
                    )
                    current[i] = current[i].with_(referenced_by=it.join_id_list(refs + [sid]))

    # The other direction: a Referenced By entry whose session's snapshot does not say so.
    for src, i in first_line.items():
        for ref in current[i].referencing_ids:
            ref_snap = state.snapshots.get(ref)
            if ref in live and isinstance(ref_snap, str) and src not in continues_from_of(ref_snap):
                out.append(
                    Finding(
                        "one_sided_reference",
                        WARNING,
                        f"{src}'s Referenced By lists {ref}, but memory/sessions/{ref}.md does not continue from {src}",
                        session_id=src,
                        line=i + 1,
                        hint=f"record it with `agentmem continue {src} --session {ref}` or drop it with "
                        f"`agentmem release {src} --session {ref}`",
                    )
                )
            elif ref in live and ref_snap is None:
                out.append(
                    Finding(
                        "one_sided_reference",
                        WARNING,
                        f"{src}'s Referenced By lists {ref}, which has no snapshot to say so",
                        session_id=src,
                        line=i + 1,
                        hint=f"`agentmem update {ref}` writes its snapshot",
                    )
                )

    for name in state.other_session_files:
        stem = name[:-3] if name.endswith(".md") else name
        base = stem.split(" (")[0].split(".sync-conflict")[0]
        if is_valid_session_id(base) and base != stem:
            out.append(
                Finding(
                    "conflict_copy",
                    ERROR,
                    f"memory/sessions/{name} is a sync-conflict copy of {base}'s snapshot",
                    session_id=base,
                    hint=f'merge it with `agentmem update {base} --snapshot "memory/sessions/{name}"`, then delete it',
                )
            )
        else:
            out.append(
                Finding(
                    "session_file_name",
                    WARNING,
                    f"memory/sessions/{name}: the name is not <Session ID>.md",
                    hint="rename or move it; agentmem ignores it",
                )
            )

    orig = dict(doc.rows)
    for i, r in current.items():
        if r != orig[i] and i not in plan.edits:
            plan.edits[i] = r
    return out, plan


def _row_from_snapshot_text(sid: str, text: str) -> it.Row:
    """The row the daemon would add for this snapshot (an unreadable one gives the ID's facts)."""
    try:
        return row_from_snapshot(sid, parse_snapshot(text))
    except SnapshotFormatError:
        return row_from_fields(sid, {}, None)


def plan_text(plan: Plan) -> str:
    doc = it.parse_index(plan.base_text)
    return edit_table(doc, plan.edits, plan.appends)


def unproven_fix(old_text: str, new_text: str, plan: Plan) -> str | None:
    """Why the planned text cannot be shown to keep every row, or None when it can: every row line
    of the old board (readable or not) that the plan does not edit is still there, exactly; a row
    the plan edits is there once with its new value; only the planned rows are new; and every line
    outside the board is kept (docs/reliability.md)."""
    try:
        old, new = it.parse_index(old_text), it.parse_index(new_text)
    except AgentmemError as exc:
        return f"the fixed table would not read back ({exc.message})"
    if old.header_at is None:
        return None if not old.bad else "the board has rows without a header"
    new_lines = Counter(ln.rstrip("\r\n") for ln in new.lines)
    old_rows = {i for i, _ in old.rows} | {b.line_no - 1 for b in old.bad}
    for i in sorted(old_rows):
        if i in plan.edits:
            continue
        raw = old.lines[i].rstrip("\r\n")
        if new_lines[raw] < 1:
            return f"line {i + 1} ({raw[:60]}…) would be lost"
        new_lines[raw] -= 1
    expected = len(old_rows) - sum(1 for i in plan.edits if plan.edits[i] is None) + len(plan.appends)
    got = len(new.rows) + len(new.bad)
    if got != expected:
        return f"the board would have {got} rows, not the {expected} the fixes call for"
    outside = [ln for i, ln in enumerate(old.lines) if i not in old_rows]
    kept = Counter(ln.rstrip("\r\n") for ln in new.lines)
    for ln in outside:
        k = ln.rstrip("\r\n")
        if kept[k] < 1:
            return f"the text {k[:60]!r} outside the table would be lost"
        kept[k] -= 1
    return None


# -- running ------------------------------------------------------------------------------------


def sync_findings(vault: Vault) -> list[Finding]:
    """A vault in a git repository without our merge drivers (docs/sync.md)."""
    from agentmem_vault.integrations.merge_install import missing_driver

    try:
        problem = missing_driver(vault)
    except AgentmemError:
        return []  # git itself is broken here: nothing this check can say reliably
    if problem is None:
        return []
    return [Finding("merge_driver_missing", WARNING, problem, hint="agentmem install-merge-driver")]


def archive_findings(vault: Vault) -> list[Finding]:
    """Archives killed halfway: their write-ahead intent is in the journal (docs/reliability.md)."""
    from agentmem_vault.ops.archive import pending_archives

    return [
        Finding(
            "archive_interrupted",
            ERROR,
            f"the interrupted archive of {sid} is not finished",
            session_id=sid,
            fix="finish it (the snapshot had moved) or undo it, from the journal's intent",
        )
        for sid in pending_archives(vault)
    ]


def project_findings(vault: Vault) -> list[Finding]:
    """Notes whose project matches no workspace this vault knows (docs/projects.md): a project
    that was renamed or moved, so its memories no longer reach its chats. Checked only once the
    vault knows some workspace (a chat registered with its project, or ``projects:`` in config)."""
    from agentmem_vault.config import vault_config
    from agentmem_vault.longterm.notes import load_notes
    from agentmem_vault.ops.conversations import projects_of_sessions
    from agentmem_vault.ops.projects import aliases_from_config, fold_name

    try:
        aliases = aliases_from_config(vault_config(vault))
        known = {fold_name(p) for p in projects_of_sessions(vault).values()}
        known |= {fold_name(n) for n in aliases.known()} | set(aliases.names)
        if not known:
            return []
        out: list[Finding] = []
        for n in load_notes(vault):
            if not n.project or n.scope == "global" or not n.active:
                continue
            if fold_name(aliases.canonical(n.project)) in known:
                continue
            rel = n.path.relative_to(vault.root).as_posix() if n.path else None
            out.append(
                Finding(
                    "note_project_unknown",
                    WARNING,
                    f"memory {n.id or n.title!r} belongs to project {n.project!r}, which no chat of this vault ran in "
                    "(renamed or moved?): it is shown in no chat",
                    hint=f"agentmem memories move {n.id or n.title} --project NAME (or --global), or add "
                    f"{n.project!r} under projects: in memory/.agentmem/config.yaml",
                    path=rel,
                )
            )
        return out
    except AgentmemError:
        return []


def diagnose(vault: Vault) -> DoctorReport:
    findings, _ = diagnose_state(read_state(vault))
    return DoctorReport(
        archive_findings(vault) + findings + sync_findings(vault) + project_findings(vault) + obsidian_findings(vault)
    )


def obsidian_findings(vault: Vault, w: BoardWriter | None = None) -> list[Finding]:
    """Properties that are malformed or disagree with their tables; ``.obsidian/types.json``
    missing our property types (docs/obsidian.md)."""
    from agentmem_vault.ops import obsidian as ob

    out = []
    for p in ob.property_problems(vault, w):
        if p["kind"] == ob.PROPS_MALFORMED:
            out.append(
                Finding(
                    p["kind"],
                    ERROR,
                    f"{p['path']}: {p['message']}",
                    p["session_id"],
                    path=p["path"],
                    hint="fix the YAML between the '---' lines by hand, or delete that block: "
                    "it is written again from the Metadata table on the next update",
                )
            )
        else:
            out.append(
                Finding(
                    p["kind"],
                    WARNING,
                    p["message"],
                    p["session_id"],
                    path=p["path"],
                    fix="rewrite those properties from the Metadata table and the board",
                )
            )
    try:
        missing = ob.types_needing_merge(vault)
    except AgentmemError as exc:
        out.append(Finding(ob.TYPES_MISSING, WARNING, exc.message, hint="fix or remove .obsidian/types.json"))
    else:
        if missing:
            out.append(
                Finding(
                    ob.TYPES_MISSING,
                    WARNING,
                    f".obsidian/types.json lacks the property types of {', '.join(missing[:6])}"
                    + (f" and {len(missing) - 6} more" if len(missing) > 6 else ""),
                    fix="merge our property types into it (the old file is backed up)",
                )
            )
    return out


def _repair_obsidian(vault: Vault, w: BoardWriter, report: DoctorReport) -> None:
    from agentmem_vault.ops import obsidian as ob

    found = obsidian_findings(vault, w)
    report.findings += found
    todo = [f for f in found if f.fix]
    if not todo:
        return
    backup = backup_dir(vault.state_dir / "backups", "properties")
    problems = [{"kind": f.kind, "path": f.path} for f in todo if f.kind == ob.PROPS_DISAGREE]
    try:
        with w.transaction():
            fixed = set(ob.fix_properties(w, problems, backup))
            types = ob.merge_types(vault, w) if any(f.kind == ob.TYPES_MISSING for f in todo) else {}
    except AgentmemError as exc:
        for f in todo:
            f.hint = f"could not fix: {exc.message}"
        return
    for f in todo:
        f.fixed = f.path in fixed if f.kind == ob.PROPS_DISAGREE else bool(types.get("types_changed"))
    if fixed:
        report.backup = report.backup or str(backup.relative_to(vault.root))


def repair(vault: Vault, *, now: float | None = None) -> DoctorReport:
    """Diagnose under the lock and apply the safe fixes to the index all or nothing, after a
    backup; then remove the stale temporary files (each on its own: one that cannot be removed
    stays reported). ``now``: the time temporaries' ages are measured against (tests)."""
    from agentmem_vault.ops.archive import resume_archives

    with BoardWriter(vault, "doctor") as w:
        resumed = [
            Finding(
                "archive_interrupted",
                ERROR,
                f"interrupted archive of {sid}: {outcome.replace('_', ' ')}",
                session_id=sid,
                fix="finish or undo it from the journal's intent",
                fixed=outcome in ("completed", "rolled_back"),
            )
            for sid, outcome in resume_archives(vault, w).items()
        ]
        state = read_state(vault, now=now)
        findings, plan = diagnose_state(state)
        report = DoctorReport(resumed + findings + sync_findings(vault) + project_findings(vault), fixed_run=True)
        temp_fixes = [f for f in findings if f.fix and f.kind == TEMP_KIND]
        fixes = [f for f in findings if f.fix and f.kind != TEMP_KIND]
        if plan is None:
            fixes = []  # the index cannot be edited: its fixes wait (temporaries can still go)
        if not fixes and not temp_fixes:
            _repair_obsidian(vault, w, report)
            return report
        new_text = plan_text(plan) if plan is not None and fixes else state.index_text
        why = (
            unproven_fix(plan.base_text, new_text, plan)
            if plan is not None and fixes and isinstance(new_text, str)
            else None
        )
        if why:
            report.findings.append(
                Finding(
                    "fix_refused",
                    ERROR,
                    f"doctor cannot prove its fix keeps every row: {why}; nothing in memory/index.md was changed",
                    hint="repair the board by hand",
                )
            )
            for f in fixes:
                f.fix = None
            fixes, new_text = [], state.index_text
            if not temp_fixes:
                _repair_obsidian(vault, w, report)
                return report
        changed = [vault.index_path] if fixes and new_text != state.index_text else []
        changed += [vault.memory / n for n in plan.fold_moves] if plan is not None and fixes else []
        changed += [vault.root / f.path for f in temp_fixes if f.path]
        backup = backup_files(changed, root=vault.memory, into=vault.state_dir / "backups", label="doctor")
        report.backup = str(backup.relative_to(vault.root))
        if fixes:
            assert plan is not None
            with w.transaction():
                if isinstance(new_text, str) and new_text != state.index_text:
                    w.write_index_text(new_text, reason="doctor_fix", fixes=[f.message for f in fixes])
                for name in plan.fold_moves:
                    w.move_file(vault.memory / name, conflict_destination(vault.state_dir, name))
            for f in fixes:
                f.fixed = True
        for f in temp_fixes:
            _remove_temp(w, vault, f, now)
        _repair_obsidian(vault, w, report)  # after the board fixes: properties follow the rows
    return report


def _remove_temp(w: BoardWriter, vault: Vault, f: Finding, now: float | None) -> None:
    """Remove one stale temporary, checking again under the lock that it is still one."""
    assert f.path
    path = vault.root / f.path
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        f.fixed = True  # gone meanwhile (its writer finished after all, or a sync removed it)
        return
    except OSError as exc:
        f.hint = f"could not look at it: {exc.strerror or exc}; remove it by hand"
        return
    age = (time.time() if now is None else now) - st.st_mtime
    if not stat.S_ISREG(st.st_mode) or age < STALE_TEMP_SECONDS:
        f.fix = None
        f.hint = "it was written to again just now; left alone"
        return
    try:
        w.remove_temp_file(path)
    except AgentmemError as exc:
        f.hint = f"{exc.message}; remove it by hand"
        return
    f.fixed = True


def render_report(report: DoctorReport) -> str:
    if not report.findings:
        return "memory/ looks healthy: nothing to fix"
    lines: list[str] = []
    fixed = [f for f in report.findings if f.fixed]
    if fixed:
        lines.append(f"fixed ({len(fixed)}):")
        lines += [f"  - {f.message} → {f.fix}" for f in fixed]
    rest = report.problems()
    if rest:
        lines.append("left for a person:" if report.fixed_run else f"problems ({len(rest)}):")
        for f in rest:
            tag = "" if f.severity == ERROR else " (warning)"
            how = f"; --fix will {f.fix}" if f.fix and not report.fixed_run else ""
            lines.append(f"  - {f.message}{tag}{how}")
            if f.hint and not (f.fix and not report.fixed_run):
                lines.append(f"      → {f.hint}")
    if report.backup:
        lines.append(f"backup of the changed files: {report.backup}")
    return "\n".join(lines)
