"""Archive: the "封存 memory session" procedure; its steps and their order are docs/lifecycle.md,
"Archive".

A pure plan (``plan_archive``: board + snapshot facts in, decisions out) and an apply step that
performs it through ``BoardWriter`` under the vault lock, in one ``transaction()``: a failure at
any step, or a process killed halfway, leaves the vault as it was (docs/reliability.md, "Crash
safety"); ``--dry-run`` prints the plan and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agentmem_vault.clock import format_ts, now as clock_now
from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, Refused, SessionNotFound, WriteFailed
from agentmem_vault.board import table as it
from agentmem_vault.board.rules import is_placeholder_summary
from agentmem_vault.model.ids import validate_session_id
from agentmem_vault.ops.board import ARCHIVE_FIELDS
from agentmem_vault.ops.lifecycle import (
    collect_continues_from,
    continues_from_of,
    referencers_by_snapshot,
    snapshot_ids,
)
from agentmem_vault.ops.session_files import resync_session, write_session_file
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import ensure_writable, read_text

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


def render_archive_index(row: it.Row, archived_at: str, *, has_snapshot: bool) -> str:
    """The archive index (docs/lifecycle.md), filled from the row."""
    cells = [*row.with_(referenced_by=row.referenced_by or "-"), archived_at]
    table = "\n".join(f"| {k} | {it.escape_cell(v)} |" for k, v in zip(ARCHIVE_FIELDS, cells, strict=True))
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
    """Decide what ``archive ID`` does (pure; the checks in docs/lifecycle.md's order: never
    delete *or* archive while referenced, unless forced). Raises SessionNotFound / Refused."""
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
    if not has_snapshot and (row.status.strip() == "idle" or is_placeholder_summary(row.summary)):
        base.action = DELETE_ROW
        base.reason = (
            "idle placeholder without a snapshot"
            if row.status.strip() == "idle"
            else "no snapshot and no meaningful Summary"
        )
        return base
    if archive_exists:
        raise Refused(f"memory/archive/{sid}/ already exists; refusing to overwrite an archive")
    sources = continues_from.get(sid, []) if has_snapshot else []
    base.sources = list(sources)
    base.release_from = [
        s for s in sources if s != sid and (src := doc.find(s)) is not None and sid in src.referencing_ids
    ]
    base.reason = (
        "archived with its snapshot" if has_snapshot else "archived (metadata only: no snapshot, meaningful Summary)"
    )
    base.archive_index_text = render_archive_index(row, format_ts(now), has_snapshot=has_snapshot)
    return base


def left_references(p: ArchivePlan) -> list[tuple[str, str]]:
    """The sessions a forced archive leaves continuing from it, each with the release command
    (``doctor`` reports them as ``archived_reference`` until released)."""
    if not p.forced or p.action != ARCHIVE:
        return []
    return [(ref, f"agentmem release {p.session_id} --session {ref}") for ref in p.referenced_by]


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
            "left_references": [{"session_id": ref, "release": cmd} for ref, cmd in left_references(p)],
            "steps": p.steps(),
            "notes": list(self.notes),
        }


def _preflight(vault: Vault, plan: ArchivePlan) -> None:
    """Refuse up front what would certainly fail (read-only targets), before any write."""
    ensure_writable(vault.index_path)
    ensure_writable(vault.memory)
    if plan.action == ARCHIVE and plan.has_snapshot:
        ensure_writable(vault.sessions_dir)


def archive(
    vault: Vault, session_id: str, *, force: bool = False, dry_run: bool = False, now: datetime | None = None
) -> ArchiveResult:
    sid = validate_session_id(session_id)
    when = now or clock_now()
    with BoardWriter(vault, "archive") as w:
        doc = w.index()
        snap_path = vault.session_path(sid)
        snap_text = read_text(snap_path)
        snaps = snapshot_ids(vault)
        cf = collect_continues_from(vault, snaps)
        if snap_text is not None:
            cf[sid] = continues_from_of(snap_text)
        plan = plan_archive(
            doc,
            sid,
            snapshot_text=snap_text,
            archive_exists=vault.archive_path(sid).exists(),
            continues_from=cf,
            now=when,
            force=force,
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
            _apply_archive(vault, w, plan, snap_path, result)
        result.done = True
    return result


# ---- apply ----------------------------------------------------------------------------------------


def _without(refs: str, sid: str) -> str:
    return it.join_id_list([x for x in it.split_id_list(refs) if x != sid])


def _apply_archive(vault: Vault, w: BoardWriter, plan: ArchivePlan, snap_path: Path, result: ArchiveResult) -> None:
    """The archive's steps in docs/lifecycle.md's order, the row removed last, inside one
    ``BoardWriter.transaction()`` (docs/reliability.md, "Crash safety")."""
    sid = plan.session_id
    folder = vault.archive_path(sid)
    index_path = folder / "index.md"
    session_dst = folder / "session.md"
    try:
        with w.transaction():
            write_session_file(w, index_path, plan.archive_index_text or "", session_id=sid, action="archive_index")
            if plan.has_snapshot:
                w.move_file(snap_path, session_dst, session_id=sid)
                # Its properties now say archived (and the archive index's facts): docs/obsidian.md.
                write_session_file(
                    w, session_dst, read_text(session_dst) or "", session_id=sid, action="archive_properties"
                )
            for src in plan.release_from:
                w.update_row(src, lambda r: r.with_(referenced_by=_without(r.referenced_by, sid)))
                resync_session(w, src)  # its referenced_by property follows the row (docs/obsidian.md)
            # Confirm the archive is complete before the row goes.
            if not index_path.is_file() or (plan.has_snapshot and (not session_dst.is_file() or snap_path.exists())):
                raise WriteFailed(f"memory/archive/{sid}/ did not verify; the archive was not completed")
            w.remove_row(sid)
    except AgentmemError as exc:
        if exc.code != "rollback_incomplete":
            exc.message += "; the vault was left exactly as before"
            exc.args = (exc.message,)
        raise


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
        verb = "would be archived" if result.dry_run else "archived"
        lines.append(f"note: {verb} despite references from {', '.join(p.referenced_by)} (--force); left in place:")
        lines += [f"  {ref} continues from {p.session_id}: release it with `{cmd}`" for ref, cmd in left_references(p)]
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)
