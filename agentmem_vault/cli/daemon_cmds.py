"""``agentmem daemon run|start|stop|status``: thin shells over agentmem_vault.daemon."""

from __future__ import annotations

import click

from agentmem_vault.config import resolve_vault
from agentmem_vault.cli import AgentmemGroup, cli, common_options, emit, opts_from


@cli.group(cls=AgentmemGroup)
def daemon() -> None:
    """Watcher daemon: keeps memory/index.md true to the session files, folds sync conflicts,
    queues finished sessions for long-term extraction."""


def _rescan_option(f):
    return click.option("--rescan", "rescan", type=click.FloatRange(min=0.05), default=None,
                        help="Seconds between full rescans (default: rescan_seconds in config, 30).")(f)


@daemon.command("run")
@click.option("--polling", is_flag=True, help="Poll the folder instead of native events (cloud drives, network shares).")
@_rescan_option
@click.option("--background", is_flag=True, hidden=True, help="Log only to the log file (used by `daemon start`).")
@common_options
@click.pass_context
def run_cmd(ctx: click.Context, polling: bool, rescan: float | None, background: bool, vault: str | None, as_json: bool) -> None:
    """Run the daemon in the foreground until Ctrl+C / SIGTERM."""
    from agentmem_vault.daemon.service import run_daemon

    opts = opts_from(ctx, vault, as_json)
    run_daemon(resolve_vault(opts.vault), polling=polling, rescan_seconds=rescan, background=background)


@daemon.command("start")
@click.option("--polling", is_flag=True, help="Poll the folder instead of native events.")
@_rescan_option
@common_options
@click.pass_context
def start_cmd(ctx: click.Context, polling: bool, rescan: float | None, vault: str | None, as_json: bool) -> None:
    """Start the daemon in the background (one per vault)."""
    from agentmem_vault.daemon import control

    opts = opts_from(ctx, vault, as_json)
    res = control.start(resolve_vault(opts.vault), polling=polling, rescan_seconds=rescan)
    emit(opts, res, f"daemon started (pid {res['pid']}); log: {res['log']}")


@daemon.command("stop")
@common_options
@click.pass_context
def stop_cmd(ctx: click.Context, vault: str | None, as_json: bool) -> None:
    """Stop the background daemon of this vault."""
    from agentmem_vault.daemon import control

    opts = opts_from(ctx, vault, as_json)
    res = control.stop(resolve_vault(opts.vault))
    emit(opts, res, f"daemon stopped (pid {res.get('pid')})" if res["stopped"] else res["message"])


@daemon.command("status")
@common_options
@click.pass_context
def status_cmd(ctx: click.Context, vault: str | None, as_json: bool) -> None:
    """Show pid, uptime, last events, extraction queue and errors."""
    from agentmem_vault.daemon import control

    opts = opts_from(ctx, vault, as_json)
    st = control.status(resolve_vault(opts.vault))
    emit(opts, st, lambda: _human_status(st))


def _human_status(st: dict) -> str:
    if not st["running"]:
        lines = ["daemon: not running"]
    else:
        up = st.get("uptime_seconds") or 0
        lines = [f"daemon: running (pid {st['pid']}, {st.get('mode')}, up {int(up // 3600)}h{int(up % 3600 // 60):02d}m{int(up % 60):02d}s)"]
    c = st.get("counters") or {}
    if c:
        lines.append("counters: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    q = st.get("queue") or {}
    lines.append(f"extraction queue: {q.get('pending', 0)} pending, {q.get('due', 0)} due, {q.get('failed', 0)} failed"
                 + (f" ({st['extractor']})" if st.get("extractor") and st["extractor"] != "available" else ""))
    for ev in (st.get("last_events") or [])[-5:]:
        detail = ev.get("path") or ev.get("session_id") or ev.get("copy") or ev.get("key") or ""
        lines.append(f"  {ev['time']} {ev['kind']} {detail}")
    for r in (st.get("reports") or [])[-5:]:
        lines.append(f"report: {r.get('message')}")
    for e in (st.get("errors") or [])[-5:]:
        lines.append(f"error: {e['time']} {e['where']}: {e['error']}")
    lines.append(f"log: {st['log']}")
    return "\n".join(lines)
