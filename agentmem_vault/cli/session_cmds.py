"""update, continue, release."""

from __future__ import annotations

import os

import click

from agentmem_vault.cli import Options, cli, command_options, dry_run_option, emit
from agentmem_vault.cli.complete_ids import complete_session_id
from agentmem_vault.cli.snapshot_input import read_snapshot_arg


@cli.command()
@command_options
@dry_run_option
@click.argument("session_id", shell_complete=complete_session_id)
@click.option("--snapshot", "snapshot", metavar="FILE|-", help="Incoming snapshot (default: piped stdin).")
@click.option("--topic", help="New Topic for the row and snapshot.")
@click.option("--summary", help="New Summary for the row.")
@click.option("--keywords", help="New Keywords for the row.")
def update(
    opts: Options, session_id: str, snapshot: str | None, topic: str | None, summary: str | None, keywords: str | None
) -> None:
    """Session status update (狀態更新): merge the snapshot, then update the row."""
    from agentmem_vault.ops.sessions import update_session

    v = opts.open_vault()
    res = update_session(
        v,
        session_id,
        snapshot_text=read_snapshot_arg(snapshot, v),
        topic=topic,
        summary=summary,
        keywords=keywords,
        workspace=os.getcwd(),  # the agent runs it in its workspace: the session's project
    )
    emit(opts, res.to_dict(), res.message)


@cli.command("continue")
@command_options
@dry_run_option
@click.argument("source", shell_complete=complete_session_id)
@click.option(
    "--session",
    "session_id",
    envvar="AGENTMEM_SESSION_ID",
    show_envvar=True,
    help="The current session's ID (default: AGENTMEM_SESSION_ID, which the Cursor/Claude hook sets; "
    "registered manually when neither is given).",
)
@click.option(
    "--snapshot", "snapshot", metavar="FILE|-", help="Snapshot of the current session to merge at the same time."
)
def continue_cmd(opts: Options, source: str, session_id: str | None, snapshot: str | None) -> None:
    """Continue from SOURCE (接續 memory): Continues From + Referenced By, both verified."""
    from agentmem_vault.ops.sessions import continue_session

    v = opts.open_vault()
    res = continue_session(
        v,
        source,
        session_id=session_id,
        agent=opts.agent_name(v),
        snapshot_text=read_snapshot_arg(snapshot, v, stdin_default=snapshot is not None),
    )
    emit(opts, res.to_dict(), res.message)


@cli.command()
@command_options
@dry_run_option
@click.argument("source", shell_complete=complete_session_id)
@click.option(
    "--session",
    "session_id",
    required=True,
    envvar="AGENTMEM_SESSION_ID",
    show_envvar=True,
    help="The referencing (current) session's ID (default: AGENTMEM_SESSION_ID).",
)
def release(opts: Options, source: str, session_id: str) -> None:
    """Release a reference (解除引用): remove the link in both directions."""
    from agentmem_vault.ops.sessions import release_reference

    res = release_reference(opts.open_vault(), source, session_id=session_id)
    emit(opts, res.to_dict(), res.message)
