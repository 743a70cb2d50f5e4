"""``agentmem daemon run|start|stop|status|install|uninstall``: thin shells over agentmem_vault.daemon
and integrations/user_service.py."""

from __future__ import annotations

import click

from agentmem_vault.cli import AgentmemGroup, Options, cli, command_options, emit


@cli.group(cls=AgentmemGroup)
def daemon() -> None:
    """Watcher daemon: keeps memory/index.md true to the session files, folds sync conflicts,
    queues finished sessions for long-term extraction."""


_rescan_option = click.option(
    "--rescan",
    "rescan",
    type=click.FloatRange(min=0.05),
    default=None,
    help="Seconds between full rescans (default: rescan_seconds in config, 30).",
)


@daemon.command("run")
@click.option(
    "--polling", is_flag=True, help="Poll the folder instead of native events (cloud drives, network shares)."
)
@_rescan_option
@click.option("--background", is_flag=True, hidden=True, help="Log only to the log file (used by `daemon start`).")
@command_options
def run_cmd(opts: Options, polling: bool, rescan: float | None, background: bool) -> None:
    """Run the daemon in the foreground until Ctrl+C / SIGTERM."""
    from agentmem_vault.daemon.process import run_daemon

    run_daemon(opts.open_vault(), polling=polling, rescan_seconds=rescan, background=background)


@daemon.command("start")
@click.option("--polling", is_flag=True, help="Poll the folder instead of native events.")
@_rescan_option
@command_options
def start_cmd(opts: Options, polling: bool, rescan: float | None) -> None:
    """Start the daemon in the background (one per vault)."""
    from agentmem_vault.daemon import control

    res = control.start(opts.open_vault(), polling=polling, rescan_seconds=rescan)
    emit(opts, res, f"daemon started (pid {res['pid']}); log: {res['log']}")


@daemon.command("stop")
@command_options
def stop_cmd(opts: Options) -> None:
    """Stop the background daemon of this vault."""
    from agentmem_vault.daemon import control

    res = control.stop(opts.open_vault())
    emit(opts, res, f"daemon stopped (pid {res.get('pid')})" if res["stopped"] else res["message"])


@daemon.command("status")
@command_options
def status_cmd(opts: Options) -> None:
    """Show pid, uptime, last events, extraction queue and errors.

    Exit status as systemd's `status`: 0 running, 3 not running, 1 error (docs/daemon.md)."""
    from agentmem_vault.daemon import control
    from agentmem_vault.integrations.user_service import service_status

    v = opts.open_vault()
    st = control.status(v)
    st["service"] = service_status(v)
    emit(opts, st, lambda: _human_status(st))
    if not st["running"]:
        click.get_current_context().exit(NOT_RUNNING)


NOT_RUNNING = 3  # systemctl status / LSB: "program is not running"


def _human_status(st: dict) -> str:
    if not st["running"]:
        lines = ["daemon: not running"]
    else:
        up = st.get("uptime_seconds") or 0
        lines = [
            f"daemon: running (pid {st['pid']}, {st.get('mode')}, up {int(up // 3600)}h{int(up % 3600 // 60):02d}m{int(up % 60):02d}s)"
        ]
    c = st.get("counters") or {}
    if c:
        lines.append("counters: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    q = st.get("queue") or {}
    lines.append(
        f"extraction queue: {q.get('pending', 0)} pending, {q.get('due', 0)} due, {q.get('failed', 0)} failed"
        + (f" ({st['extractor']})" if st.get("extractor") and st["extractor"] != "available" else "")
    )
    for ev in (st.get("last_events") or [])[-5:]:
        detail = ev.get("path") or ev.get("session_id") or ev.get("copy") or ev.get("key") or ""
        lines.append(f"  {ev['time']} {ev['kind']} {detail}")
    for r in (st.get("reports") or [])[-5:]:
        lines.append(f"report: {r.get('message')}")
    for e in (st.get("errors") or [])[-5:]:
        lines.append(f"error: {e['time']} {e['where']}: {e['error']}")
    lines.append(f"log: {st['log']}")
    svc = st.get("service") or {}
    if svc.get("installed"):
        lines.append(f"service: {svc['kind']} {svc['name']} ({svc['state']})")
    elif svc:
        lines.append("service: not installed (`agentmem daemon install` starts it at every login)")
    return "\n".join(lines)


@daemon.command("install")
@click.option("--dry-run", is_flag=True, help="Print the service definition and commands; change nothing.")
@command_options
def install_cmd(opts: Options, dry_run: bool) -> None:
    """Install the daemon as a user service that starts at login and restarts after a crash."""
    from agentmem_vault.integrations.user_service import install

    res = install(opts.open_vault(), dry_run=dry_run)
    emit(opts, res, lambda: render_install(res))


def render_install(res: dict) -> str:
    if res["dry_run"]:
        lines = [
            f"would write {res['file']} ({res['kind']}, {res['action']}):",
            res["definition"].rstrip(),
            "then run:",
        ]
        return "\n".join(lines + ["  " + " ".join(c["command"]) for c in res["commands"]])
    verb = {"create": "installed", "update": "updated", "unchanged": "already installed"}[res["action"]]
    lines = [f"{verb}: {res['kind']} {res['name']} ({res['file']})"]
    if res["started"]:
        lines.append("  enabled and started; it starts at every login and restarts after a crash")
    if res.get("note"):
        lines.append(f"  note: {res['note']}")
    return "\n".join(lines)


@daemon.command("uninstall")
@click.option("--dry-run", is_flag=True, help="Print what would be removed; change nothing.")
@command_options
def uninstall_cmd(opts: Options, dry_run: bool) -> None:
    """Stop and remove the daemon's user service for this vault."""
    from agentmem_vault.integrations.user_service import uninstall

    res = uninstall(opts.open_vault(), dry_run=dry_run)

    def human() -> str:
        if "file" not in res:
            return res["message"]
        head = ("would remove" if dry_run else "removed") + f" {res['kind']} {res['name']} ({res['file']})"
        return "\n".join([head] + ["  " + " ".join(c["command"]) for c in res["commands"]])

    emit(opts, res, human)
