"""init, register, list, show, find."""

from __future__ import annotations

import os

import click

from agentmem_vault.ops import board as lib
from agentmem_vault.vault import Vault
from agentmem_vault.config import resolve_vault
from agentmem_vault.errors import VaultNotFound
from agentmem_vault.board.register import register_idle
from agentmem_vault.cli import Options, cli, command_options, dry_run_option, emit
from agentmem_vault.cli.complete_ids import complete_session_id


@cli.command()
@command_options
@dry_run_option
def init(opts: Options) -> None:
    """Create the memory/ layout (index, sessions/, archive/, long-term/, config); idempotent."""
    from pathlib import Path

    try:
        v = Vault(Path(opts.vault).absolute()) if opts.vault else resolve_vault(None)
    except VaultNotFound:
        # `init` is how a vault comes to exist: with none configured, like `git init`, the current
        # folder becomes one (the folder given by --vault is created when missing).
        v = Vault(Path.cwd().absolute())
    res = lib.init_vault(v)
    done = ("created " + ", ".join(res["created"])) if res["created"] else "already initialised"
    emit(opts, res, f"vault {res['vault']}: {done}" + "".join(f"\nwarning: {w}" for w in res.get("warnings", [])))


@cli.command()
@command_options
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
def register(
    opts: Options,
    agent: str | None,
    manual: bool,
    topic: str | None,
    summary: str | None,
    keywords: str | None,
    snapshot_file: str | None,
) -> None:
    """Register this chat: an idle row (sessionStart) or, with --manual, an active row + snapshot.

    Prints `Your Memory Session ID is: <id>` only after the write verified."""
    v = opts.open_vault()
    name = opts.agent_name(v, agent)
    if not manual:
        if topic or summary or snapshot_file or keywords:
            raise click.UsageError("--topic/--summary/--keywords/--snapshot need --manual")
        reg = register_idle(v, name)
        emit(opts, {"session_id": reg.session_id, "row": reg.row.to_dict(), "message": reg.message}, reg.message)
        return
    from agentmem_vault.cli.snapshot_input import read_snapshot_arg
    from agentmem_vault.ops.sessions import register_manual, registration_result

    text = read_snapshot_arg(snapshot_file, v, stdin_default=False)
    reg = register_manual(
        v, name, topic=topic, summary=summary, keywords=keywords, snapshot_text=text, workspace=os.getcwd()
    )
    emit(opts, registration_result(v, reg), reg.message)


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
@command_options
@click.option(
    "--status",
    type=click.Choice(list(lib.LIST_STATUSES)),
    help="Only rows with this status; archived: the archived sessions (memory/archive/).",
)
def list_cmd(opts: Options, status: str | None) -> None:
    """List the rows of memory/index.md."""
    rows, bad = lib.list_rows(opts.open_vault(), status)
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
@command_options
@click.argument("session_id", shell_complete=complete_session_id)
def show(opts: Options, session_id: str) -> None:
    """Show a session's row and snapshot (also archived sessions)."""
    view = lib.show_session(opts.open_vault(), session_id)
    out = [f"{k}: {v}" for k, v in view.row.to_dict().items()] if view.row else []
    if view.archived:
        out.append("(archived)")
    out += ["", view.snapshot if view.snapshot is not None else "(no snapshot)"]
    emit(opts, view.to_dict(), "\n".join(out))


@cli.command()
@command_options
@click.argument("query", nargs=-1, required=True)
@click.option("--archived", is_flag=True, help="Also search archived sessions.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Most rows to list.")
def find(opts: Options, query: tuple[str, ...], archived: bool, limit: int) -> None:
    """Find sessions by Topic/Summary/Keywords (Chinese and English)."""
    hits = lib.find_rows(opts.open_vault(), " ".join(query), archived=archived, limit=limit)
    table = _table([h.row for h in hits], {h.row.session_id for h in hits if h.archived}) if hits else "(no match)"
    emit(opts, {"hits": [h.to_dict() for h in hits]}, table)
