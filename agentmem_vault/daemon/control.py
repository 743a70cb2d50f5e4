"""``daemon start`` / ``stop`` / ``status``: the background process seen from outside.

"Running" means: the single-instance lock (in the user cache directory, keyed by the vault) is
held. The pid and status files in ``memory/.agentmem/`` say which process and what it did; they
may be stale, come from another machine through the sync client or be forged, so the pid that is
signalled comes from the run record in the user cache, checked against the process's command
line (daemon/pidfile.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import suppress

from filelock import FileLock, Timeout

from agentmem_vault.vault import Vault, user_cache_dir, ensure_cache_folder
from agentmem_vault.errors import AgentmemError, Refused
from agentmem_vault.fs import atomic_write_text, create_fresh, prepare_lock_file, read_bytes
from agentmem_vault.daemon import paths, pidfile


def instance_lock(vault: Vault) -> FileLock | None:
    """This vault's single-instance lock, taken; None when a daemon holds it."""
    lp = paths.instance_lock_path(vault)
    prepare_lock_file(lp)  # filelock opens with O_TRUNC: never through a link or at a FIFO
    lock = FileLock(str(lp))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock


def is_running(vault: Vault) -> bool:
    if not os.path.lexists(paths.instance_lock_path(vault)):
        return False
    lock = instance_lock(vault)
    if lock is not None:
        lock.release()
    return lock is None


def status(vault: Vault) -> dict:
    running = is_running(vault)
    data = pidfile.read_json(paths.status_path(vault)) or {}
    started = data.get("started_epoch")
    return {
        "running": running,
        "vault": str(vault.root),
        "pid": pidfile.trusted_pid(vault) if running else None,
        "uptime_seconds": round(time.time() - float(started), 1) if running and started else None,
        "mode": data.get("mode"),
        "state": data.get("state") if running else "stopped",
        "started_at": data.get("started_at"),
        "status_updated_at": data.get("updated_at"),
        "last_rescan": data.get("last_rescan"),
        "counters": data.get("counters", {}),
        "queue": data.get("queue", {}),
        "queue_length": (data.get("queue") or {}).get("pending", 0),
        "extractor": data.get("extractor"),
        **{key: data.get(key, []) for key in ("last_events", "errors", "reports")},
        "log": str(paths.log_path(vault)),
    }


def _spawn_kwargs() -> dict:
    if sys.platform == "win32":  # pragma: no cover - Windows only
        return {"creationflags": 0x00000008 | 0x00000200}  # DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP
    return {"start_new_session": True}


def start(vault: Vault, *, polling: bool = False, rescan_seconds: float | None = None, wait: float = 15.0) -> dict:
    """Launch ``agentmem daemon run`` detached; return once it reports running (or failed)."""
    if is_running(vault):
        raise Refused(
            f"a daemon is already running for {vault.root} (pid {pidfile.trusted_pid(vault)})", code="daemon_running"
        )
    if not vault.memory.is_dir():
        raise AgentmemError(f"{vault.memory} does not exist; run `agentmem init` first", code="not_a_vault")
    cmd = [sys.executable, "-m", "agentmem_vault", "--vault", str(vault.root), "daemon", "run", "--background"]
    if polling:
        cmd.append("--polling")
    if rescan_seconds is not None:
        cmd += ["--rescan", str(rescan_seconds)]
    err_path = paths.stderr_path(vault)
    ensure_cache_folder(err_path.parent)
    before = pidfile.read_json(paths.status_path(vault)) or {}
    cwd = ensure_cache_folder(user_cache_dir())  # not the vault: a working folder blocks renaming it on Windows
    with create_fresh(err_path) as err:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=str(cwd),
            close_fds=True,
            **_spawn_kwargs(),
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            try:
                raw = read_bytes(err_path, limit=pidfile.STATE_FILE_BYTES) or b""
                tail = raw.decode("utf-8", "replace")[-2000:].strip()
            except AgentmemError as exc:
                tail = exc.message
            raise AgentmemError(
                f"the daemon exited at start (code {code}): {tail or 'no output'}", code="daemon_failed"
            )
        data = pidfile.read_json(paths.status_path(vault)) or {}
        if data.get("pid") == proc.pid and data.get("state") == "running" and data != before:
            return {"started": True, "pid": proc.pid, "vault": str(vault.root), "log": str(paths.log_path(vault))}
        time.sleep(0.05)
    raise AgentmemError(
        f"the daemon (pid {proc.pid}) did not report running within {wait:g} s; see {paths.log_path(vault)}",
        code="daemon_failed",
    )


def stop(vault: Vault, *, wait: float = 10.0) -> dict:
    """Ask the local daemon to stop (stop-request file, plus SIGTERM on POSIX) and wait for it."""
    if not is_running(vault):
        return {"stopped": False, "running": False, "message": "no daemon is running for this vault"}
    pid = pidfile.trusted_pid(vault)
    req = paths.stop_request_path(vault)
    ensure_cache_folder(req.parent)
    atomic_write_text(req, str(time.time()))  # Windows has no SIGTERM for a detached process
    if pid is not None and sys.platform != "win32":
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < wait:
            if not is_running(vault):
                return {"stopped": True, "pid": pid, "seconds": round(time.monotonic() - t0, 2)}
            time.sleep(0.05)
    finally:
        if not is_running(vault):
            with suppress(OSError):
                req.unlink()
    raise AgentmemError(f"the daemon (pid {pid}) did not stop within {wait:g} s", code="daemon_stop_failed")
