"""organize, archive, say, doctor, install-rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentmem_vault.cli import Options, cli, command_options, dry_run_option, emit, run_dry
from agentmem_vault.cli.complete_ids import complete_session_id
from agentmem_vault.cli.help import SayCommand


@cli.command()
@command_options
@click.option(
    "--stale-days",
    type=click.IntRange(min=0),
    default=None,
    help="Mark active rows stale after this many days without update (default: config stale_days, 14).",
)
@click.option("--dry-run", is_flag=True, help="Print the plan; write nothing.")
def organize(opts: Options, stale_days: int | None, dry_run: bool) -> None:
    """整理 memory: delete idle rows, mark overdue active rows stale (never archives)."""
    from agentmem_vault.ops.lifecycle import organize as run, render_organize

    # inside fs.DryRun as well: not even a lock file or a config cache is written
    plan = run_dry(lambda: run(opts.open_vault(), stale_days=stale_days, dry_run=dry_run), enabled=dry_run)
    emit(opts, plan.to_dict(), lambda: render_organize(plan, dry_run=dry_run))


@cli.command()
@command_options
@click.argument("session_id", shell_complete=complete_session_id)
@click.option("--force", is_flag=True, help="Archive even though other sessions still reference it.")
@click.option("--dry-run", is_flag=True, help="Print the steps; write nothing.")
def archive(opts: Options, session_id: str, force: bool, dry_run: bool) -> None:
    """封存 memory session: move a session to memory/archive/<ID>/ (all or nothing)."""
    from agentmem_vault.ops.archive import archive as run, render_archive

    res = run_dry(lambda: run(opts.open_vault(), session_id, force=force, dry_run=dry_run), enabled=dry_run)
    emit(opts, res.to_dict(), lambda: render_archive(res))


@cli.command(cls=SayCommand)
@command_options
@click.argument("text")
@click.argument("session_id", required=False, shell_complete=complete_session_id)
@click.option("--session", help="The current session's ID (continue/release/update); default AGENTMEM_SESSION_ID.")
@click.option(
    "--snapshot",
    "snapshot_file",
    metavar="FILE|-",
    help="Snapshot you wrote (FILE, or - for stdin) for register/update/continue.",
)
@click.option("--topic", help="Topic (register/update).")
@click.option("--summary", help="Summary (register/update).")
@click.option("--keywords", help="Keywords (register/update).")
@click.option("--agent", help="Agent name for a new registration.")
@click.option("--stale-days", type=click.IntRange(min=0), default=None, help="organize: days before active → stale.")
@click.option("--dry-run", is_flag=True, help="Preview any command: write nothing, list what would change.")
@click.option("--force", is_flag=True, help="archive: archive despite references.")
def say(
    opts: Options, text: str, session_id: str | None, snapshot_file: str | None, agent: str | None, **given: Any
) -> None:
    """Run a trigger phrase typed in Chinese (Traditional or Simplified) or English.

    Examples: `agentmem say "整理 memory"`, `agentmem say "狀態更新" ID --snapshot -`,
    `agentmem say "繼續 SOURCE-ID"`. Session IDs in TEXT become arguments; unknown text exits 2.
    `整理這個 session` always means update; `整理記憶` / `整理 memory` mean organize."""
    from agentmem_vault.cli.snapshot_input import read_snapshot_arg
    from agentmem_vault.cli.say_dispatch import SayOptions, dispatch
    from agentmem_vault.model.triggers import route

    r = route(text)  # unknown text fails here (exit 2) before anything else is looked at
    v = opts.open_vault()
    # Same reader as update/register: non-UTF-8 bytes or an empty `-` are a clear error, not a traceback.
    snapshot_text = read_snapshot_arg(snapshot_file, v, stdin_default=False)
    name = opts.agent_name(v, agent) if r.command in ("register", "continue") else None
    say_opts = SayOptions(id_arg=session_id, snapshot_text=snapshot_text, agent=name, **given)
    # every routed command previews in fs.DryRun: a `狀態更新 --dry-run` writes nothing either
    result, human = run_dry(lambda: dispatch(v, r, say_opts), enabled=say_opts.dry_run)
    if say_opts.dry_run and isinstance(result, dict):
        result["dry_run"] = True
    # The routed command on its own line, so an ID message stays at the start of its line.
    emit(opts, result, f"({r.phrase} → {r.command})\n{human}")


@cli.command()
@command_options
@dry_run_option
@click.option("--fix", is_flag=True, help="Repair what is safe (backup under memory/.agentmem/backups/).")
def doctor(opts: Options, fix: bool) -> None:
    """Check memory/ for damaged rows, missing files, broken references and sync-conflict copies."""
    from agentmem_vault.ops.doctor import diagnose, render_report, repair

    v = opts.open_vault()
    report = repair(v) if fix else diagnose(v)
    emit(opts, report.to_dict(), lambda: render_report(report))
    if report.unresolved_errors():  # exit 1 while errors remain (warnings are advice)
        click.get_current_context().exit(1)


@cli.command("install-rules")
@command_options
@click.option(
    "--project",
    "project",
    type=click.Path(file_okay=False),
    required=True,
    help="Project folder that gets .cursor/rules/agent-memory.mdc.",
)
@click.option("--agents-md", is_flag=True, help="Also add the instructions to AGENTS.md (Codex).")
@click.option("--claude-md", is_flag=True, help="Also add the instructions to CLAUDE.md (Claude Code).")
def install_rules(opts: Options, project, agents_md, claude_md) -> None:
    """Install the agent instruction file (Cursor rule; optionally AGENTS.md / CLAUDE.md)."""
    from agentmem_vault.integrations.rules import install_rules as run

    res = run(Path(project), agents_md=agents_md, claude_md=claude_md)
    lines = [
        f"{c['status']}: {c['path']}" + (f" (backup: {c['backup']})" if c.get("backup") else "") for c in res["files"]
    ]
    emit(opts, res, "\n".join(lines))
