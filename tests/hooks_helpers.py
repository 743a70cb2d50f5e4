"""Real hook payloads and a runner that feeds them to a real `agentmem hook ...` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentmem_vault.board import table as it
from agentmem_vault.fs import read_bytes
from agentmem_vault.ops.conversations import _json_lines, conversations_path, extract_queue_path
from agentmem_vault.vault import Vault

NOW = "2026-06-01T09:30"


def cursor_start(root: Path | str, conv: str = "3f2b6c1e-8d4a-4e0b-9c7f-0a1b2c3d4e5f", **extra) -> dict:
    """Cursor IDE sessionStart: every documented field."""
    p = {
        "conversation_id": conv,
        "generation_id": "9d1e0f4a-1111-4c2b-8a55-6e7f8a9b0c1d",
        "model": "claude-4.5-sonnet",
        "hook_event_name": "sessionStart",
        "cursor_version": "2.1.32",
        "workspace_roots": [str(root)],
        "user_email": "dev@example.com",
        "transcript_path": None,
        "session_id": conv,
        "is_background_agent": False,
        "composer_mode": "agent",
    }
    p.update(extra)
    return p


def cursor_cli_start(root: Path | str, conv: str = "cli-7a8b9c") -> dict:
    """cursor-agent (CLI): fewer optional fields."""
    return {
        "conversation_id": conv,
        "hook_event_name": "sessionStart",
        "workspace_roots": [str(root)],
        "session_id": conv,
    }


def cursor_end(root: Path | str, conv: str, transcript: str, event: str = "sessionEnd") -> dict:
    p = {
        "conversation_id": conv,
        "generation_id": "g-1",
        "model": "gpt-5",
        "hook_event_name": event,
        "cursor_version": "2.1.32",
        "workspace_roots": [str(root)],
        "user_email": None,
        "transcript_path": transcript,
    }
    if event == "sessionEnd":
        p.update(
            {
                "session_id": conv,
                "reason": "user_close",
                "duration_ms": 123456,
                "is_background_agent": False,
                "final_status": "completed",
            }
        )
    else:
        p.update({"status": "completed", "loop_count": 0})
    return p


def claude_start(
    cwd: Path | str, sid: str = "00893aaf-19fa-41d2-8238-13269b9b3ca0", source: str = "startup", **extra
) -> dict:
    p = {
        "session_id": sid,
        "transcript_path": str(Path.home() / ".claude" / "projects" / "-work-app" / f"{sid}.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "SessionStart",
        "source": source,
    }
    p.update(extra)
    return p


def codex_start(cwd: Path | str, sid: str = "0199a213-81c0-7800-8aa1-bbab2a035a53", source: str = "startup") -> dict:
    return {
        "session_id": sid,
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "source": source,
    }


def hook_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env.setdefault("AGENTMEM_NOW", NOW)
    env["AGENTMEM_HOOK_STDIN_TIMEOUT"] = env.get("AGENTMEM_HOOK_STDIN_TIMEOUT", "3")
    for k in ("AGENTMEM_VAULT", "CURSOR_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "AGENTMEM_SESSION_ID"):
        env.pop(k, None)
    env.update(extra or {})
    return env


def run_hook(
    name: str,
    payload: dict | str | bytes | None,
    *,
    cwd: Path,
    args: list[str] = (),
    env: dict | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess:
    """``python -m agentmem_vault hook NAME`` with ``payload`` on stdin, run from ``cwd``."""
    if isinstance(payload, dict):
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    elif isinstance(payload, str):
        data = payload.encode("utf-8")
    else:
        data = payload or b""
    proc = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "hook", name, *args],
        input=data,
        capture_output=True,
        cwd=str(cwd),
        env=hook_env(env),
        timeout=timeout,
    )
    return proc


def answer(proc: subprocess.CompletedProcess) -> dict:
    """The hook's stdout must be exactly one JSON object (and ASCII only)."""
    out = proc.stdout.decode("ascii")
    assert out.endswith("\n") and out.count("\n") == 1, out
    obj = json.loads(out)
    assert isinstance(obj, dict)
    return obj


def context_of(obj: dict) -> str | None:
    if "additional_context" in obj:
        return obj["additional_context"]
    hso = obj.get("hookSpecificOutput")
    if hso:
        assert hso["hookEventName"] == "SessionStart"
        return hso["additionalContext"]
    return None


def id_from(obj: dict) -> str:
    ctx = context_of(obj)
    assert ctx, obj
    first = ctx.splitlines()[0]
    assert first.startswith("Your Memory Session ID is: "), first
    return first.split(": ", 1)[1]


def rows(vault: Vault) -> list[it.Row]:
    return it.parse_index(vault.index_path.read_text(encoding="utf-8")).row_list()


def hooks_log(vault: Vault) -> list[str]:
    p = vault.state_dir / "hooks.log"
    return p.read_text(encoding="utf-8").splitlines() if p.exists() else []


def cache_log() -> list[str]:
    p = Path(os.environ["AGENTMEM_CACHE_DIR"]) / "hooks.log"
    return p.read_text(encoding="utf-8").splitlines() if p.exists() else []


def failure_note(obj: dict) -> str | None:
    """The one line a failed session-start hook shows (Cursor: additional_context; Claude Code and
    Codex: systemMessage, repeated as additionalContext); None for a plain ``{}``."""
    if not obj:
        return None
    line = obj.get("additional_context") or obj.get("systemMessage")
    assert isinstance(line, str) and "\n" not in line and "Session ID" not in line, obj
    assert line.startswith("Agent Memory (agentmem) is not working in this chat: "), line
    if "systemMessage" in obj:
        assert obj["hookSpecificOutput"] == {"hookEventName": "SessionStart", "additionalContext": line}
    else:
        assert set(obj) == {"additional_context"}, obj
    return line


# A rule note (importance >= 0.9) as Obsidian would hold it: session start always shows it.
RULE = """---
id: lt-abc123
title: 回答語言
category: user_communication
keywords: [繁體中文]
importance: 0.95
score: 5
status: active
updated: 2026-11-29T15:20
---
以後回答一律用繁體中文，程式碼註解維持英文。
"""


def iter_pairs(vault: Vault) -> list[dict]:
    """The readable Conversation ID <-> Session ID pairs, oldest first (damaged lines skipped)."""
    pairs = _json_lines(read_bytes(conversations_path(vault)))
    return [p for p in pairs if isinstance(p.get("conversation_id"), str) and isinstance(p.get("session_id"), str)]


def read_queue(vault: Vault) -> list[dict]:
    """The readable extraction-queue entries, oldest first."""
    return [obj for obj in _json_lines(read_bytes(extract_queue_path(vault))) if obj.get("kind") == "transcript"]
