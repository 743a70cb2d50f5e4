"""``agentmem install-hook``: merge our hook entries into an agent's hook config.

A pure merge of two JSON documents, written by the one file-edit step (integrations/file_edit.py):
other hooks and settings are kept as they were; a file that is not a JSON hook config is refused, untouched.

Config files and shapes:
- Cursor ``~/.cursor/hooks.json`` or ``<project>/.cursor/hooks.json``:
  ``{"version": 1, "hooks": {"sessionStart": [{"command": "...", "timeout": 10}], ...}}``
- Claude Code ``~/.claude/settings.json`` or ``<project>/.claude/settings.json``:
  ``{"hooks": {"SessionStart": [{"matcher": "...", "hooks": [{"type": "command", "command": "..."}]}]}}``
- Codex CLI ``~/.codex/hooks.json`` or ``<project>/.codex/hooks.json`` (Claude Code's shape; hooks
  must also be enabled with ``[features] codex_hooks = true`` in ``~/.codex/config.toml``).
"""

from __future__ import annotations

from agentmem_vault.command import agentmem_argv

import copy
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agentmem_vault.vault import Vault
from agentmem_vault.config import resolve_vault
from agentmem_vault.errors import Refused, UsageError, VaultNotFound
from agentmem_vault.integrations.file_edit import FileEdit, apply_edit, json_object, plan_edit, read_current
from agentmem_vault.integrations.file_edit import project_folder
from agentmem_vault.integrations.quoting import posix_join, powershell_command

HOOK_TIMEOUT = 10  # seconds the agent waits for our hook

# agent -> [(config event key, our hook name, matcher or None)]
ENTRIES: dict[str, list[tuple[str, str, str | None]]] = {
    "cursor": [("sessionStart", "cursor-session-start", None), ("sessionEnd", "cursor-session-end", None)],
    "claude": [
        ("SessionStart", "claude-session-start", "startup|resume|clear|compact"),
        ("SessionEnd", "claude-session-end", None),
        ("UserPromptSubmit", "claude-user-prompt", None),
    ],
    # Codex has no SessionEnd; its Stop (end of each turn) carries the transcript. Cursor's
    # beforeSubmitPrompt cannot add context (docs/recall.md), so only Claude Code and Codex get a
    # prompt-time recall hook.
    "codex": [
        ("SessionStart", "codex-session-start", "startup|resume|clear|compact"),
        ("Stop", "codex-stop", None),
        ("UserPromptSubmit", "codex-user-prompt", None),
    ],
}


FILES = {"cursor": (".cursor", "hooks.json"), "claude": (".claude", "settings.json"), "codex": (".codex", "hooks.json")}


def config_path(agent: str, *, project: str | os.PathLike | None = None, home: Path | None = None) -> Path:
    if agent not in ENTRIES:
        raise UsageError(f"unknown agent {agent!r}: expected cursor, claude or codex")
    base = project_folder(project).absolute() if project is not None else (home or Path.home())
    return base.joinpath(*FILES[agent])


def pinned_vault(explicit: str | os.PathLike | None) -> Vault:
    """The vault a hook command will name. An installed hook must never depend on the environment
    the agent happens to start with, so a vault is required and must already be initialised."""
    try:
        vault = resolve_vault(explicit)
    except VaultNotFound as exc:
        if explicit or os.environ.get("AGENTMEM_VAULT"):
            raise  # a named folder that is missing: its own message says which and what to do
        raise VaultNotFound(
            "no vault to write into the hook command: pass --vault PATH (e.g. `agentmem --vault ~/Obsidian/Agent "
            "install-hook cursor`), or run `agentmem setup` to create one and install everything"
        ) from exc
    if not vault.index_path.is_file():
        raise VaultNotFound(
            f"{vault.root} has no memory/index.md yet; run `agentmem init --vault {shlex.quote(str(vault.root))}` first"
        )
    return vault


def hook_command(
    agent: str, hook_name: str, *, vault: str | None = None, argv: list[str] | None = None, platform: str = sys.platform
) -> str:
    """The command line for one hook. Cursor on Windows runs hooks through PowerShell, which needs
    ``& 'path'`` to run a quoted program; everything else gets POSIX shell quoting. A path neither
    can hold safely (a line break, a control character, non-UTF-8 bytes) is refused."""
    parts = list(argv or agentmem_argv()) + ["hook", hook_name]
    if vault:
        parts += ["--vault", str(vault)]
    target = f"the {agent} hook command"
    if platform == "win32" and agent == "cursor":
        return powershell_command(parts, target)
    return posix_join(parts, target)


def is_ours(command: object) -> bool:
    if not isinstance(command, str):
        return False
    c = command.lower()
    return "agentmem" in c and (" hook " in f" {c} " or "agentmem-session-" in c or "agentmem-hook" in c)


