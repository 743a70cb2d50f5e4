"""Reliability: nothing hangs on a FIFO, socket or device where the vault keeps a file
(docs/reliability.md). Every command runs in a real subprocess with a generous timeout: a hang
fails the test by timing out, never by a latency assert."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import sys
import uuid
from pathlib import Path

import pytest
from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from agentmem_vault.vault import Vault

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and sockets in the file system are POSIX")

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
SID = "2026-06-01-0930-cursor-main-agent"
GENEROUS = 120


def _registered(vault: Vault) -> str:
    p = run_cli("register", "--manual", "--topic", "t", "--json", vault=vault, env=NOW, input=b"")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["session_id"]


def _make_special(path: Path, kind: str) -> object:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
        return None
    if kind == "socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(str(path))
        except OSError as exc:  # AF_UNIX paths are limited to ~108 bytes
            s.close()
            pytest.skip(f"cannot bind a unix socket here: {exc}")
        return s
    if kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless bytes
        except (PermissionError, OSError) as exc:
            pytest.skip(f"cannot create a device node: {exc}")
        return None
    raise AssertionError(kind)


def _refused(p) -> None:
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert "not a regular file" in p.stderr or "regular file" in p.stderr, p.stderr


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_special_file_at_index(vault: Vault, kind: str) -> None:
    keep = _make_special(vault.index_path, kind)
    try:
        for args in (("list",), ("register",), ("show", SID), ("organize",), ("find", "x")):
            _refused(run_cli(*args, vault=vault, env=NOW, timeout=GENEROUS))
        upd = run_cli("update", SID, "--topic", "x", vault=vault, env=NOW, input=b"", timeout=GENEROUS)
        _refused(upd)
        doc = run_cli("doctor", vault=vault, timeout=GENEROUS)
        assert "Traceback" not in doc.stderr and "regular file" in (doc.stdout + doc.stderr)
        fix = run_cli("doctor", "--fix", vault=vault, timeout=GENEROUS)
        assert "Traceback" not in fix.stderr
        assert stat.S_ISFIFO(vault.index_path.lstat().st_mode) or kind != "fifo"  # never replaced silently
        hook = _hook(vault)
        assert "Memory Session ID is" not in json.dumps(hook, ensure_ascii=False)  # no ID handed out
        log = (vault.state_dir / "hooks.log").read_text(encoding="utf-8")
        assert "regular file" in log
    finally:
        if keep is not None:
            keep.close()  # type: ignore[attr-defined]


def _hook(vault: Vault) -> dict:
    import subprocess

    p = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "hook", "cursor-session-start", "--vault", str(vault.root)],
        input=json.dumps({"conversation_id": str(uuid.uuid4()), "hook_event_name": "sessionStart"}).encode(),
        capture_output=True,
        env={**os.environ, **NOW},
        timeout=GENEROUS,
        check=False,
    )
    assert p.returncode == 0
    return json.loads(p.stdout)


def test_fifo_at_snapshot(vault: Vault) -> None:
    sid = _registered(vault)
    _make_special(vault.session_path(sid), "fifo")
    for args in (("show", sid), ("archive", sid), ("archive", sid, "--force")):
        _refused(run_cli(*args, vault=vault, env=NOW, timeout=GENEROUS))
    _refused(run_cli("update", sid, "--topic", "x", vault=vault, env=NOW, input=b"", timeout=GENEROUS))
    org = run_cli("organize", vault=vault, env=NOW, timeout=GENEROUS)
    assert "Traceback" not in org.stderr
    doc = run_cli("doctor", vault=vault, timeout=GENEROUS)
    assert "Traceback" not in doc.stderr and "regular file" in (doc.stdout + doc.stderr)
    assert run_cli("list", vault=vault, timeout=GENEROUS).returncode == 0  # the board itself is fine


@pytest.mark.parametrize("name", ["config.yaml", "journal.jsonl", "conversations.jsonl", "issued-ids.txt"])
def test_fifo_in_state_folder(vault: Vault, name: str) -> None:
    _make_special(vault.state_dir / name, "fifo")
    p = run_cli("register", vault=vault, env=NOW, timeout=GENEROUS)
    _refused(p)
    got = _hook(vault)
    if name == "config.yaml":  # a hook uses the defaults when the settings cannot be read, and logs why
        assert got != {} and "regular file" in (vault.state_dir / "hooks.log").read_text(encoding="utf-8")
    else:
        assert "Memory Session ID is" not in json.dumps(got, ensure_ascii=False)


def test_snapshot_file_argument_fifo(vault: Vault, tmp_path: Path) -> None:
    sid = _registered(vault)
    fifo = tmp_path / "incoming.md"
    os.mkfifo(fifo)
    _refused(run_cli("update", sid, "--snapshot", str(fifo), vault=vault, env=NOW, timeout=GENEROUS))


def test_daemon_skips_fifo_and_stops_on_sigterm(vault: Vault) -> None:
    from daemon_helpers import DaemonProc, read_status, wait_for

    sid = _registered(vault)
    with DaemonProc(vault, "--polling", "--rescan", "0.3") as d:
        fifo = vault.sessions_dir / "2026-06-01-0931-cursor-main-agent.md"
        os.mkfifo(fifo)
        _make_special(vault.session_path(sid), "fifo")
        ok, _ = wait_for(
            lambda: any("regular file" in json.dumps(r) for r in read_status(vault).get("reports", [])), 60.0, 0.1
        )
        assert ok, d.stderr()
        assert d.proc.poll() is None  # still running, not stuck in a read
        secs = d.stop(signal.SIGTERM)
        assert d.proc.returncode == 0, d.stderr()
    assert secs < 2.0, secs
