"""doctor's report as text for a person."""

from __future__ import annotations

from agentmem_vault.ops.doctor.findings import ERROR, DoctorReport


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
    if report.secret_backup:
        lines.append(f"originals of the redacted files (outside the vault, delete when done): {report.secret_backup}")
    return "\n".join(lines)