@dataclass
class InstallPlan:
    agent: str
    path: Path
    after: dict
    edit: FileEdit
    actions: list[dict] = field(default_factory=list)  # {"event", "hook", "command", "action"}


def merge(
    agent: str, existing: dict | None, commands: dict[str, str], *, path: Path | str = "<config>"
) -> tuple[dict, list[dict]]:
    """Pure merge: ``existing`` config + our ``{hook_name: command}`` -> new config and actions.

    Our entry replaces an older entry of ours for the same event in place (so re-running updates a
    moved interpreter path), further copies of ours are removed, everything else stays as it was.
    """
    doc = copy.deepcopy(existing) if existing else {}
    if agent == "cursor":
        doc.setdefault("version", 1)
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise Refused(f'{path}: "hooks" is not an object; it was not changed')
    actions: list[dict] = []
    for event, hook_name, matcher in ENTRIES[agent]:
        cmd = commands[hook_name]
        lst = hooks.setdefault(event, [])
        if not isinstance(lst, list):
            raise Refused(f'{path}: "hooks.{event}" is not a list; it was not changed')
        action = _merge_entry(lst, cmd, matcher, grouped=agent != "cursor")
        actions.append({"event": event, "hook": hook_name, "command": cmd, "action": action})
    return doc, actions


def _merge_entry(lst: list, cmd: str, matcher: str | None, *, grouped: bool) -> str:
    """Our entry in one event's list: the first of ours gets ``cmd``, further copies of ours go.
    Cursor lists hooks; Claude Code and Codex list groups of hooks (``grouped``)."""
    groups = (
        [g for g in lst if isinstance(g, dict) and isinstance(g.get("hooks"), list)] if grouped else [{"hooks": lst}]
    )
    default = ("type", "command") if grouped else ("timeout", HOOK_TIMEOUT)
    action = "added"
    for group in groups:
        inner = group["hooks"]
        for h in list(inner):
            if not (isinstance(h, dict) and is_ours(h.get("command"))):
                continue
            if action != "added":
                inner.remove(h)  # a duplicate of ours
                continue
            action = "unchanged" if h.get("command") == cmd else "updated"
            h["command"] = cmd
            h.setdefault(*default)
        if grouped and not inner and action != "added":
            lst.remove(group)  # only held a duplicate of ours
    if action == "added":
        hook = {"command": cmd, "timeout": HOOK_TIMEOUT}
        lst.append(
            {**({"matcher": matcher} if matcher else {}), "hooks": [{"type": "command", **hook}]} if grouped else hook
        )
    return action


def plan_install(
    agent: str,
    *,
    project: str | os.PathLike | None = None,
    vault: str | None = None,
    argv: list[str] | None = None,
    home: Path | None = None,
) -> InstallPlan:
    path = config_path(agent, project=project, home=home)
    raw = read_current(path)
    before = json_object(path, raw)
    commands = {name: hook_command(agent, name, vault=vault, argv=argv) for _, name, _ in ENTRIES[agent]}
    after, actions = merge(agent, before, commands, path=path)
    new = (json.dumps(after, ensure_ascii=False, indent=2) + "\n").encode()
    # The same document is not rewritten (its formatting is the user's).
    edit = plan_edit(path, raw, raw if raw is not None and before == after else new, what="JSON", check=json.loads)
    return InstallPlan(agent, path, after, edit, actions)


def _result(plan: InstallPlan, backup: Path | None, notes: list[str]) -> dict:
    return {
        "agent": plan.agent,
        "file": str(plan.path),
        "created": plan.edit.before is None,
        "changed": plan.edit.changed,
        "backup": str(backup) if backup else None,
        "entries": plan.actions,
        "notes": notes,
    }


def apply_install(plan: InstallPlan) -> dict:
    backup = apply_edit(plan.edit)
    notes: list[str] = []
    if plan.agent == "codex":
        tomls = [plan.path.parent / "config.toml", Path.home() / ".codex" / "config.toml"]
        if not any("codex_hooks" in (read_current(t) or b"").decode("utf-8", "replace") for t in tomls):
            notes.append(f"Codex runs hooks only when enabled: add `[features]` / `codex_hooks = true` to {tomls[-1]}")
    if plan.agent == "cursor":
        notes.append("Restart Cursor (or open a new chat) to load the hook.")
    return _result(plan, backup, notes)


def install_hook(
    agent: str,
    *,
    project: str | os.PathLike | None = None,
    vault: str | None = None,
    dry_run: bool = False,
) -> dict:
    plan = plan_install(agent, project=project, vault=vault)
    if dry_run:
        return {**_result(plan, None, []), "dry_run": True, "config": plan.after}
    return apply_install(plan)
