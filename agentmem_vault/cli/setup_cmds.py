"""``agentmem setup``: asks (or takes flags), then runs integrations/setup.py."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from agentmem_vault.cli import Options, cli, command_options, emit
from agentmem_vault.errors import UsageError


@cli.command("setup")
@click.option("-y", "--yes", is_flag=True, help="Accept every default without asking (for scripts).")
@click.option(
    "--dry-run", is_flag=True, help="Print every change (files, hook commands, service definition); write nothing."
)
@click.option(
    "--hook",
    "hooks",
    multiple=True,
    type=click.Choice(["cursor", "claude", "codex"]),
    help="Install the hook for this agent (repeatable; default: every agent found in your home folder).",
)
@click.option("--no-hooks", is_flag=True, help="Do not install agent hooks.")
@click.option(
    "--project", type=click.Path(file_okay=False), help="Also install the agent rules into this project folder."
)
@click.option("--agents-md", is_flag=True, help="With --project: also add the instructions to AGENTS.md (Codex).")
@click.option("--claude-md", is_flag=True, help="With --project: also add the instructions to CLAUDE.md (Claude Code).")
@click.option("--no-daemon", is_flag=True, help="Do not install the daemon as a user service.")
@click.option("--no-mcp", is_flag=True, help="Do not configure the MCP server.")
@click.option("--no-check", is_flag=True, help="Skip the final check (doctor + a simulated sessionStart).")
@command_options
def setup_cmd(
    opts: Options,
    yes: bool,
    dry_run: bool,
    hooks: tuple[str, ...],
    no_hooks: bool,
    project: str | None,
    agents_md: bool,
    claude_md: bool,
    no_daemon: bool,
    no_mcp: bool,
    no_check: bool,
) -> None:
    """Set up this machine: vault, user config, agent hooks, rules, daemon service, then a check.

    Creates the vault folder (or adopts an existing vault), pins it in the user config, installs
    the hooks for the agents found (~/.cursor, ~/.claude, ~/.codex) with the vault in the command,
    installs the daemon as a user service and ends with `doctor` plus a simulated sessionStart.
    Safe to run again: it changes only what is missing or out of date.
    """
    from agentmem_vault.integrations import setup as lib
    from agentmem_vault.integrations.file_edit import project_folder

    interactive = not yes and not dry_run and not opts.as_json
    if interactive and not sys.stdin.isatty():
        raise UsageError(
            "setup asks questions but stdin is not a terminal; pass --yes to accept the defaults (or --dry-run to look first)"
        )
    home = lib.home_dir()
    vault_path = Path(opts.vault).expanduser() if opts.vault else lib.default_vault()
    found = lib.detect_agents()
    agents: tuple[str, ...] | None = tuple(hooks) if hooks else None
    daemon = not no_daemon
    if interactive:
        vault_path = Path(click.prompt("Vault folder (created if missing)", default=str(vault_path))).expanduser()
        if not hooks and not no_hooks:
            if found:
                agents = tuple(
                    a
                    for a in found
                    if click.confirm(
                        f"Install the session hooks for {lib.AGENT_NAMES[a]} (~/{lib.AGENT_DIRS[a]})?", default=True
                    )
                )
            else:
                click.echo(f"No agent config folder found in {home} (~/.cursor, ~/.claude, ~/.codex); skipping hooks.")
        if project is None:
            answer = click.prompt(
                "Install the agent rules into a project? Project folder (empty: skip)", default="", show_default=False
            ).strip()
            project = answer or None
        if not no_daemon:
            daemon = click.confirm("Install the daemon as a user service (starts at login)?", default=True)
    options = lib.SetupOptions(
        vault=vault_path,
        agents=agents,
        project=project_folder(project) if project else None,  # refused before anything is written
        agents_md=agents_md,
        claude_md=claude_md,
        hooks=not no_hooks,
        mcp=not no_mcp,
        daemon=daemon,
        check=not no_check,
    )
    if interactive:
        preview = lib.run_setup(options, dry_run=True)
        click.echo(lib.render(preview, footer=False))
        if not preview.changed:
            click.echo("Everything is already set up; running the check.")
        elif not click.confirm("Apply these changes?", default=True):
            raise UsageError("nothing changed; run `agentmem setup` again when ready")
    result = lib.run_setup(options, dry_run=dry_run)
    emit(opts, result.to_dict(), lambda: lib.render(result))
    if not result.ok:
        click.get_current_context().exit(1)
