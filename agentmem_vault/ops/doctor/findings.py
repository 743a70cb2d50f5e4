"""What doctor says: findings, the report of one run, and the plan of fixes to the board."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentmem_vault.board import table as it

ERROR = "error"
WARNING = "warning"


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
    secret_backup: str | None = None  # the originals of redacted files, outside the vault

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
            **({"secret_backup": self.secret_backup} if self.secret_backup else {}),
        }
