"""Shared fixtures: no test touches a real home, cache or vault; no test leaks threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentmem_vault.config import Vault


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("AGENTMEM_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("AGENTMEM_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    for var in ("AGENTMEM_VAULT", "AGENTMEM_NOW", "AGENTMEM_AGENT", "ANTHROPIC_API_KEY", "AGENTMEM_SESSION_ID"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _no_thread_leaks():
    before = set(threading.enumerate())
    yield
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    if leaked:
        for t in leaked:
            t.join(timeout=2)
        leaked = [t for t in leaked if t.is_alive()]
    assert not leaked, f"test leaked threads: {leaked}"


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    """A fresh initialised vault with a CJK name and a space in its path."""
    from agentmem_vault.ops.board import init_vault

    v = Vault(tmp_path / "我的雲端硬碟 Agent")
    v.root.mkdir()
    init_vault(v)
    return v


def run_cli(*args: str, vault: Vault | Path | None = None, input: str | bytes | None = None,
            env: dict | None = None, timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run `python -m agentmem_vault ...` in a real subprocess."""
    cmd = [sys.executable, "-m", "agentmem_vault"]
    if vault is not None:
        cmd += ["--vault", str(vault.root if isinstance(vault, Vault) else vault)]
    cmd += list(args)
    full_env = dict(os.environ)
    full_env.update(env or {})
    if isinstance(input, str):
        input = input.encode("utf-8")
    proc = subprocess.run(cmd, input=input, capture_output=True, env=full_env, timeout=timeout, cwd=cwd)
    proc.stdout = proc.stdout.decode("utf-8", "replace")  # type: ignore[assignment]
    proc.stderr = proc.stderr.decode("utf-8", "replace")  # type: ignore[assignment]
    return proc


@pytest.fixture
def cli():
    return run_cli
