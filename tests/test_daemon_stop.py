"""The daemon stops within 2 s of SIGTERM whatever it is doing (docs/daemon.md): here, in the
middle of its first reconcile pass over 1,500 snapshots without rows (a pass of tens of seconds),
and the vault it leaves is consistent: every file whole, the board readable, no temporary files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault
from daemon_helpers import sid, snapshot_text, wait_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX")


def _start_in_a_long_pass(vault: Vault, n: int) -> tuple[subprocess.Popen, object]:
    """A real ``daemon run`` with ``n`` snapshots without rows: its first reconcile is long."""
    for i in range(n):
        vault.session_path(sid(i)).write_text(snapshot_text(sid(i)), encoding="utf-8")
    before = vault.index_path.read_bytes()
    err = open(vault.root.parent / "daemon.stderr", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(vault.root), "daemon", "run", "--polling"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=err,
        env=dict(os.environ),
    )
    busy, _ = wait_for(lambda: vault.index_path.read_bytes() != before or proc.poll() is not None, 120, 0.02)
    assert busy and proc.poll() is None, (vault.root.parent / "daemon.stderr").read_text()
    return proc, err


def test_sigterm_in_the_middle_of_a_long_pass_stops_within_two_seconds(vault: Vault) -> None:
    n = 1500
    proc, err = _start_in_a_long_pass(vault, n)
    try:
        assert len(it.parse_index(vault.index_path.read_text(encoding="utf-8")).ids()) < n  # still working
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        err.close()
    assert proc.returncode == 0, (vault.root.parent / "daemon.stderr").read_text()
    assert took < 2.0, (took, (vault.root.parent / "daemon.stderr").read_text()[-3000:])
    _assert_consistent(vault, n)
    for i in range(n):
        assert vault.session_path(sid(i)).read_text(encoding="utf-8").startswith(f"# Session: {sid(i)}") or (
            vault.session_path(sid(i)).read_text(encoding="utf-8").startswith("---")
        )


def _assert_consistent(vault: Vault, n: int) -> None:
    doc = it.parse_index(vault.index_path.read_text(encoding="utf-8"))
    assert not doc.bad and not doc.duplicate_ids() and len(doc.ids()) < n
    assert not [p for p in vault.memory.rglob("*") if p.name.endswith(".agentmem-tmp")]


def test_the_stop_request_alone_interrupts_a_long_pass_within_two_seconds(vault: Vault) -> None:
    """``daemon stop`` without a signal -- the only way on Windows, and the way when the run record
    cannot be trusted -- is as prompt as SIGTERM: the request file is watched during passes too."""
    from agentmem_vault.daemon import control, pidfile

    n = 1500
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    proc, err = _start_in_a_long_pass(vault, n)
    try:
        rec = pidfile.run_record_path(vault)
        ok, _ = wait_for(rec.exists, 60)
        assert ok
        data = json.loads(rec.read_text(encoding="utf-8"))  # a reused pid: no signal is sent, as on Windows
        rec.write_text(json.dumps({**data, "pid": victim.pid}), encoding="utf-8")
        assert pidfile.trusted_pid(vault) is None
        assert len(it.parse_index(vault.index_path.read_text(encoding="utf-8")).ids()) < n  # still working
        t0 = time.monotonic()
        result = control.stop(vault, wait=60)
        took = time.monotonic() - t0
        proc.wait(timeout=60)
        victim_alive = victim.poll() is None
    finally:
        victim.kill()
        victim.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        err.close()
    stderr = (vault.root.parent / "daemon.stderr").read_text()
    assert result["stopped"] is True and proc.returncode == 0, stderr
    assert took < 2.0, (took, stderr[-3000:])
    assert victim_alive  # the reused pid was not signalled
    _assert_consistent(vault, n)


def test_a_stop_that_comes_before_run_skips_the_startup_pass(vault: Vault) -> None:
    """SIGTERM (or ``daemon stop``'s request, which acts as SIGINT) handled in the moment between
    installing the handlers and ``Daemon.run()``: the daemon stops at once instead of first making
    its whole startup pass (here, rows for 200 snapshots)."""
    from agentmem_vault.daemon.service import Daemon

    for i in range(200):
        vault.session_path(sid(i)).write_text(snapshot_text(sid(i)), encoding="utf-8")
    before = vault.index_path.read_bytes()
    d = Daemon(vault, polling=True, extractor_loader=lambda v: (None, "off"))
    d.on_signal(signal.SIGTERM, None)
    t0 = time.monotonic()
    d.run()
    assert time.monotonic() - t0 < 2.0
    assert vault.index_path.read_bytes() == before  # no startup reconcile
    assert json.loads((vault.state_dir / "daemon-status.json").read_text(encoding="utf-8"))["state"] == "stopped"


def test_a_stop_request_made_once_the_lock_is_taken_is_not_thrown_away(vault: Vault) -> None:
    """``daemon stop`` sees the lock held and writes its request before the new daemon has cleared
    old requests away: that request (newer than the lock) is this run's and stops it; an older one
    (a run that is gone) is removed and the daemon keeps running."""
    from agentmem_vault.daemon import control, paths

    req = paths.stop_request_path(vault)
    req.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "agentmem_vault", "--vault", str(vault.root), "daemon", "run", "--polling"]
    req.write_text("stale", encoding="utf-8")
    os.utime(req, (time.time() - 60, time.time() - 60))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ok, _ = wait_for(lambda: control.status(vault)["state"] == "running" or proc.poll() is not None, 60)
        assert ok and proc.poll() is None and not req.exists()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    req.write_text("newer than the lock", encoding="utf-8")
    os.utime(req, (time.time() + 60, time.time() + 60))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
