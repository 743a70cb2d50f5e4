"""The daemon stops within 2 s of SIGTERM whatever it is doing (docs/daemon.md): here, in the
middle of its first reconcile pass over 1,500 snapshots without rows (a pass of tens of seconds),
and the vault it leaves is consistent: every file whole, the board readable, no temporary files."""

from __future__ import annotations

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


def test_sigterm_in_the_middle_of_a_long_pass_stops_within_two_seconds(vault: Vault) -> None:
    n = 1500
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
    try:
        # In the pass: it has started adding the snapshots' rows, and is far from done.
        busy, _ = wait_for(lambda: vault.index_path.read_bytes() != before or proc.poll() is not None, 120, 0.02)
        assert busy and proc.poll() is None, (vault.root.parent / "daemon.stderr").read_text()
        rows_then = len(it.parse_index(vault.index_path.read_text(encoding="utf-8")).ids())
        assert rows_then < n  # still working
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
    doc = it.parse_index(vault.index_path.read_text(encoding="utf-8"))
    assert not doc.bad and not doc.duplicate_ids() and len(doc.ids()) < n
    assert not [p for p in vault.memory.rglob("*") if p.name.endswith(".agentmem-tmp")]
    for i in range(n):
        assert vault.session_path(sid(i)).read_text(encoding="utf-8").startswith(f"# Session: {sid(i)}") or (
            vault.session_path(sid(i)).read_text(encoding="utf-8").startswith("---")
        )
