"""journal, restore."""

from __future__ import annotations

import click

from agentmem_vault import journal as lib
from agentmem_vault.cli import Options, cli, command_options, dry_run_option, emit


def _line(e: dict) -> str:
    removed = lib.removed_rows(e)
    extra = f" ({len(removed)} rows removed)" if removed and e.get("action") != "remove_row" else ""
    return f"{e.get('time', '?'):<19} {e.get('command', '?'):<18} {e.get('action', '?'):<16} {e.get('session_id') or e.get('path') or ''}{extra}"


@cli.command()
@command_options
@click.option("--session", "session_id", help="Only entries about this Session ID.")
@click.option("--limit", default=50, show_default=True, help="Newest entries to show (0 = all).")
def journal(opts: Options, session_id: str | None, limit: int) -> None:
    """Show the change journal (memory/.agentmem/journal.jsonl), newest last."""
    j = lib.history(opts.open_vault(), session_id, limit)
    human = "\n".join(_line(e) for e in j.entries) or "(no entries)"
    if j.broken_lines:
        human += f"\n({j.broken_lines} unreadable journal lines skipped)"
    emit(opts, {"entries": j.entries, "broken_lines": j.broken_lines}, human)


@cli.command()
@command_options
@dry_run_option
@click.argument("session_id")
def restore(opts: Options, session_id: str) -> None:
    """Put a row that organize/archive/delete removed back on the board, from the journal."""
    row = lib.restore_row(opts.open_vault(), session_id)
    emit(opts, {"restored": row.to_dict()}, f"restored {row.session_id} ({row.status}, {row.topic}) to memory/index.md")
