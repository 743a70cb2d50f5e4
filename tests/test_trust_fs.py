"""The one file-system rule (fs.py, docs/reliability.md) on every state file, not only the board:
regular files only, opened without following links and without blocking, sizes bounded before
reading, writes by temp file and rename, and no link out of the vault, the user cache or the user
config folder. Each case runs the real commands as processes under a deadline (a hang fails the
test), with a decoy file outside that must keep its bytes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault, user_cache_dir

from conftest import run_process
from hooks_helpers import claude_start, cursor_start, hook_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero")

DEADLINE = 30


def _run(vault: Vault, *argv: str, stdin: bytes = b"", env: dict | None = None):
    p = run_process(["--vault", str(vault.root), *argv], input=stdin, env=env, timeout=DEADLINE)
    p.stderr = p.stderr if isinstance(p.stderr, str) else p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in p.stderr, p.stderr
    return p


def _hook(name: str, payload: dict, cwd: Path, env: dict | None = None):
    import subprocess

    p = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "hook", name],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=cwd,
        env=hook_env(env),
        timeout=DEADLINE,
    )
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def _special(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.fixture
def decoy(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "victim.txt").write_text("precious\n", encoding="utf-8")
    return d


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_daemon_status_file_that_is_not_a_file(vault: Vault, kind: str) -> None:
    _special(vault.state_dir / "daemon-status.json", kind)
    p = _run(vault, "daemon", "status", "--json")
    assert json.loads(p.stdout)["running"] is False


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_config_cache_that_is_not_a_file(vault: Vault, tmp_path: Path, kind: str) -> None:
    vault.config_path.write_text("stale_days: 14\n", encoding="utf-8")
    _special(vault.state_dir / "cache" / "config.json", kind)
    for argv in (["register"], ["organize", "--dry-run"], ["doctor"], ["context", "x"], ["init"]):
        assert _run(vault, *argv).returncode in (0, 1), argv
    ans = _hook("cursor-session-start", cursor_start(vault.root), vault.root, {"AGENTMEM_VAULT": str(vault.root)})
    assert "Memory Session ID" in json.dumps(ans)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_recall_heartbeat_that_is_not_a_file(vault: Vault, kind: str) -> None:
    _special(user_cache_dir() / "daemon" / f"{vault.key}.recall-heartbeat.json", kind)
    assert _run(vault, "context", "anything").returncode == 0


def test_recall_folder_linked_out_of_the_vault_gets_nothing(vault: Vault, decoy: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.md"
    chat.write_text("User: From now on always use pnpm instead of npm.\n\nAssistant: OK.\n", encoding="utf-8")
    assert _run(vault, "extract", "--offline", "--file", str(chat)).returncode == 0
    recall = vault.state_dir / "recall"
    if recall.exists():
        import shutil

        shutil.rmtree(recall)
    target = decoy / "recall"
    target.mkdir()
    recall.symlink_to(target)
    for argv in (["reindex"], ["context", "pnpm"], ["memories", "search", "pnpm"]):
        assert _run(vault, *argv).returncode == 0, argv
    assert list(target.iterdir()) == []  # no index (every note's text) written out of the vault


def test_index_lock_linked_to_another_file_is_not_truncated(vault: Vault, decoy: Path) -> None:
    lock = vault.lock_path("index")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.unlink(missing_ok=True)
    lock.symlink_to(decoy / "victim.txt")
    p = _run(vault, "register")
    assert p.returncode == 1 and "resolves outside the user cache folder" in p.stderr
    assert (decoy / "victim.txt").read_text(encoding="utf-8") == "precious\n"


def test_daemon_lock_and_log_linked_to_another_file_are_not_truncated(vault: Vault, decoy: Path) -> None:
    cache = user_cache_dir()
    (cache / "locks").mkdir(parents=True, exist_ok=True)
    (cache / "daemon").mkdir(parents=True, exist_ok=True)
    (cache / "daemon" / f"{vault.key}.stderr.log").symlink_to(decoy / "victim.txt")
    p = _run(vault, "daemon", "start", "--rescan", "0.5", "--json")
    try:
        assert p.returncode == 0, p.stderr
    finally:
        assert _run(vault, "daemon", "stop").returncode == 0
    assert (decoy / "victim.txt").read_text(encoding="utf-8") == "precious\n"
    lock = cache / "locks" / f"{vault.key}-daemon.lock"
    lock.unlink()
    lock.symlink_to(decoy / "victim.txt")
    for argv in (["daemon", "status"], ["daemon", "start"]):
        p = _run(vault, *argv)
        assert p.returncode == 1 and "resolves outside the user cache folder" in p.stderr, argv
    assert (decoy / "victim.txt").read_text(encoding="utf-8") == "precious\n"


def test_obsidian_types_linked_out_of_the_vault_is_not_written(vault: Vault, decoy: Path) -> None:
    victim = decoy / "victim.json"
    victim.write_text("{}\n", encoding="utf-8")
    obsidian = vault.root / ".obsidian"
    obsidian.mkdir(exist_ok=True)
    (obsidian / "types.json").unlink(missing_ok=True)
    (obsidian / "types.json").symlink_to(victim)
    p = _run(vault, "init")
    out = p.stdout if isinstance(p.stdout, str) else p.stdout.decode()
    assert p.returncode == 0 and "warning:" in out and "types.json" in out and "outside the vault" in out, out
    assert victim.read_text(encoding="utf-8") == "{}\n"  # was: 26 property types merged into it


def test_workspace_git_config_fifo_does_not_hang_the_hook(vault: Vault, tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    os.mkfifo(ws / ".git" / "config")
    env = {"AGENTMEM_VAULT": str(vault.root)}
    ans = _hook("cursor-session-start", cursor_start(ws), ws, env)
    assert "Memory Session ID" in json.dumps(ans)


def test_claude_env_file_fifo_does_not_hang_the_hook(vault: Vault, tmp_path: Path) -> None:
    fifo = tmp_path / "claude-env"
    os.mkfifo(fifo)
    env = {"AGENTMEM_VAULT": str(vault.root), "CLAUDE_ENV_FILE": str(fifo)}
    ans = _hook("claude-session-start", claude_start(tmp_path), tmp_path, env)
    assert "Memory Session ID" in json.dumps(ans)


def _memory_limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))


def test_a_huge_board_is_refused_on_its_size(vault: Vault) -> None:
    import subprocess

    with open(vault.index_path, "r+b") as fh:
        fh.truncate(3 << 30)  # sparse: 3 GB that no command may read into memory
    p = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(vault.root), "list"],
        capture_output=True,
        timeout=DEADLINE,
        preexec_fn=_memory_limited,  # the code that read it whole fails with MemoryError, not by swapping
    )
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 1 and "Traceback" not in err and "limit" in err, err[-2000:]


def test_prompt_override_linked_out_of_the_vault_is_not_sent(vault: Vault, decoy: Path, tmp_path: Path) -> None:
    from agentmem_vault.errors import LLMError
    from agentmem_vault.longterm.llm import load_prompt

    d = vault.state_dir / "prompts"
    d.mkdir(parents=True)
    (decoy / "secret.md").write_text("the user's private notes", encoding="utf-8")
    (d / "extract_system.md").symlink_to(decoy / "secret.md")
    with pytest.raises(LLMError, match="outside the vault"):
        load_prompt("extract_system.md", d)


def test_user_config_linked_by_a_dotfile_manager_is_read(vault: Vault, tmp_path: Path) -> None:
    """home-manager and stow link ~/.config/agentmem/config.yaml to a file elsewhere: the user's
    own file, which no vault can write, so it is read through the link (the cache's links are not)."""
    from agentmem_vault.vault import user_config_dir

    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "agentmem.yaml").write_text(f"vault: {vault.root}\n", encoding="utf-8")
    user_config_dir().mkdir(parents=True, exist_ok=True)
    (user_config_dir() / "config.yaml").symlink_to(dotfiles / "agentmem.yaml")
    p = run_process(["list", "--json"], timeout=DEADLINE, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
