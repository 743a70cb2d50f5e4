"""Organize and archive: the skill's "整理 memory" and "封存 memory session" procedures.

Both are split into a pure plan (``plan_organize`` / ``plan_archive``: board + snapshot facts in,
decisions out) and an apply step that performs the plan through ``VaultWriter`` under the vault
lock. ``--dry-run`` prints the plan and writes nothing.

Archive is all-or-nothing: its steps run in the skill's order (archive index, move the snapshot,
release the sources' Referenced By, remove the row last) and every step registers an undo before it
runs, so a failure at any step puts the vault back exactly as it was.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Iterable, Mapping

from . import index_table as it
from .config import Vault, format_ts, now as clock_now, parse_ts, vault_config
from .errors import AgentmemError, Refused, SessionNotFound, SnapshotFormatError, WriteFailed
from .ids import find_ids, is_valid_session_id, validate_session_id
from .sessions import DEFAULT_SUMMARY, MANUAL_FALLBACK_SUMMARY
from .vaultio import VaultWriter, ensure_writable, read_bytes

PLACEHOLDER_SUMMARIES = frozenset({"", "-", DEFAULT_SUMMARY, MANUAL_FALLBACK_SUMMARY})


# -- reading snapshot facts ---------------------------------------------------------------------


def snapshot_ids(vault: Vault) -> set[str]:
    """Session IDs that have ``sessions/<id>.md`` (files with other names are doctor's business)."""
    try:
        names = os.listdir(vault.sessions_dir)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    return {n[:-3] for n in names if n.endswith(".md") and is_valid_session_id(n[:-3])}


def continues_from_of(text: str) -> list[str]:
    """Session IDs listed in a snapshot's ``## Continues From`` section (plain or ``[[id]]``)."""
    from .snapshot import parse_snapshot

    try:
        return list(parse_snapshot(text).continues_from)
    except AgentmemError:
        # A damaged snapshot still names its sources; protection must not depend on a clean parse.
        return _continues_from_local(text)


def _continues_from_local(text: str) -> list[str]:
    out: list[str] = []
    inside = False
    for line in text.lstrip("\ufeff").splitlines():
        s = line.strip()
        if s.startswith("## ") or s == "##":
            inside = s[2:].strip().casefold() == "continues from"
            continue
        if s.startswith("# "):
            inside = False
            continue
        if inside:
            for sid in find_ids(s):
                if sid not in out:
                    out.append(sid)
    return out


def read_snapshot_text(path: Path) -> str | None:
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotFormatError(f"{path} is not UTF-8 text (byte {exc.start}); refusing to touch it") from exc


def collect_continues_from(vault: Vault, ids: Iterable[str]) -> dict[str, list[str]]:
    """``{session_id: [source ids]}`` for the snapshots given (only non-empty lists are kept)."""
    out: dict[str, list[str]] = {}
    for sid in ids:
        try:
            text = read_snapshot_text(vault.session_path(sid))
        except SnapshotFormatError:
            continue  # reported by doctor; an unreadable file names no sources
        if text:
            cf = continues_from_of(text)
            if cf:
                out[sid] = cf
    return out


def referencers_by_snapshot(continues_from: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Invert Continues From: ``{source: [sessions whose snapshot continues from it]}``."""
    inv: dict[str, list[str]] = {}
    for sid, sources in continues_from.items():
        for src in sources:
            if src != sid:
                inv.setdefault(src, []).append(sid)
    return inv


def has_meaningful_summary(row: it.Row) -> bool:
    return row.summary.strip() not in PLACEHOLDER_SUMMARIES


# -- multi-row table edit (pure) ----------------------------------------------------------------


def edit_table(doc: it.IndexDoc, changes: Mapping[int, it.Row | None], appends: Iterable[it.Row] = ()) -> str:
    """Replace (Row) or delete (None) the row lines at the given 0-based line numbers, and append
    rows at the end of the table, in one pass. Every other line stays byte-for-byte identical."""
    lines = list(doc.lines)
    for i, new in changes.items():
        old = lines[i]
        if new is None:
            lines[i] = ""
            continue
        eol = "\r\n" if old.endswith("\r\n") else ("\n" if old.endswith("\n") else "")
        lines[i] = it.render_row(new) + eol
    extra = [it.render_row(r) for r in appends]
    if extra:
        if doc.header_at is None:
            raise WriteFailed("memory/index.md has no table to append to")
        nl = doc.newline
        end = doc.table_end
        if end > 0 and lines[end - 1] and not lines[end - 1].endswith(("\n", "\r")):
            lines[end - 1] += nl
        elif end > 0 and not lines[end - 1]:
            # the last table line was deleted: find the previous kept line to terminate
            j = end - 1
            while j > 0 and not lines[j]:
                j -= 1
            if lines[j] and not lines[j].endswith(("\n", "\r")):
                lines[j] += nl
        lines[end:end] = [r + nl for r in extra]
    return (it.BOM if doc.bom else "") + "".join(lines)


# -- organize -------------------------------------------------------------------------------------


@dataclass
class OrganizePlan:
    deleted: list[str] = field(default_factory=list)
    marked_stale: list[str] = field(default_factory=list)
    kept_active: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)
    # Why each protected row is protected ({id: [referencing ids]}), incl. the Continues From fallback.
    protected_by: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # id -> reason (duplicates, bad timestamps)

    def to_dict(self) -> dict[str, list[str]]:
        """The contract's JSON: exactly these five lists."""
        return {
            "deleted": list(self.deleted),
            "marked_stale": list(self.marked_stale),
            "kept_active": list(self.kept_active),
            "protected": list(self.protected),
            "inconsistent": list(self.inconsistent),
        }

    @property
    def changes_anything(self) -> bool:
        return bool(self.deleted or self.marked_stale)


def plan_organize(
    doc: it.IndexDoc,
    snapshots: set[str] | frozenset[str],
    continues_from: Mapping[str, list[str]],
    now: datetime,
    stale_days: int,
) -> OrganizePlan:
    """Decide what ``organize`` does (pure).

    - ``idle`` rows are deleted, except rows referenced by another session (``protected``) and
      idle rows that have a snapshot (``inconsistent``: the skill says stop and let a person look).
    - ``active`` rows become ``stale`` when Updated At is older than ``stale_days``, they have a
      snapshot or a non-placeholder Summary, and nobody references them; other active rows are
      ``kept_active`` (a referenced active row is both kept_active and protected).
    - "Referenced" is the row's Referenced By, or, as the skill's fallback for a continuation
      recorded only half-way, another snapshot's Continues From naming the row.
    - ``stale`` rows are never touched; organize never archives.
    """
    plan = OrganizePlan()
    cutoff = now - timedelta(days=stale_days)
    by_snapshot = referencers_by_snapshot(continues_from)
    dups = set(doc.duplicate_ids())
    for row in doc.row_list():
        sid = row.session_id
        if sid in dups:
            plan.skipped[sid] = "duplicate Session ID (run `agentmem doctor`)"
            continue
        refs = [r for r in row.referencing_ids if r != sid]
        refs += [r for r in by_snapshot.get(sid, []) if r not in refs]
        if refs:
            plan.protected.append(sid)
            plan.protected_by[sid] = refs
        status = row.status.strip()
        if status == "idle":
            if refs:
                continue
            if sid in snapshots:
                plan.inconsistent.append(sid)
            else:
                plan.deleted.append(sid)
        elif status == "active":
            updated = parse_ts(row.updated_at)
            if updated is None:
                plan.skipped[sid] = f"unreadable Updated At {row.updated_at!r}"
                plan.kept_active.append(sid)
            elif not refs and updated < cutoff and (sid in snapshots or has_meaningful_summary(row)):
                plan.marked_stale.append(sid)
            else:
                plan.kept_active.append(sid)
    return plan


def apply_organize_text(doc: it.IndexDoc, plan: OrganizePlan) -> str:
    """The index text after the plan (pure)."""
    line_of = {r.session_id: i for i, r in doc.rows}
    rows = {r.session_id: r for r in doc.row_list()}
    changes: dict[int, it.Row | None] = {line_of[sid]: None for sid in plan.deleted}
    for sid in plan.marked_stale:
        changes[line_of[sid]] = rows[sid].with_(status="stale")
    return edit_table(doc, changes)


def organize(vault: Vault, *, stale_days: int | None = None, dry_run: bool = False, now: datetime | None = None) -> OrganizePlan:
    """Plan under the lock (so the plan matches what is written) and apply unless ``dry_run``."""
    if stale_days is None:
        stale_days = int(vault_config(vault).get("stale_days", 14))
    if stale_days < 0:
        from .errors import UsageError

        raise UsageError("--stale-days must be 0 or more")
    when = now or clock_now()
    with VaultWriter(vault, "organize") as w:
        doc = w.index()
        snaps = snapshot_ids(vault)
        plan = plan_organize(doc, snaps, collect_continues_from(vault, snaps), when, stale_days)
        if dry_run or not plan.changes_anything:
            return plan
        doc.check_writable()  # a damaged table is shown to a person before anything is removed
        rows = {r.session_id: r for r in doc.row_list()}
        # One journal entry (one fsync) for the whole run, holding every deleted row in full so a
        # row is found and restored by its ID; the entry also keeps the whole previous index text.
        w.write_index_text(apply_organize_text(doc, plan), reason="organize",
                           deleted_rows=[rows[s].to_dict() for s in plan.deleted],
                           marked_stale=plan.marked_stale)
    return plan


def render_organize(plan: OrganizePlan, *, dry_run: bool = False) -> str:
    would = "would " if dry_run else ""
    head = (f"organize{' (dry run, nothing written)' if dry_run else ''}: {would}delete {len(plan.deleted)} idle "
            f"row(s), {would}mark {len(plan.marked_stale)} stale, keep {len(plan.kept_active)} active")
    lines = [head]

    def part(title: str, ids: list[str], extra: Callable[[str], str] | None = None) -> None:
        if not ids:  # an empty list is already in the head line's counts
            return
        lines.append(f"{title}:")
        for sid in ids:
            lines.append(f"  - {sid}{extra(sid) if extra else ''}")

    part("would delete (idle)" if dry_run else "deleted (idle)", plan.deleted)
    part("would mark stale" if dry_run else "marked stale", plan.marked_stale)
    part("kept active", plan.kept_active)
    part("protected (referenced by)", plan.protected, lambda s: f"  ← {', '.join(plan.protected_by.get(s, []))}")
    part("inconsistent (idle row with a snapshot; kept — run `agentmem update ID` or `agentmem doctor`)", plan.inconsistent)
    for sid, why in plan.skipped.items():
        lines.append(f"note: {sid}: {why}")
    return "\n".join(lines)


# -- archive --------------------------------------------------------------------------------------

ARCHIVE = "archive"
DELETE_ROW = "delete_row"


@dataclass
class ArchivePlan:
    session_id: str
    action: str  # "archive" or "delete_row"
    reason: str
    row: it.Row
    has_snapshot: bool
    sources: list[str] = field(default_factory=list)  # Continues From of the archived snapshot
    release_from: list[str] = field(default_factory=list)  # sources whose Referenced By lists this ID
    referenced_by: list[str] = field(default_factory=list)
    forced: bool = False
    archive_index_text: str | None = None

    def steps(self) -> list[str]:
        sid = self.session_id
        if self.action == DELETE_ROW:
            return [f"remove the row {sid} from memory/index.md ({self.reason})"]
        out = [f"create memory/archive/{sid}/index.md"]
        if self.has_snapshot:
            out.append(f"move memory/sessions/{sid}.md to memory/archive/{sid}/session.md")
        out += [f"remove {sid} from the Referenced By of {src}" for src in self.release_from]
        out.append(f"remove the row {sid} from memory/index.md")
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["row"] = self.row.to_dict()
        d["steps"] = self.steps()
        d.pop("archive_index_text")
        return d


def render_archive_index(row: it.Row, archived_at: str, *, has_snapshot: bool) -> str:
    """The skill's Archive Index Template, filled from the row."""
    e = it.escape_cell
    fields = [
        ("Session ID", row.session_id), ("Agent Name", row.agent_name), ("Topic", row.topic),
        ("Summary", row.summary), ("Keywords", row.keywords), ("Original Status", row.status),
        ("Referenced By", row.referenced_by or "-"), ("Started At", row.started_at),
        ("Updated At", row.updated_at), ("Archived At", archived_at),
    ]
    table = "\n".join(f"| {k} | {e(v)} |" for k, v in fields)
    files = "- Session: ./session.md" if has_snapshot else "- Session: None (no snapshot was written for this session)"
    return (
        f"# Archived Session: {row.session_id}\n\n## Metadata\n| Field | Value |\n|---|---|\n{table}\n\n"
        f"## Files\n{files}\n"
    )


def plan_archive(
    doc: it.IndexDoc,
    session_id: str,
    *,
    snapshot_text: str | None,
    archive_exists: bool,
    continues_from: Mapping[str, list[str]],
    now: datetime,
    force: bool = False,
) -> ArchivePlan:
    """Decide what ``archive ID`` does (pure). Raises SessionNotFound / Refused.

    Order of the skill's checks: a referenced row is refused first (the Delete-vs-archive table:
    never delete *or* archive while referenced) unless forced; an idle row without snapshot, or a
    row with neither snapshot nor meaningful Summary, is deleted instead of archived (no empty
    archive folders); otherwise the row is archived, with its snapshot when it has one.
    """
    sid = validate_session_id(session_id)
    row = doc.find(sid)
    if row is None:
        if archive_exists:
            raise SessionNotFound(f"{sid} is already archived (memory/archive/{sid}/); nothing to do")
        if snapshot_text is not None:
            raise SessionNotFound(
                f"{sid} has a snapshot but no row in memory/index.md; run `agentmem doctor --fix` to add the row first"
            )
        raise SessionNotFound(f"no row for Session ID {sid} in memory/index.md")
    if sid in doc.duplicate_ids():
        raise Refused(f"{sid} appears in more than one row of memory/index.md; run `agentmem doctor` first")
    refs = [r for r in row.referencing_ids if r != sid]
    by_snapshot = referencers_by_snapshot({k: v for k, v in continues_from.items() if k != sid})
    refs += [r for r in by_snapshot.get(sid, []) if r not in refs]
    if refs and not force:
        raise Refused(
            f"{sid} is still referenced by {', '.join(refs)}; release those references first "
            f"(`agentmem release {sid} --session <ID>`) or archive with --force",
            code="referenced",
            details={"referenced_by": refs},
        )
    has_snapshot = snapshot_text is not None
    base = ArchivePlan(sid, ARCHIVE, "", row, has_snapshot, referenced_by=refs, forced=bool(refs))
    if not has_snapshot and (row.status.strip() == "idle" or not has_meaningful_summary(row)):
        base.action = DELETE_ROW
        base.reason = "idle placeholder without a snapshot" if row.status.strip() == "idle" else "no snapshot and no meaningful Summary"
        return base
    if archive_exists:
        raise Refused(f"memory/archive/{sid}/ already exists; refusing to overwrite an archive")
    sources = continues_from.get(sid, []) if has_snapshot else []
    base.sources = list(sources)
    base.release_from = [
        s for s in sources if s != sid and (src := doc.find(s)) is not None and sid in src.referencing_ids
    ]
    base.reason = "archived with its snapshot" if has_snapshot else "archived (metadata only: no snapshot, meaningful Summary)"
    base.archive_index_text = render_archive_index(row, format_ts(now), has_snapshot=has_snapshot)
    return base


@dataclass
class ArchiveResult:
    plan: ArchivePlan
    done: bool
    dry_run: bool
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        p = self.plan
        return {
            "session_id": p.session_id,
            "action": "archived" if p.action == ARCHIVE else "deleted",
            "dry_run": self.dry_run,
            "archive_dir": f"memory/archive/{p.session_id}" if p.action == ARCHIVE else None,
            "moved_snapshot": p.action == ARCHIVE and p.has_snapshot,
            "released_from": list(p.release_from),
            "forced_past_references": list(p.referenced_by) if p.forced else [],
            "steps": p.steps(),
            "notes": list(self.notes),
        }


def _preflight(vault: Vault, plan: ArchivePlan) -> None:
    """Refuse up front what would certainly fail (read-only targets), before any write."""
    ensure_writable(vault.index_path)
    ensure_writable(vault.memory)
    if plan.action == ARCHIVE and plan.has_snapshot:
        ensure_writable(vault.sessions_dir)


def _ensure_can_create(folder: Path) -> list[Path]:
    """The folders that would be created for ``folder`` (outermost first), after checking that the
    nearest existing ancestor is writable — mode bits are honoured even for root."""
    missing: list[Path] = []
    p = folder
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    ensure_writable(p)
    if not p.is_dir():
        raise WriteFailed(f"{p} is not a folder; cannot create {folder}")
    return list(reversed(missing))


def archive(vault: Vault, session_id: str, *, force: bool = False, dry_run: bool = False, now: datetime | None = None) -> ArchiveResult:
    sid = validate_session_id(session_id)
    when = now or clock_now()
    with VaultWriter(vault, "archive") as w:
        doc = w.index()
        snap_path = vault.session_path(sid)
        snap_text = read_snapshot_text(snap_path)
        snaps = snapshot_ids(vault)
        cf = collect_continues_from(vault, snaps)
        if snap_text is not None:
            cf[sid] = continues_from_of(snap_text)
        plan = plan_archive(
            doc, sid, snapshot_text=snap_text, archive_exists=vault.archive_path(sid).exists(),
            continues_from=cf, now=when, force=force,
        )
        result = ArchiveResult(plan, done=False, dry_run=dry_run)
        skipped = [s for s in plan.sources if s not in plan.release_from]
        for s in skipped:
            result.notes.append(f"source {s} has no row listing {sid} in Referenced By (nothing to release)")
        if dry_run:
            return result
        doc.check_writable()
        _preflight(vault, plan)
        if plan.action == DELETE_ROW:
            w.remove_row(sid)
        else:
            _apply_archive(vault, w, plan, snap_path, snap_text, result)
        result.done = True
    return result


def _apply_archive(vault: Vault, w: VaultWriter, plan: ArchivePlan, snap_path: Path,
                   snap_text: str | None, result: ArchiveResult) -> None:
    sid = plan.session_id
    folder = vault.archive_path(sid)
    index_path = folder / "index.md"
    session_dst = folder / "session.md"
    undo: list[tuple[str, Callable[[], None]]] = []

    try:
        # Step 6: create the archive folder (checked by hand: root ignores a read-only parent).
        created = _ensure_can_create(folder)

        def undo_dirs() -> None:
            for d in reversed(created):
                try:
                    os.rmdir(d)  # only folders this run created, and only when empty again
                except FileNotFoundError:
                    pass

        undo.append(("remove the archive folder", undo_dirs))
        for d in created:
            d.mkdir()

        # Step 7: the archive index.
        undo.append(("remove the archive index", lambda: w.delete_file(index_path, session_id=sid)))
        w.write_file(index_path, plan.archive_index_text or "", session_id=sid, action="archive_index")

        # Steps 8-9: move the snapshot.
        if plan.has_snapshot:
            assert snap_text is not None

            def undo_move() -> None:
                if not snap_path.exists():
                    w.write_file(snap_path, snap_text, session_id=sid, action="rollback_restore_snapshot")
                if session_dst.exists():
                    w.delete_file(session_dst, session_id=sid)

            undo.append(("put the snapshot back", undo_move))
            w.move_file(snap_path, session_dst, session_id=sid)

        # Step 11: release this ID from each source's Referenced By.
        for src in plan.release_from:
            old_row = w.index().get(src)

            def undo_src(src: str = src, old: it.Row = old_row) -> None:
                w.update_row(src, lambda r: r.with_(referenced_by=old.referenced_by), strict=False)

            undo.append((f"restore Referenced By of {src}", undo_src))
            w.update_row(src, lambda r: r.with_(referenced_by=it.join_id_list([x for x in r.referencing_ids if x != sid])))

        # Step 12: confirm the archive is complete before the row goes.
        if w.index().find(sid) is None:
            raise WriteFailed(f"the row {sid} disappeared from memory/index.md during the archive")
        if not index_path.is_file() or (plan.has_snapshot and (not session_dst.is_file() or snap_path.exists())):
            raise WriteFailed(f"memory/archive/{sid}/ did not verify; the archive was not completed")
    except BaseException as exc:
        _rollback(w, sid, undo, exc)
        raise

    # Steps 13-14: remove the row last; its write verifies that the ID is gone.
    try:
        w.remove_row(sid)
    except BaseException as exc:
        try:
            gone = w.index().find(sid) is None
        except AgentmemError:
            gone = False
        if gone:
            # The row was removed but the re-read differed (a hand edit at the same moment):
            # the archive is complete, say so rather than undoing finished work.
            result.notes.append(f"memory/index.md changed while the row was removed: {exc}")
            return
        _rollback(w, sid, undo, exc)
        raise


def _rollback(w: VaultWriter, sid: str, undo: list[tuple[str, Callable[[], None]]], cause: BaseException) -> None:
    failed: list[str] = []
    for what, fn in reversed(undo):
        try:
            fn()
        except Exception as exc:  # keep undoing the rest; report what could not be undone
            failed.append(f"{what}: {exc}")
    try:
        w.journal("rollback", session_id=sid, cause=str(cause), failed=failed)
    except AgentmemError:
        pass
    if failed and isinstance(cause, AgentmemError):
        cause.details = {**cause.details, "rollback_failed": failed}
        cause.message += (
            "; ROLLBACK INCOMPLETE (" + "; ".join(failed) + ") — see memory/.agentmem/journal.jsonl"
        )
        cause.args = (cause.message,)
    elif isinstance(cause, AgentmemError):
        cause.message += "; the vault was left exactly as before"
        cause.args = (cause.message,)


def render_archive(result: ArchiveResult) -> str:
    p = result.plan
    if result.dry_run:
        head = f"archive {p.session_id} (dry run, nothing written):"
    elif p.action == DELETE_ROW:
        head = f"deleted the row {p.session_id} ({p.reason}); no archive folder created"
        return "\n".join([head, *[f"note: {n}" for n in result.notes]])
    else:
        head = f"archived {p.session_id} to memory/archive/{p.session_id}/"
    lines = [head] + [f"  {i}. {s}" for i, s in enumerate(p.steps(), 1)]
    if p.forced:
        lines.append(f"note: archived despite references from {', '.join(p.referenced_by)} (--force)")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)
