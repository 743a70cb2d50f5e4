"""init, register, list, show, find."""

from __future__ import annotations

import os

import click

from agentmem_vault.ops import board as lib
from agentmem_vault.vault import Vault
from agentmem_vault.config import resolve_agent, resolve_vault, vault_config
from agentmem_vault.errors import VaultNotFound
from agentmem_vault.board.register import register_idle
from agentmem_vault.cli import Options, cli, common_options, dry_run_option, emit, opts_from
from agentmem_vault.cli.complete_ids import complete_session_id


def _vault(opts: Options) -> Vault:
    return resolve_vault(opts.vault)


def _agent(ctx: click.Context, agent: str | None, vault: Vault) -> str:
    return resolve_agent(agent or ctx.obj.agent, vault_config(vault), allow_any=ctx.obj.allow_agent_name)


@cli.command()
@common_options
@dry_run_option
@click.pass_context
def init(ctx: click.Context, vault: str | None, as_json: bool) -> None:
    """Create the memory/ layout (index, sessions/, archive/, long-term/, config); idempotent."""
    opts = opts_from(ctx, vault, as_json)
    from agentmem_vault.vault import Vault
    from pathlib import Path

    try:
        v = Vault(Path(opts.vault).absolute()) if opts.vault else resolve_vault(None)
    except VaultNotFound:
        # `init` is how a vault comes to exist: with none configured, like `git init`, the current
        # folder becomes one (the folder given by --vault is created when missing).
        v = Vault(Path.cwd().absolute())
    res = lib.init_vault(v)
    emit(
        opts,
        res,
        lambda: (
            f"vault {res['vault']}: "
            + (("created " + ", ".join(res["created"])) if res["created"] else "already initialised")
            + "".join(f"\nwarning: {w}" for w in res.get("warnings", []))
        ),
    )


@cli.command()
@common_options
@dry_run_option
@click.option("--agent", help="Agent name (default from AGENTMEM_AGENT / config / cursor-main-agent).")
@click.option("--manual", is_flag=True, help="Manual registration: active row and a session snapshot.")
@click.option("--topic", help="Topic (manual registration).")
@click.option("--summary", help="Summary (manual registration).")
@click.option("--keywords", help="Keywords (manual registration).")
@click.option(
    "--snapshot",
    "snapshot_file",
    metavar="FILE|-",
    help="Snapshot to write (FILE or - for stdin), manual registration.",
)
@click.pass_context
def register(
    ctx: click.Context,
    vault: str | None,
    as_json: bool,
    agent: str | None,
    manual: bool,
    topic: str | None,
    summary: str | None,
    keywords: str | None,
    snapshot_file: str | None,
) -> None:
    """Register this chat: an idle row (sessionStart) or, with --manual, an active row + snapshot.

    Prints `Your Memory Session ID is: <id>` only after the write verified."""
    opts = opts_from(ctx, vault, as_json)
    v = _vault(opts)
    name = _agent(ctx, agent, v)
    if not manual:
        if topic or summary or snapshot_file or keywords:
            raise click.UsageError("--topic/--summary/--keywords/--snapshot need --manual")
        reg = register_idle(v, name)
        emit(opts, {"session_id": reg.session_id, "row": reg.row.to_dict(), "message": reg.message}, reg.message)
        return
    from agentmem_vault.ops.sessions import register_manual
    from agentmem_vault.cli.snapshot_input import read_snapshot_source
    from agentmem_vault.ops.sessions import snapshot_limit

    text = read_snapshot_source(snapshot_file, implicit_stdin=False, limit=snapshot_limit(v))
    reg = register_manual(
        v, name, topic=topic, summary=summary, keywords=keywords, snapshot_text=text, workspace=os.getcwd()
    )
    emit(
        opts,
        {
            "session_id": reg.session_id,
            "row": reg.row.to_dict(),
            "snapshot_path": str(v.session_path(reg.session_id)),
            "message": reg.message,
        },
        reg.message,
    )


def _table(rows, archived: set[str] | None = None) -> str:
    if not rows:
        return "(no sessions)"
    lines = []
    for r in rows:
        ref = f"  ← {r.referenced_by}" if r.referenced_by not in ("-", "") else ""
        status = "archived" if archived and r.session_id in archived else r.status
        lines.append(f"{r.session_id:<40} {status:<8} {r.updated_at:<16} {r.topic}{ref}")
    return "\n".join(lines)


@cli.command("list")
@common_options
@click.option(
    "--status",
    type=click.Choice(list(lib.LIST_STATUSES)),
    help="Only rows with this status; archived: the archived sessions (memory/archive/).",
)
@click.pass_context
def list_cmd(ctx: click.Context, vault: str | None, as_json: bool, status: str | None) -> None:
    """List the rows of memory/index.md."""
    opts = opts_from(ctx, vault, as_json)
    rows, bad = lib.list_rows(_vault(opts), status)
    for b in bad:
        click.echo(
            f"warning: memory/index.md line {b.line_no}: {b.reason} (kept as is; see `agentmem doctor`)", err=True
        )
    shown = {r.session_id for r in rows} if status == "archived" else None
    emit(
        opts,
        {"rows": [r.to_dict() for r in rows], "malformed": [b.to_dict() for b in bad]},
        lambda: _table(rows, shown),
    )


@cli.command()
@common_options
@click.argument("session_id", shell_complete=complete_session_id)
@click.pass_context
def show(ctx: click.Context, vault: str | None, as_json: bool, session_id: str) -> None:
    """Show a session's row and snapshot (also archived sessions)."""
    opts = opts_from(ctx, vault, as_json)
    view = lib.show_session(_vault(opts), session_id)

    def human() -> str:
        out = []
        if view.row:
            out += [f"{k}: {v}" for k, v in view.row.to_dict().items()]
        if view.archived:
            out.append("(archived)")
        out.append("")
        out.append(view.snapshot if view.snapshot is not None else "(no snapshot)")
        return "\n".join(out)

    emit(opts, view.to_dict(), human)


@cli.command()
@common_options
@click.argument("query", nargs=-1, required=True)
@click.option("--archived", is_flag=True, help="Also search archived sessions.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Most rows to list.")
@click.pass_context
def find(
    ctx: click.Context, vault: str | None, as_json: bool, query: tuple[str, ...], archived: bool, limit: int
) -> None:
    """Find sessions by Topic/Summary/Keywords (Chinese and English)."""
    opts = opts_from(ctx, vault, as_json)
    hits = lib.find_rows(_vault(opts), " ".join(query), archived=archived, limit=limit)
    emit(
        opts,
        {"hits": [h.to_dict() for h in hits]},
        lambda: _table([h.row for h in hits], {h.row.session_id for h in hits if h.archived}) if hits else "(no match)",
    )
