"""install-rules: put the agent instruction file into a project.

``.cursor/rules/agent-memory.mdc`` (a Cursor rule, ``alwaysApply: true``) and, on request, the same
text as a marked block in ``AGENTS.md`` (Codex) / ``CLAUDE.md`` (Claude Code). A file the user
changed is never lost: it is copied to ``<name>.agentmem-backup-<time>`` (the installers' one file-edit step, ``integrations/file_edit.py``) before it is replaced, and in
AGENTS.md/CLAUDE.md only the text between the agentmem markers is ever rewritten.
"""

from __future__ import annotations

from pathlib import Path

from agentmem_vault.errors import UsageError
from agentmem_vault.model import template_text
from agentmem_vault.integrations import file_edit

RULE_PATH = Path(".cursor") / "rules" / "agent-memory.mdc"
BEGIN = "<!-- agentmem:begin -->"
END = "<!-- agentmem:end -->"


def with_command(text: str) -> str:
    """``text`` (an agent rule, the MCP instructions) with the line saying how to run agentmem on
    this machine (``command.command_note``) after its first heading, where the chat reads it first."""
    from agentmem_vault.command import command_note

    lines = text.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("#")), 0)
    return "\n".join([*lines[:at], "", command_note(), *lines[at:]])


def _apply(edit: file_edit.FileEdit, dry_run: bool) -> dict:
    if not edit.changed:
        return {"path": str(edit.path), "status": "unchanged"}
    if dry_run:
        return {"path": str(edit.path), "status": "would install" if edit.before is None else "would update"}
    backup = file_edit.apply_edit(edit)
    status = "installed" if edit.before is None else "updated"
    return {"path": str(edit.path), "status": status, "backup": str(backup) if backup else None}


def _install_file(path: Path, text: str, dry_run: bool = False) -> dict:
    return _apply(file_edit.plan_edit(path, file_edit.read_current(path), text.encode("utf-8")), dry_run)


def merge_block(existing: str | None, block: str, begin: str = BEGIN, end: str = END) -> str:
    """``existing`` with our block between the ``begin`` and ``end`` marker lines replaced (or
    appended), in the file's own line endings; everything else kept (pure). Also .gitattributes'."""
    if existing is None or not existing.strip():
        return f"{begin}\n{block.rstrip()}\n{end}\n"
    nl = "\r\n" if "\r\n" in existing else "\n"
    body = (begin + "\n" + block.rstrip() + "\n" + end).replace("\n", nl)
    start = existing.find(begin)
    stop = existing.find(end, start + 1) if start != -1 else -1
    if start != -1 and stop != -1:
        return existing[:start] + body + existing[stop + len(end) :]
    if start != -1 or existing.find(end) != -1:
        raise UsageError(f"found only one of the agentmem markers ({begin} / {end}); fix the file by hand")
    sep = "" if existing.endswith(nl + nl) else (nl if existing.endswith(nl) else nl + nl)
    return existing + sep + body + nl


def _install_block(path: Path, block: str, dry_run: bool = False) -> dict:
    raw, old = file_edit.read_for_edit(path, UsageError)
    return _apply(file_edit.plan_text_edit(path, raw, merge_block(old, block)), dry_run)


def install_rules(project: Path, *, agents_md: bool = False, claude_md: bool = False, dry_run: bool = False) -> dict:
    project = file_edit.project_folder(project)
    files = [_install_file(project / RULE_PATH, with_command(template_text("agent-memory.mdc")), dry_run)]
    if agents_md or claude_md:
        block = with_command(template_text("agents-snippet.md"))
        if agents_md:
            files.append(_install_block(project / "AGENTS.md", block, dry_run))
        if claude_md:
            files.append(_install_block(project / "CLAUDE.md", block, dry_run))
    return {"project": str(project), "files": files}
