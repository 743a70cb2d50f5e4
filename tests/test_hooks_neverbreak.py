"""A hook never breaks the chat: every failure is exit 0, no Session ID and one log line; a
session-start hook's answer then carries one line saying what is wrong (never a silent `{}`)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.locking import exclusive_lock

from hooks_helpers import (
    answer,
    failure_note,
    cache_log,
    claude_start,
    cursor_start,
    hook_env,
    hooks_log,
    id_from,
    rows,
    run_hook,
)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


def _assert_no_id(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr
    obj = answer(proc)
    assert b"Session ID" not in proc.stdout
    if "session-start" in " ".join(map(str, proc.args)):
        assert failure_note(obj), obj
    else:
        assert obj == {}


@pytest.mark.parametrize("hook", ["cursor-session-start", "claude-session-start", "codex-session-start"])
@pytest.mark.parametrize(
    "payload,status",
    [
        (b"", "bad_payload"),
        (b"   \n", "bad_payload"),
        (b"{not json", "bad_payload"),
        (b"[1, 2]", "bad_payload"),
        (b'"just a string"', "bad_payload"),
        (b"\xff\xfe\x00garbage", "bad_payload"),
    ],
)
def test_bad_stdin(vault: Vault, hook: str, payload: bytes, status: str) -> None:
    # run inside the vault so the failure is logged there
    proc = run_hook(hook, payload, cwd=vault.root)
    _assert_no_id(proc)
    assert rows(vault) == []
    log = hooks_log(vault)
    assert len(log) == 1 and f" {hook} {status}: " in log[0]


def test_missing_vault_logs_to_the_user_cache(outside: Path) -> None:
    proc = run_hook("cursor-session-start", cursor_start(outside), cwd=outside)
    _assert_no_id(proc)
    log = cache_log()
    assert len(log) == 1 and "vault_not_found" in log[0] and str(outside) in log[0]


def test_vault_env_pointing_nowhere(tmp_path: Path, outside: Path) -> None:
    proc = run_hook(
        "claude-session-start", claude_start(outside), cwd=outside, env={"AGENTMEM_VAULT": str(tmp_path / "gone")}
    )
    _assert_no_id(proc)
    assert "vault_not_found" in cache_log()[0]


def test_lock_timeout(vault: Vault, outside: Path) -> None:
    vault.config_path.write_text("lock_timeout: 0.3\n", encoding="utf-8")
    before = vault.index_path.read_bytes()
    with exclusive_lock(vault.lock_path("index"), 1.0):
        t0 = time.monotonic()
        proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=outside)
        elapsed = time.monotonic() - t0
    _assert_no_id(proc)
    assert elapsed < 45  # gave up on the lock rather than waiting for the holder (generous: loaded CI)
    assert vault.index_path.read_bytes() == before
    assert not (vault.state_dir / "conversations.jsonl").exists()
    log = hooks_log(vault)
    assert len(log) == 1 and "lock_timeout" in log[0]


def test_read_only_index(vault: Vault, outside: Path) -> None:
    before = vault.index_path.read_bytes()
    vault.index_path.chmod(0o444)
    try:
        proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=outside)
    finally:
        vault.index_path.chmod(0o644)
    _assert_no_id(proc)
    assert vault.index_path.read_bytes() == before
    log = hooks_log(vault)
    assert len(log) == 1 and "read_only" in log[0]


def test_read_only_memory_folder_logs_to_the_user_cache(vault: Vault, outside: Path) -> None:
    before = vault.index_path.read_bytes()
    # chmod -R a-w memory/ (read-only is honoured even for root)
    paths = sorted(vault.memory.rglob("*"), reverse=True) + [vault.memory]
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)
    try:
        proc = run_hook("claude-session-start", claude_start(vault.root), cwd=outside)
    finally:
        for p in reversed(paths):
            p.chmod(stat.S_IMODE(modes[p]))
    _assert_no_id(proc)
    assert vault.index_path.read_bytes() == before
    assert hooks_log(vault) == []
    log = cache_log()
    assert len(log) == 1 and "claude-session-start" in log[0]


def test_damaged_table_is_not_written(vault: Vault, outside: Path) -> None:
    with open(vault.index_path, "a", encoding="utf-8") as fh:
        fh.write("| broken row with | too few cells |\n")
    before = vault.index_path.read_bytes()
    proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=outside)
    _assert_no_id(proc)
    assert vault.index_path.read_bytes() == before
    assert "index_malformed" in hooks_log(vault)[0]


def test_unknown_hook_name(vault: Vault) -> None:
    proc = run_hook("cursor-before-everything", cursor_start(vault.root), cwd=vault.root)
    _assert_no_id(proc)
    assert "unknown hook" in hooks_log(vault)[0]


def test_bad_agentmem_now_is_logged_not_raised(vault: Vault, outside: Path) -> None:
    proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=outside, env={"AGENTMEM_NOW": "yesterday"})
    _assert_no_id(proc)
    assert "config_error" in hooks_log(vault)[0]


def test_bad_agent_name_is_logged(vault: Vault, outside: Path) -> None:
    proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=outside, args=["--agent", "../Evil"])
    _assert_no_id(proc)
    assert rows(vault) == []
    assert "usage" in hooks_log(vault)[0]


def _popen_hook(hook: str, cwd: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "agentmem_vault", "hook", hook],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )


def test_stdin_left_open_after_a_complete_payload(vault: Vault, outside: Path) -> None:
    """Claude Code has been seen not to close the hook's stdin: answer as soon as the JSON is whole."""
    p = _popen_hook("claude-session-start", outside, hook_env({"AGENTMEM_HOOK_STDIN_TIMEOUT": "30"}))
    try:
        p.stdin.write(json.dumps(claude_start(vault.root)).encode())
        p.stdin.flush()
        out = p.stdout.readline()  # would block for 30 s if the hook waited for EOF
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    assert id_from(json.loads(out)) == "2026-06-01-0930-claude-main-agent"


