"""The first hour on a fresh machine, replayed: a copy of the repository, a new virtualenv, an empty
home with only ~/.cursor, ~/.claude and ~/.codex, no AGENTMEM_* variables and a PATH holding only a
shell and python3 (so no service manager is reachable and none is touched). It runs the README's
first command exactly as written, then `agentmem setup --yes`, then a sessionStart as Cursor and
Claude Code run it, and checks the rows on the board.

Slow (it installs the package and its dependencies from the package index): marked
`fresh_machine`, deselect with `-m "not fresh_machine"`. CI runs it (.ci/run runs every test).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.fresh_machine,
    pytest.mark.skipif(sys.platform == "win32", reason="replays the POSIX README commands"),
]

REPO = Path(__file__).resolve().parent.parent
SAMPLE_ID = "2026-05-26-0900-cursor-main-agent"  # a row of sample_vault/memory/index.md
# Network and package-index settings a CI machine may need; never AGENTMEM_*.
PASS_THROUGH = (
    "PIP_",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "UV_",
)


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands on a fresh machine", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip()]


def test_ci_runs_the_readme_test_command_exactly() -> None:
    first, second = readme_commands()
    assert "python3 -m venv .venv" in first and "agentmem --vault sample_vault list" in first
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert second in ci, f".ci/run must run the README's test command as written: {second}"


def _copy_repo(dst: Path) -> None:
    """The files a clean clone has (tracked plus new, not ignored), without any .venv or caches."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
        files = [f for f in out.decode("utf-8").split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        files = []
    if not files:
        shutil.copytree(
            REPO,
            dst,
            ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis"),
        )
        return
    for f in files:
        src = REPO / f
        if src.is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)


def _clean_env(home: Path, bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith(PASS_THROUGH)}
    env.update(HOME=str(home), PATH=str(bin_dir), LANG="C.UTF-8", LC_ALL="C.UTF-8", TMPDIR=str(home.parent / "tmp"))
    assert not any(k.startswith("AGENTMEM_") for k in env)
    return env


def _bin_dir(where: Path) -> Path:
    """A PATH with a shell and python3 only (what the README's commands need)."""
    where.mkdir()
    python = getattr(sys, "_base_executable", None) or sys.executable
    for name, target in (("sh", shutil.which("sh")), ("bash", shutil.which("bash")), ("python3", python)):
        if target:
            os.symlink(target, where / name)
    return where


def _run(
    cmd: str, *, cwd: Path, env: dict, stdin: bytes | None = None, timeout: float = 900
) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["bash", "-c", cmd] if stdin is None else ["sh", "-c", cmd],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    proc.stdout = proc.stdout.decode("utf-8", "replace")  # type: ignore[assignment]
    proc.stderr = proc.stderr.decode("utf-8", "replace")  # type: ignore[assignment]
    return proc


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_readme_first_command_then_setup_yes_then_a_chat(tmp_path: Path) -> None:
    repo = tmp_path / "agentmem-vault"
    _copy_repo(repo)
    home = tmp_path / "home"
    for d in (".cursor", ".claude", ".codex"):
        (home / d).mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    env = _clean_env(home, _bin_dir(tmp_path / "bin"))

    first = readme_commands()[0]
    proc = _run(first, cwd=repo, env=env)
    assert proc.returncode == 0, f"README's first command failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert SAMPLE_ID in proc.stdout

    agentmem = repo / ".venv" / "bin" / "agentmem"
    proc = _run(f"'{agentmem}' setup --yes", cwd=home, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Ready:" in proc.stdout and "FAILED" not in proc.stdout
    vault = home / "AgentMemory"
    assert (vault / "memory" / "index.md").is_file()
    if sys.platform.startswith("linux"):
        assert list((home / ".config" / "systemd" / "user").glob("agentmem-daemon-*.service"))
        assert "systemctl --user enable --now" in proc.stdout  # no service manager here: it says how

    # A new Cursor chat, started from another folder with nothing in the environment.
    elsewhere = tmp_path / "some project"
    elsewhere.mkdir()
    cursor = json.loads((home / ".cursor" / "hooks.json").read_text(encoding="utf-8"))
    command = cursor["hooks"]["sessionStart"][0]["command"]
    assert "--vault" in command
    payload = {
        "conversation_id": "0f1e2d3c-fresh",
        "workspace_roots": [str(elsewhere)],
        "hook_event_name": "sessionStart",
        "is_background_agent": False,
    }
    proc = _run(command, cwd=elsewhere, env=env, stdin=json.dumps(payload).encode(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    cursor_id = answer["env"]["AGENTMEM_SESSION_ID"]
    assert f"Your Memory Session ID is: {cursor_id}" in answer["additional_context"]

    claude = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    command = claude["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    payload = {
        "session_id": "7a6b5c4d-fresh",
        "cwd": str(elsewhere),
        "hook_event_name": "SessionStart",
        "source": "startup",
        "transcript_path": str(elsewhere / "t.jsonl"),
    }
    proc = _run(command, cwd=elsewhere, env=env, stdin=json.dumps(payload).encode(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Your Memory Session ID is: " in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]

    # The rows, read back through the pinned vault (no --vault, no AGENTMEM_VAULT).
    proc = _run(f"'{agentmem}' list --json", cwd=elsewhere, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    rows = listed["rows"] if isinstance(listed, dict) else listed
    by_id = {r["session_id"]: r for r in rows}
    assert by_id[cursor_id]["status"] == "idle" and by_id[cursor_id]["agent_name"] == "cursor-main-agent"
    assert any(r["agent_name"] == "claude-main-agent" for r in rows)

    # Idempotent: a second run changes nothing.
    proc = _run(f"'{agentmem}' setup --yes --json", cwd=home, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["changed"] is False
