"""Session-end hooks queue the transcript for long-term extraction; they never block or break."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.ops.conversations import extract_queue_path

from hooks_helpers import answer, claude_start, cursor_end, cursor_start, hooks_log, id_from, read_queue, run_hook

QUEUE_KEYS = {"kind", "path", "session_id", "conversation_id", "agent", "time"}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


@pytest.mark.parametrize("event,hook", [("sessionEnd", "cursor-session-end"), ("stop", "cursor-stop")])
def test_cursor_end_queues_the_transcript_with_the_session_id(
    vault: Vault, outside: Path, event: str, hook: str
) -> None:
    sid = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="c-1"), cwd=outside)))
    transcript = str(Path.home() / ".cursor" / "projects" / "我的 proj" / "agent-transcripts" / "c-1" / "c-1.jsonl")
    proc = run_hook(hook, cursor_end(vault.root, "c-1", transcript, event), cwd=outside)
    assert proc.returncode == 0 and answer(proc) == {}
    lines = extract_queue_path(vault).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    item = json.loads(lines[0])
    assert set(item) == QUEUE_KEYS
    assert item == {
        "kind": "transcript",
        "path": transcript,
        "session_id": sid,
        "conversation_id": "c-1",
        "agent": "cursor",
        "time": "2026-06-01T09:30:00",
    }
    assert hooks_log(vault) == []


def test_claude_session_end_and_codex_stop(vault: Vault, outside: Path) -> None:
    sid = id_from(answer(run_hook("claude-session-start", claude_start(vault.root, sid="S9"), cwd=outside)))
    end = {**claude_start(vault.root, sid="S9"), "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    del end["source"]
    assert answer(run_hook("claude-session-end", end, cwd=outside)) == {}
    codex = {
        "session_id": "X1",
        "transcript_path": "~/.codex/sessions/2026/06/01/rollout-X1.jsonl",
        "cwd": str(vault.root),
        "hook_event_name": "Stop",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "stop_hook_active": False,
        "last_assistant_message": "done",
    }
    assert answer(run_hook("codex-stop", codex, cwd=outside)) == {}
    q = read_queue(vault)
    assert [(i["agent"], i["session_id"], i["conversation_id"]) for i in q] == [
        ("claude", sid, "S9"),
        ("codex", None, "X1"),
    ]
    assert q[1]["path"] == str(Path.home() / ".codex/sessions/2026/06/01/rollout-X1.jsonl")  # ~ expanded


def test_end_without_transcript_is_logged_not_queued(vault: Vault, outside: Path) -> None:
    p = cursor_end(vault.root, "c-2", None)
    proc = run_hook("cursor-session-end", p, cwd=outside)
    assert proc.returncode == 0 and answer(proc) == {}
    assert not extract_queue_path(vault).exists()
    assert "transcript_path" in hooks_log(vault)[0]


def test_end_with_bad_stdin(vault: Vault) -> None:
    proc = run_hook("claude-session-end", b"\x00\x01", cwd=vault.root)
    assert proc.returncode == 0 and answer(proc) == {}
    assert len(hooks_log(vault)) == 1


def test_queue_lock_timeout_never_blocks(vault: Vault, outside: Path) -> None:
    from agentmem_vault.locking import exclusive_lock

    vault.config_path.write_text("lock_timeout: 0.2\n", encoding="utf-8")
    with exclusive_lock(vault.lock_path("extract-queue"), 1.0):
        proc = run_hook(
            "cursor-session-end",
            cursor_end(vault.root, "c-3", str(Path.home() / ".cursor/projects/p/agent-transcripts/t.jsonl")),
            cwd=outside,
        )
    assert proc.returncode == 0 and answer(proc) == {}
    assert not extract_queue_path(vault).exists()
    assert "lock_timeout" in hooks_log(vault)[0]


def test_daemon_queue_reader_accepts_our_lines(vault: Vault, outside: Path) -> None:
    """The daemon's queue (agentmem_vault.daemon.queue) identifies our items by kind and path."""
    queue = pytest.importorskip("agentmem_vault.daemon.queue")
    t = str(Path.home() / ".cursor/projects/a b/agent-transcripts/t.jsonl")
    run_hook("cursor-session-end", cursor_end(vault.root, "c-4", t), cwd=outside)
    item = read_queue(vault)[0]
    assert queue.queue_key(item) == f"transcript:{t}"


# -- which transcript paths a session-end hook may queue --------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "../../../etc/shadow",
        "/etc/shadow",
        "/dev/zero",
        "relative/t.jsonl",
        "{home}/.cursor/projects/p/agent-transcripts/../../../../../etc/passwd",
        "{home}/.claude/projects/p/t.jsonl",  # Claude's folder is not Cursor's
        "{home}/.cursor/projects/p/agent-transcripts/fifo.jsonl",
    ],
)
def test_session_end_queues_only_the_agents_transcripts(vault: Vault, outside: Path, bad: str) -> None:
    home = Path.home()
    fifo = home / ".cursor" / "projects" / "p" / "agent-transcripts" / "fifo.jsonl"
    fifo.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform != "win32" and not fifo.exists():
        os.mkfifo(fifo)
    proc = run_hook("cursor-session-end", cursor_end(vault.root, "c-9", bad.format(home=home)), cwd=outside)
    assert proc.returncode == 0 and answer(proc) == {}
    assert not extract_queue_path(vault).exists()
    assert "not queued" in hooks_log(vault)[0]


def test_session_end_accepts_the_agents_own_folder_and_configured_dirs(
    vault: Vault, outside: Path, tmp_path: Path
) -> None:
    own = Path.home() / ".cursor" / "projects" / "p" / "agent-transcripts" / "c" / "c.jsonl"
    own.parent.mkdir(parents=True)
    own.write_text("{}\n", encoding="utf-8")
    extra = tmp_path / "my transcripts"
    extra.mkdir()
    (extra / "t.jsonl").write_text("{}\n", encoding="utf-8")
    vault.config_path.write_text(f"transcript_dirs: [{json.dumps(str(extra))}]\n", encoding="utf-8")
    for path in (own, extra / "t.jsonl"):
        proc = run_hook("cursor-session-end", cursor_end(vault.root, "c-9", str(path)), cwd=outside)
        assert proc.returncode == 0 and answer(proc) == {}
    q = [json.loads(x)["path"] for x in extract_queue_path(vault).read_text(encoding="utf-8").splitlines()]
    assert q == [str(own), str(extra / "t.jsonl")]
    assert stat.S_ISREG(own.stat().st_mode)