def test_payload_arriving_in_two_parts_on_an_open_stdin(vault: Vault, outside: Path) -> None:
    """The hook first takes what is already written without waiting, then waits for the rest:
    whichever part it finds first, the whole payload is read (the pause only sets the scene)."""
    p = _popen_hook("claude-session-start", outside, hook_env({"AGENTMEM_HOOK_STDIN_TIMEOUT": "30"}))
    payload = json.dumps(claude_start(vault.root)).encode()
    try:
        p.stdin.write(payload[:20])
        p.stdin.flush()
        time.sleep(0.3)
        p.stdin.write(payload[20:])
        p.stdin.flush()
        out = p.stdout.readline()  # stdin still open: answered on the whole object
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    assert id_from(json.loads(out)) == "2026-06-01-0930-claude-main-agent"


@pytest.mark.skipif(not Path("/dev/zero").exists() or sys.platform == "win32", reason="POSIX /dev/zero")
def test_stdin_that_never_ends_is_read_only_until_the_timeout(vault: Vault) -> None:
    """A stdin that is always ready and never ends (here /dev/zero) is read against the timeout,
    as a pipe left open is: the hook answers instead of reading until memory runs out. The child
    gets a 1 GB address-space limit so that a hook that does not stop cannot exhaust the machine."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "agentmem_vault", "hook", "cursor-session-start"],
            stdin=zero,
            capture_output=True,
            cwd=vault.root,
            env=hook_env({"AGENTMEM_HOOK_STDIN_TIMEOUT": "0.5"}),
            preexec_fn=limit,
            timeout=120,
        )
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr[-2000:]
    note = failure_note(json.loads(proc.stdout))
    assert note and ("not valid JSON" in note or "over 8,000,000 bytes" in note)
    assert rows(vault) == [] and "bad_payload" in hooks_log(vault)[0]


def test_stdin_left_open_with_a_partial_payload_times_out(vault: Vault) -> None:
    p = _popen_hook("cursor-session-start", vault.root, hook_env({"AGENTMEM_HOOK_STDIN_TIMEOUT": "0.5"}))
    t0 = time.monotonic()
    try:
        p.stdin.write(b'{"conversation_id": "abc", ')
        p.stdin.flush()
        out = p.stdout.readline()
        elapsed = time.monotonic() - t0
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    note = failure_note(json.loads(out))
    assert note and ("empty stdin" in note or "not valid JSON" in note)
    assert elapsed < 45  # did not wait for EOF (generous: loaded CI)
    assert rows(vault) == [] and "bad_payload" in hooks_log(vault)[0]


def test_log_is_capped(vault: Vault) -> None:
    log = vault.state_dir / "hooks.log"
    log.write_bytes(b"x" * 1_000_001)
    run_hook("cursor-session-start", b"", cwd=vault.root)
    assert (vault.state_dir / "hooks.log.1").stat().st_size == 1_000_001
    assert len(hooks_log(vault)) == 1


def test_windows_stdin_reader_returns_a_complete_payload_without_waiting_for_eof(monkeypatch) -> None:
    """Windows has no select() on pipes, so stdin is read in a thread. An agent that sends its JSON
    and keeps the pipe open (Claude Code may) must still get its Session ID, not '{}' after 3 s."""
    import io
    import os
    import time

    from agentmem_vault.hooks import run as hooks

    payload = json.dumps({"session_id": "c-1", "hook_event_name": "SessionStart", "cwd": "/v/我的"}).encode()
    r, w = os.pipe()
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(r, "rb")), encoding="utf-8")
    try:
        os.write(w, payload)  # and the write end stays open
        monkeypatch.setattr(sys, "platform", "win32")
        monkeypatch.setattr(sys, "stdin", stdin)
        t0 = time.monotonic()
        got = hooks.read_stdin(timeout=60.0)
        elapsed = time.monotonic() - t0
    finally:
        os.close(w)
    monkeypatch.undo()
    stdin.close()
    assert got == payload and elapsed < 50  # returned on the whole object, not at the timeout


def test_the_hooks_log_rotates(tmp_path, monkeypatch):
    from agentmem_vault.hooks import run as hooks

    monkeypatch.setattr(hooks, "LOG_MAX_BYTES", 500)
    (tmp_path / "memory").mkdir()
    for i in range(40):
        assert hooks.log_line(tmp_path, "cursor-session-start", "bad_payload", f"message {i} " + "y" * 30)
    log = tmp_path / "memory" / ".agentmem" / "hooks.log"
    old = log.with_name("hooks.log.1")
    assert old.is_file() and log.stat().st_size <= 600 and old.stat().st_size <= 600
    assert "message 39" in log.read_text(encoding="utf-8")
