"""Shared fixtures: no test touches a real home, cache or vault; no test leaks threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path

import pytest
from hypothesis import settings

from agentmem_vault.vault import Vault

# Property tests draw the same examples on every run, so that CI passes or fails on the code and not
# on the draw (a new random example once failed a clean-clone run). To hunt for new failures, run
# `HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest` and turn what it finds into a fixed test.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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


def _needs_process(argv: list[str]) -> bool:
    """Hooks (their own stdin handling and fast path before click) and the daemon (it forks and
    signals) need a real process; every other command runs in-process."""
    from agentmem_vault.entry import is_hook_call

    return is_hook_call(argv) or "daemon" in argv


def run_cli(
    *args: str,
    vault: Vault | Path | None = None,
    input: str | bytes | None = None,
    env: dict | None = None,
    timeout: float = 60,
    process: bool = False,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    """Run ``agentmem ...`` and return a CompletedProcess (text stdout/stderr).

    In-process through click's test runner (fast: no interpreter start per call), except for hooks
    and the daemon, or with ``cwd`` or ``process=True`` (the per-command smoke tests in test_cli_smoke.py run
    every command once as a real `python -m agentmem_vault` process)."""
    argv = []
    if vault is not None:
        argv += ["--vault", str(vault.root if isinstance(vault, Vault) else vault)]
    argv += list(args)
    if process or cwd is not None or _needs_process(argv):
        return run_process(argv, input=input, env=env, timeout=timeout, cwd=cwd)
    from click.testing import CliRunner

    from agentmem_vault.cli import cli as cli_group

    data = input.encode("utf-8") if isinstance(input, str) else input
    result = CliRunner().invoke(cli_group, argv, input=data, env=env, prog_name="agentmem")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What the interpreter would print for an uncaught exception (tests assert there is none).
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["agentmem", *argv], result.exit_code, result.stdout, stderr)


def run_process(
    argv: list[str],
    *,
    input: str | bytes | None = None,
    env: dict | None = None,
    timeout: float = 60,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    """Run `python -m agentmem_vault ARGV` in a real subprocess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    if isinstance(input, str):
        input = input.encode("utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", *argv],
        input=input,
        capture_output=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    )


@pytest.fixture
def cli():
    return run_cli


def props_of(text: str) -> dict:
    """A file's frontmatter as loaded YAML ({} without one)."""
    from agentmem_vault.model import session_props as sp

    parts = sp.split_text(text)
    return {} if parts.frontmatter is None else sp.parse_frontmatter(parts.frontmatter).data
