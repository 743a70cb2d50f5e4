"""doctor's checks that ask the vault itself (git, the journal, the notes, Obsidian's files)
rather than the board's text, and ``diagnose``, which runs every check.

A check here is a function of the vault registered with ``@vault_check`` (run by both
``diagnose`` and ``repair``, in the order of this file). Interrupted operations and Obsidian
properties have a repair of their own, so ``diagnose`` and ``repair`` call them directly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, ConfigError
from agentmem_vault.ops.doctor.checks import diagnose_state
from agentmem_vault.ops.doctor.findings import ERROR, WARNING, DoctorReport, Finding
from agentmem_vault.ops.doctor.secrets import secret_findings
from agentmem_vault.ops.doctor.state import read_state
from agentmem_vault.board.store import BoardWriter

if TYPE_CHECKING:
    from agentmem_vault.model.notes import Note

VaultCheck = Callable[[Vault], list[Finding]]
VAULT_CHECKS: list[VaultCheck] = []


def vault_check(fn: VaultCheck) -> VaultCheck:
    VAULT_CHECKS.append(fn)
    return fn


def diagnose(vault: Vault) -> DoctorReport:
    findings, _ = diagnose_state(read_state(vault))
    return DoctorReport(interrupted_findings(vault) + findings + vault_findings(vault) + obsidian_findings(vault))


def vault_findings(vault: Vault) -> list[Finding]:
    return [f for check in VAULT_CHECKS for f in check(vault)]


vault_check(secret_findings)  # secrets already under memory/ (docs/redaction.md); --fix redacts them


@vault_check
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


@vault_check
def note_findings(vault: Vault) -> list[Finding]:
    """Notes that reach no chat: unreadable ones (docs/notes.md, "Malformed notes"), those of a
    project no workspace of this vault is (once it knows one) and unscoped ones (docs/projects.md).
    One load of the notes."""
    from agentmem_vault.longterm.notes import load_notes

    reasons: dict[Path, str] = {}
    notes = load_notes(vault, reasons=reasons)
    hint = "fix its frontmatter by hand: until then writers leave it alone and recall finds it by name and body only"
    rel = {p: p.relative_to(vault.root).as_posix() for p in reasons}
    out = [
        Finding("note_unreadable", WARNING, f"{rel[p]}: {why}", path=rel[p], hint=hint) for p, why in reasons.items()
    ]
    try:
        out += _unknown_projects(vault, [n for n in notes if n.project and n.scope != "global" and n.active])
    except AgentmemError as exc:  # a config.yaml that every command refuses must not look healthy
        out += [Finding("config_invalid", ERROR, exc.message)] if isinstance(exc, ConfigError) else []
    for n in notes:
        if n.active and n.scope == "unscoped" and not n.project.strip():
            message = f"memory {n.id or n.title!r} ({n.title}) comes from a source whose project is unknown: "
            message += "it is shown in no project's chats"
            out.append(Finding("note_unscoped", WARNING, message, hint=_move_hint(n), path=_rel(vault, n)))
    return out


def _unknown_projects(vault: Vault, notes: list[Note]) -> list[Finding]:
    from agentmem_vault.config import vault_config
    from agentmem_vault.ops.conversations import projects_of_sessions
    from agentmem_vault.ops.projects import aliases_from_config, fold_name

    aliases = aliases_from_config(vault_config(vault))
    known = {fold_name(p) for p in projects_of_sessions(vault).values()}
    known |= {fold_name(n) for n in aliases.known()} | set(aliases.names)
    out: list[Finding] = []
    for n in notes if known else []:
        if fold_name(aliases.canonical(n.project)) not in known:
            message = (
                f"memory {n.id or n.title!r} belongs to project {n.project!r}, which no chat of this vault ran in "
            )
            message += "(renamed or moved?): it is shown in no chat"
            hint = f"{_move_hint(n)}, or add {n.project!r} under projects: in memory/.agentmem/config.yaml"
            out.append(Finding("note_project_unknown", WARNING, message, hint=hint, path=_rel(vault, n)))
    return out


def _move_hint(n: Note) -> str:
    return f"agentmem memories move {n.id or n.title} --project NAME (or --global)"


def _rel(vault: Vault, n: Note) -> str | None:
    return n.path.relative_to(vault.root).as_posix() if n.path else None


def interrupted_findings(vault: Vault, recovered: list[tuple[str, int]] | None = None) -> list[Finding]:
    """Operations killed halfway (docs/reliability.md, "Crash safety"): those whose transaction is
    not undone yet (the next writer, ``doctor --fix`` included, puts their files back), or with
    ``recovered`` the ones the writer of ``doctor --fix`` put back as it took the lock."""
    from agentmem_vault.writer import pending_undo

    out = []
    fix = "put every file it changed back as it was"
    for command, n in pending_undo(vault) if recovered is None else recovered:
        what = f"an operation was killed halfway ({command or 'unknown command'}"
        if recovered is None:
            message = f"{what}, {n} file(s)); its changes are not undone yet"
            later = fix + " (the next command that writes does the same)"
            out.append(Finding("operation_interrupted", ERROR, message, fix=later))
        else:
            message = f"{what}): {n} file(s) put back as they were"
            out.append(Finding("operation_interrupted", ERROR, message, fix=fix, fixed=True))
    return out


def obsidian_findings(vault: Vault, w: BoardWriter | None = None) -> list[Finding]:
    """Properties that are malformed or disagree with their tables; ``.obsidian/types.json``
    missing our property types (docs/obsidian.md)."""
    from agentmem_vault.ops import obsidian as ob

    out = ob.property_problems(vault, w)
    try:
        missing = ob.types_needing_merge(vault)
    except AgentmemError as exc:
        out.append(Finding(ob.TYPES_MISSING, WARNING, exc.message, hint="fix or remove .obsidian/types.json"))
    else:
        if missing:
            more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
            message = f".obsidian/types.json lacks the property types of {', '.join(missing[:6])}{more}"
            fix = "merge our property types into it (the old file is backed up)"
            out.append(Finding(ob.TYPES_MISSING, WARNING, message, fix=fix))
    return out
