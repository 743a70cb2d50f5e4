"""The foreground process of ``agentmem daemon run``: one instance per vault (an instance lock in
the user cache), the stop signals, the pid file and run record (daemon/pidfile.py) and the
rotating log; the daemon itself is ``service.Daemon``."""

from __future__ import annotations

import _thread
import logging
import logging.handlers
import signal
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

from agentmem_vault.vault import Vault, ensure_cache_folder
from agentmem_vault.daemon import paths, pidfile
from agentmem_vault.daemon.control import instance_lock
from agentmem_vault.daemon.service import Daemon
from agentmem_vault.errors import Refused

log = logging.getLogger("agentmem.daemon")

LOG_MAX_BYTES = 1_000_000  # daemon.log rotates to daemon.log.1 … .3
LOG_BACKUPS = 3
STOP_POLL = 0.2  # how often the stop request file is looked for (a stat: nothing at idle)


def setup_logging(vault: Vault, *, to_stderr: bool) -> list[logging.Handler]:
    lp = paths.log_path(vault)
    ensure_cache_folder(lp.parent)
    handlers: list[logging.Handler] = [
        logging.handlers.RotatingFileHandler(
            lp, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8", delay=True
        )
    ]
    if to_stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    for h in handlers:
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False
    return handlers


def _watch_stop_request(daemon: Daemon, request: Path) -> None:
    """Thread: ``daemon stop``'s request file acts as SIGINT would (the only stop on Windows, and
    the one when the pid cannot be trusted): the handler runs in the main thread and interrupts a
    pass (docs/daemon.md, within 2 s whatever it is doing); the None wakes a wait for events."""
    while not daemon.stop_event.wait(STOP_POLL):
        if request.exists():
            _thread.interrupt_main(signal.SIGINT)
            daemon.inbox.put(None)
            return


def run_daemon(
    vault: Vault, *, polling: bool = False, rescan_seconds: float | None = None, background: bool = False
) -> None:
    """``agentmem daemon run``: one instance per vault, signals, pid file, rotating log."""
    ensure_cache_folder(paths.instance_lock_path(vault).parent)
    since = time.time()  # a stop request older than the lock was for a run that is gone; a newer one is ours
    lock = instance_lock(vault)
    if lock is None:
        raise Refused(
            f"a daemon is already running for {vault.root} (see `agentmem daemon status`)", code="daemon_running"
        )
    handlers: list[logging.Handler] = []
    try:
        request = paths.stop_request_path(vault)
        with suppress(OSError):
            if request.stat().st_mtime < since:
                request.unlink()
        handlers = setup_logging(vault, to_stderr=not background)
        daemon = Daemon(vault, polling=polling, rescan_seconds=rescan_seconds)
        old = {}
        watcher = None
        if threading.current_thread() is threading.main_thread():
            sigs = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGBREAK] if hasattr(signal, "SIGBREAK") else [])
            for s in sigs:
                old[s] = signal.signal(s, daemon.on_signal)
            watcher = threading.Thread(target=_watch_stop_request, args=(daemon, request), daemon=True)
            watcher.start()
        token = None
        try:
            info = {"host": daemon.status.data["host"], "started_at": daemon.status.data["started_at"]}
            token = pidfile.record_run(vault, info)
            daemon.run()
        finally:
            daemon.stop_event.set()
            if watcher is not None:
                watcher.join()  # before the handlers go: a late interrupt finds on_signal, a no-op now
            if token is not None:
                pidfile.clear_run(vault, token)
            for s, prev in old.items():
                signal.signal(s, prev)
    finally:
        for h in handlers:
            log.removeHandler(h)
            h.close()
        lock.release()
