"""Organize: the "整理 memory" procedure (docs/lifecycle.md), plus the snapshot facts it shares with archive
(``archive.py``) and doctor.

Split into a pure plan (``plan_organize``: board + snapshot facts in, decisions out) and an apply
step that performs the plan through ``BoardWriter`` under the vault lock. ``--dry-run`` prints the
plan and writes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Iterable, Mapping

from agentmem_vault.board import table as it
from agentmem_vault.clock import now as clock_now, parse_ts
from agentmem_vault.vault import Vault
from agentmem_vault.config import SETTINGS, vault_config
from agentmem_vault.errors import AgentmemError, SnapshotFormatError, UsageError
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.rules import is_placeholder_summary
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import read_text

# -- reading snapshot facts ---------------------------------------------------------------------


def folder_names(folder: Path) -> list[str]:
    """The names in ``folder``, in no order ([] when it is missing or not a folder)."""
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []


def snapshot_ids(vault: Vault) -> set[str]:
    """Session IDs that have ``sessions/<id>.md`` (files with other names are doctor's business)."""
    return {n[:-3] for n in folder_names(vault.sessions_dir) if n.endswith(".md") and is_valid_session_id(n[:-3])}


def continues_from_of(text: str) -> list[str]:
    """Session IDs listed in a snapshot's ``## Continues From`` section (plain or ``[[id]]``). A
    damaged snapshot still names its sources (protection must not depend on a clean parse): the
    parser refuses NUL bytes, so each is read as a space; what it still refuses has no such section."""
    from agentmem_vault.model.snapshot import parse_snapshot

    try:
        return list(parse_snapshot(text.replace("\x00", " ")).continues_from)
    except AgentmemError:
        return []


def collect_continues_from(vault: Vault, ids: Iterable[str]) -> dict[str, list[str]]:
    """``{session_id: [source ids]}`` for the snapshots given (only non-empty lists are kept)."""
    out: dict[str, list[str]] = {}
    for sid in ids:
        try:
            text = read_text(vault.session_path(sid))
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
            k: list(getattr(self, k)) for k in ("deleted", "marked_stale", "kept_active", "protected", "inconsistent")
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
    """Decide what ``organize`` does (pure; the rules: docs/lifecycle.md, "Organize"). A
    referenced active row is both ``kept_active`` and ``protected``."""
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
            elif not refs and updated < cutoff and (sid in snapshots or not is_placeholder_summary(row.summary)):
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
    return it.edit_table(doc, changes)


def organize(
    vault: Vault, *, stale_days: int | None = None, dry_run: bool = False, now: datetime | None = None
) -> OrganizePlan:
    """Plan under the lock (so the plan matches what is written) and apply unless ``dry_run``."""
    if stale_days is None:
        stale_days = int(vault_config(vault).get("stale_days", 14))
    _, lo, hi = SETTINGS["stale_days"]  # the one range, also checked in config.yaml
    low, high = lo or 0, hi or 36500
    if not low <= stale_days <= high:  # a huge number would overflow the date arithmetic
        raise UsageError(f"--stale-days must be between {low:g} and {high:g} (days), not {stale_days}")
    when = now or clock_now()
    with BoardWriter(vault, "organize") as w:
        doc = w.index()
        snaps = snapshot_ids(vault)
        plan = plan_organize(doc, snaps, collect_continues_from(vault, snaps), when, stale_days)
        if dry_run or not plan.changes_anything:
            return plan
        doc.check_writable()  # a damaged table is shown to a person before anything is removed
        rows = {r.session_id: r for r in doc.row_list()}
        # One journal entry (one fsync) for the whole run, holding every deleted row in full so a
        # row is found and restored by its ID; the entry also keeps the whole previous index text.
        with w.transaction():
            w.write_index_text(
                apply_organize_text(doc, plan),
                reason="organize",
                deleted_rows=[rows[s].to_dict() for s in plan.deleted],
                marked_stale=plan.marked_stale,
            )
            # The snapshot's Metadata Status follows the row (docs/board.md: row and snapshot in
            # step), its Properties too (docs/obsidian.md); Updated At stays.
            from agentmem_vault.model.session_props import BoardFacts
            from agentmem_vault.ops.session_files import set_snapshot_status

            for sid in plan.marked_stale:
                set_snapshot_status(w, sid, "stale", BoardFacts.from_row(rows[sid].with_(status="stale")))
    return plan


def render_organize(plan: OrganizePlan, *, dry_run: bool = False) -> str:
    would = "would " if dry_run else ""
    head = (
        f"organize{' (dry run, nothing written)' if dry_run else ''}: {would}delete {len(plan.deleted)} idle "
        f"row(s), {would}mark {len(plan.marked_stale)} stale, keep {len(plan.kept_active)} active"
    )
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
    part(
        "inconsistent (idle row with a snapshot; kept — run `agentmem update ID` or `agentmem doctor`)",
        plan.inconsistent,
    )
    for sid, why in plan.skipped.items():
        lines.append(f"note: {sid}: {why}")
    return "\n".join(lines)
