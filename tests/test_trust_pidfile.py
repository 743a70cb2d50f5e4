"""``daemon stop`` signals only this vault's daemon (docs/reliability.md, the trust boundary): a
pid file in the vault naming another process and this host, or a run record left by a crash
naming a reused pid, never gets an unrelated process killed. Real daemon, real victims."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from agentmem_vault.vault import Vault

from conftest import run_cli
from daemon_helpers import read_status, wait_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _victim() -> subprocess.Popen:
    """An unrelated process of the same user (it would die of SIGTERM)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])


def _forge(vault: Vault, pid: int, **extra: object) -> None:
    started = read_status(vault).get("started_at")
    text = json.dumps({"pid": pid, "host": socket.gethostname(), "started_at": started, **extra})
    pidfile_path = vault.state_dir / "daemon.pid"
    pidfile_path.write_text(text + "\n", encoding="utf-8")


def test_a_forged_pid_file_names_a_process_that_survives_daemon_stop(vault: Vault) -> None:
    victim = _victim()
    try:
        r = run_cli("daemon", "start", "--rescan", "0.5", "--json", vault=vault)
        assert r.returncode == 0, r.stderr
        daemon_pid = json.loads(r.stdout)["pid"]
        _forge(vault, victim.pid, token="0" * 32)  # a teammate's sync: another pid, this host
        st = json.loads(run_cli("daemon", "status", "--json", vault=vault).stdout)
        assert st["running"] and st["pid"] == daemon_pid  # status believes the run record, not the file
        r = run_cli("daemon", "stop", "--json", vault=vault)
        assert r.returncode == 0 and json.loads(r.stdout)["stopped"] is True, r.stdout + r.stderr
        assert json.loads(r.stdout)["pid"] == daemon_pid
        assert victim.poll() is None, "daemon stop killed a process the vault's pid file named"
        assert json.loads(run_cli("daemon", "status", "--json", vault=vault).stdout)["running"] is False
    finally:
        victim.kill()
        victim.wait(timeout=10)
        run_cli("daemon", "stop", vault=vault)


def test_a_run_record_naming_a_reused_pid_is_not_signalled(vault: Vault) -> None:
    """The run record is the user's, but a crashed daemon's record may name a pid the system gave to
    another process since: the command line decides."""
    from agentmem_vault.daemon import pidfile

    victim = _victim()
    try:
        r = run_cli("daemon", "start", "--rescan", "0.5", "--json", vault=vault)
        assert r.returncode == 0, r.stderr
        rec = pidfile.run_record_path(vault)
        data = json.loads(rec.read_text(encoding="utf-8"))
        rec.write_text(json.dumps({**data, "pid": victim.pid}), encoding="utf-8")
        _forge(vault, victim.pid, token=data["token"])
        assert pidfile.trusted_pid(vault) is None
        r = run_cli("daemon", "stop", "--json", vault=vault)  # the stop request file still stops it
        assert r.returncode == 0 and json.loads(r.stdout)["stopped"] is True, r.stdout + r.stderr
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait(timeout=10)
        run_cli("daemon", "stop", vault=vault)


def test_the_run_is_recorded_and_cleared(vault: Vault) -> None:
    from agentmem_vault.daemon import pidfile

    r = run_cli("daemon", "start", "--rescan", "0.5", "--json", vault=vault)
    assert r.returncode == 0, r.stderr
    pid = json.loads(r.stdout)["pid"]
    try:
        record = json.loads(pidfile.run_record_path(vault).read_text(encoding="utf-8"))
        in_vault = json.loads((vault.state_dir / "daemon.pid").read_text(encoding="utf-8"))
        assert pidfile.trusted_pid(vault) == pid and record["token"] == in_vault["token"]
        argv = pidfile.command_line(pid)
        assert argv is not None and pidfile.is_daemon_of(argv, vault)
        other = Vault(vault.root.parent / "another")
        other.root.mkdir()
        assert not pidfile.is_daemon_of(argv, other)
        assert not pidfile.is_daemon_of([sys.executable, "-c", "daemon run agentmem"], vault)
    finally:
        assert run_cli("daemon", "stop", vault=vault).returncode == 0
    ok, _ = wait_for(lambda: not pidfile.run_record_path(vault).exists(), 10)
    assert ok and not (vault.state_dir / "daemon.pid").exists()
