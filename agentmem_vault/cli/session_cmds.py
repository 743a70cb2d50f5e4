"""update, continue, release."""

from __future__ import annotations

import os

import click

from agentmem_vault.vault import Vault
from agentmem_vault.config import resolve_agent, resolve_vault, vault_config
from agentmem_vault.cli import cli, common_options, dry_run_option, emit, opts_from
from agentmem_vault.cli.complete_ids import complete_session_id


def read_snapshot_arg(snapshot: str | None, vault: Vault, *, stdin_default: bool = True) -> str | None:
    """``--snapshot FILE``, ``--snapshot -`` (stdin), or piped stdin when the option is omitted."""
    from agentmem_vault.cli.snapshot_input import read_snapshot_source
    from agentmem_vault.ops.sessions import snapshot_limit

    return read_snapshot_source(
        snapshot,
        implicit_stdin=stdin_default,
        warn=lambda m: click.echo(f"warning: {m}", err=True),
        limit=snapshot_limit(vault),
    )


def _agent(ctx: click.Context, vault: Vault) -> str:
    return resolve_agent(
        ctx.obj.agent if ctx.obj else None, vault_config(vault), allow_any=bool(ctx.obj and ctx.obj.allow_agent_name)
    )


@cli.command()
@common_options
@dry_run_option
@click.argument("session_id", shell_complete=complete_session_id)
@click.option("--snapshot", "snapshot", metavar="FILE|-", help="Incoming snapshot (default: piped stdin).")
@click.option("--topic", help="New Topic for the row and snapshot.")
@click.option("--summary", help="New Summary for the row.")
@click.option("--keywords", help="New Keywords for the row.")
@click.pass_context
def update(
    ctx: click.Context,
    vault: str | None,
    as_json: bool,
    session_id: str,
    snapshot: str | None,
    topic: str | None,
    summary: str | None,
    keywords: str | None,
) -> None:
    """Session status update (狀態更新): merge the snapshot, then update the row."""
    from agentmem_vault.ops.sessions import update_session

    opts = opts_from(ctx, vault, as_json)
    v = resolve_vault(opts.vault)
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
@common_options
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
@click.pass_context
def continue_cmd(
    ctx: click.Context, vault: str | None, as_json: bool, source: str, session_id: str | None, snapshot: str | None
) -> None:
    """Continue from SOURCE (接續 memory): Continues From + Referenced By, both verified."""
    from agentmem_vault.ops.sessions import continue_session

    opts = opts_from(ctx, vault, as_json)
    v = resolve_vault(opts.vault)
    res = continue_session(
        v,
        source,
        session_id=session_id,
        agent=_agent(ctx, v),
        snapshot_text=read_snapshot_arg(snapshot, v, stdin_default=snapshot is not None),
    )
    emit(opts, res.to_dict(), res.message)


@cli.command()
@common_options
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
@click.pass_context
def release(ctx: click.Context, vault: str | None, as_json: bool, source: str, session_id: str) -> None:
    """Release a reference (解除引用): remove the link in both directions."""
    from agentmem_vault.ops.sessions import release_reference

    opts = opts_from(ctx, vault, as_json)
    res = release_reference(resolve_vault(opts.vault), source, session_id=session_id)
    emit(opts, res.to_dict(), res.message)
