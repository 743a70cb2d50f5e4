"""Hook commands: ``hook`` (listed here for --help; real calls never reach click), ``whoami``,
``install-hook``."""

from __future__ import annotations

import json

import click

from agentmem_vault.cli import Options, cli, command_options, emit, render_install


@cli.command(
    "hook", context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_cmd(args: tuple[str, ...]) -> None:
    """Agent lifecycle hooks (stdin JSON -> stdout JSON): cursor-session-start, claude-session-start,
    codex-session-start, cursor-session-end, cursor-stop, claude-session-end, codex-stop."""
    from agentmem_vault.hooks.run import main as hook_main

    raise SystemExit(hook_main(["hook", *args]))


@cli.command("whoami")
@click.option(
    "--conversation", help="The agent's conversation / session ID (Cursor conversation_id, Claude Code session_id)."
)
@command_options
def whoami_cmd(opts: Options, conversation: str | None) -> None:
    """Print this chat's Memory Session ID (recorded by the sessionStart hook)."""
    from agentmem_vault.ops.conversations import whoami

    result = whoami(opts.open_vault(), conversation)
    gone = "\n(note: this ID has no row in memory/index.md any more — it was organized or archived)"
    emit(opts, result, f"Your Memory Session ID is: {result['session_id']}" + ("" if result["on_board"] else gone))


@cli.command("install-hook")
@click.argument("agent", type=click.Choice(["cursor", "claude", "codex"]))
@click.option(
    "--user",
    "scope",
    flag_value="user",
    default=True,
    help="Install for every project (~/.cursor, ~/.claude, ~/.codex). Default.",
)
@click.option("--project", "project", type=click.Path(file_okay=False), help="Install into this project folder only.")
@click.option("--dry-run", is_flag=True, help="Show the merged config without writing it.")
@command_options
def install_hook_cmd(opts: Options, agent: str, scope: str, project: str | None, dry_run: bool) -> None:
    """Merge agentmem's hooks into AGENT's hook config (keeps other hooks, backs up the old file).

    The hook command always names the vault (--vault, AGENTMEM_VAULT, the user config or the
    current folder, resolved now), so a chat started from anywhere - also an agent launched from
    the desktop without AGENTMEM_VAULT - finds it.
    """
    from agentmem_vault.integrations.hook_install import install_hook, pinned_vault

    vault_arg = str(pinned_vault(opts.vault).root)
    result = install_hook(agent, project=project, vault=vault_arg, dry_run=dry_run)

    def human() -> str:
        if dry_run:
            return json.dumps(result["config"], ensure_ascii=False, indent=2)
        return render_install(result, [f"  {e['event']}: {e['action']} -> {e['command']}" for e in result["entries"]])

    emit(opts, result, human)
