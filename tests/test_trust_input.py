"""Bounded input (docs/reliability.md): a snapshot on stdin stops at ``max_snapshot_bytes``
however much comes (``/dev/zero``, ``yes``); ``--snapshot FILE`` checks the size on the open
descriptor before reading and refuses FIFOs and links. Each command runs as a real process under
a memory limit, so the code that read without bound fails with MemoryError instead of taking the
machine's memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault

from conftest import run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits, /dev/zero, FIFOs")

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
MEMORY_LIMIT = 768 << 20


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _agentmem(vault: Vault, *args: str, stdin, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, **NOW}
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(vault.root), *args],
        stdin=stdin,
        capture_output=True,
        env=env,
        timeout=timeout,
        preexec_fn=_limited,
    )
    out = subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(), p.stderr.decode(errors="replace"))
    return out, time.monotonic() - t0


def _manual(vault: Vault) -> str:
    p = run_cli("register", "--manual", "--topic", "t", "--json", vault=vault, env=NOW, input=b"")
    return json.loads(p.stdout)["session_id"]


def _board(vault: Vault) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in vault.memory.rglob("*.md")}


def _refused(p: subprocess.CompletedProcess, took: float, *words: str) -> None:
    assert p.returncode != 0 and "Traceback" not in p.stderr and "MemoryError" not in p.stderr, p.stderr[-2000:]
    assert all(w in p.stderr for w in words), p.stderr
    assert took < 30, f"took {took:.0f} s"


@pytest.mark.parametrize("spec", ["-", None])
def test_dev_zero_on_stdin_stops_at_the_limit(vault: Vault, spec: str | None) -> None:
    sid = _manual(vault)
    before = _board(vault)
    args = ["update", sid, *(["--snapshot", spec] if spec else [])]
    with open("/dev/zero", "rb") as zero:
        p, took = _agentmem(vault, *args, stdin=zero)
    _refused(p, took, "1,000,000 bytes", "max_snapshot_bytes", "stopped reading")
    assert _board(vault) == before


def test_yes_on_stdin_stops_at_the_configured_limit(vault: Vault) -> None:
    sid = _manual(vault)
    vault.config_path.write_text("max_snapshot_bytes: 5000\n", encoding="utf-8")
    before = _board(vault)
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        p, took = _agentmem(vault, "update", sid, "--snapshot", "-", stdin=yes.stdout)
    finally:
        yes.kill()
        yes.wait(timeout=10)
        assert yes.stdout is not None
        yes.stdout.close()
    _refused(p, took, "5,000 bytes")
    assert _board(vault) == before


def test_a_huge_snapshot_file_is_refused_before_it_is_read(vault: Vault, tmp_path: Path) -> None:
    sid = _manual(vault)
    big = tmp_path / "big.md"
    with open(big, "wb") as fh:
        fh.truncate(3 << 30)  # 3 GB, sparse: no disk used, and far more than the memory limit
    before = _board(vault)
    p, took = _agentmem(vault, "update", sid, "--snapshot", str(big), stdin=subprocess.DEVNULL)
    _refused(p, took, "over the limit")
    assert took < 10 and _board(vault) == before


def test_snapshot_file_that_is_a_link_or_a_device_is_refused(vault: Vault, tmp_path: Path) -> None:
    sid = _manual(vault)
    real = tmp_path / "snap.md"
    real.write_text("# Session: x\n\n## Current Context\n- from a link\n", encoding="utf-8")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    before = _board(vault)
    p, took = _agentmem(vault, "update", sid, "--snapshot", str(link), stdin=subprocess.DEVNULL)
    _refused(p, took, "symbolic link")
    p, took = _agentmem(vault, "update", sid, "--snapshot", "/dev/zero", stdin=subprocess.DEVNULL)
    _refused(p, took, "not a regular file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    p, took = _agentmem(
        vault, "register", "--manual", "--topic", "t", "--snapshot", str(fifo), stdin=subprocess.DEVNULL
    )
    _refused(p, took, "not a regular file", "--snapshot -")
    assert _board(vault) == before
    ok, _ = _agentmem(vault, "update", sid, "--snapshot", str(real), stdin=subprocess.DEVNULL)
    assert ok.returncode == 0, ok.stderr
