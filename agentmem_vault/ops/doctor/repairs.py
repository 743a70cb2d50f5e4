"""doctor ``--fix``: apply the safe fixes, all or nothing, under the lock and after a backup.

The board's planned text is applied only when ``unproven_fix`` shows it keeps every row
(docs/reliability.md); stale temporaries are removed one by one, each checked again under the lock.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError
from agentmem_vault.board import table as it
from agentmem_vault.ops.doctor.checks import diagnose_state
from agentmem_vault.ops.doctor.findings import ERROR, DoctorReport, Finding, Plan
from agentmem_vault.ops.doctor.state import STALE_TEMP_SECONDS, TEMP_KIND, read_state
from agentmem_vault.ops.doctor.vault_checks import interrupted_findings, obsidian_findings, vault_findings
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.backups import backup_files, conflict_destination


def plan_text(plan: Plan) -> str:
    doc = it.parse_index(plan.base_text)
    return it.edit_table(doc, plan.edits, plan.appends)


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


def _repair_obsidian(vault: Vault, w: BoardWriter, report: DoctorReport) -> None:
    from agentmem_vault.ops import obsidian as ob

    found = obsidian_findings(vault, w)
    report.findings += found
    todo = [f for f in found if f.fix]
    if not todo:
        return
    paths = [f.path for f in todo if f.kind == ob.PROPS_DISAGREE and f.path]
    backups = vault.state_dir / "backups"
    try:
        backup = backup_files([vault.root / p for p in paths], root=vault.memory, into=backups, label="properties")
        with w.transaction():
            fixed = set(ob.fix_properties(w, paths))
            types = ob.merge_types(vault, w) if any(f.kind == ob.TYPES_MISSING for f in todo) else {}
    except AgentmemError as exc:
        for f in todo:
            f.hint = f"could not fix: {exc.message}"
        return
    for f in todo:
        f.fixed = f.path in fixed if f.kind == ob.PROPS_DISAGREE else bool(types.get("types_changed"))
    if fixed:
        report.backup = report.backup or str(backup.relative_to(vault.root))


def _repair_secrets(vault: Vault, report: DoctorReport, w: BoardWriter) -> None:
    """Redact stored secrets first (under the lock the caller holds): the board fixes below then
    start from the redacted board (docs/redaction.md)."""
    from agentmem_vault.ops.doctor.secrets import redact_stored

    try:
        folder = redact_stored(vault, report.findings, w)
    except AgentmemError as exc:
        for f in report.findings:
            if f.kind == "secret_stored":
                f.hint = f"could not redact it: {exc.message}"
        return
    if folder is not None:
        report.secret_backup = str(folder)


def repair(vault: Vault, *, now: float | None = None) -> DoctorReport:
    """Diagnose under the lock and apply the safe fixes to the index all or nothing, after a
    backup; then remove the stale temporary files (each on its own: one that cannot be removed
    stays reported). ``now``: the time temporaries' ages are measured against (tests)."""
    with BoardWriter(vault, "doctor") as w:  # taking the lock undoes operations killed halfway
        state = read_state(vault, now=now)
        findings, plan = diagnose_state(state)
        resumed = interrupted_findings(vault, w.recovered)
        report = DoctorReport(resumed + findings + vault_findings(vault), fixed_run=True)
        temp_fixes = [f for f in findings if f.fix and f.kind == TEMP_KIND]
        # the index cannot be edited without a plan: its fixes wait (temporaries can still go)
        fixes = [f for f in findings if f.fix and f.kind != TEMP_KIND] if plan is not None else []
        _repair_secrets(vault, report, w)
        new_text = plan_text(plan) if plan is not None and fixes else state.index_text
        why = unproven_fix(plan.base_text, new_text, plan) if plan and fixes and isinstance(new_text, str) else None
        if why:
            message = f"doctor cannot prove its fix keeps every row: {why}; nothing in memory/index.md was changed"
            report.findings.append(Finding("fix_refused", ERROR, message, hint="repair the board by hand"))
            for f in fixes:
                f.fix = None
            fixes, new_text = [], state.index_text
        if fixes or temp_fixes:
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
