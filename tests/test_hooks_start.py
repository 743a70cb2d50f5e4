"""sessionStart hooks fed real payloads in real subprocesses: one verified row each, valid JSON out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentmem_vault
from agentmem_vault.vault import Vault
from agentmem_vault.ops.conversations import find_pair
from agentmem_vault.board.rules import DEFAULT_KEYWORDS, DEFAULT_SUMMARY, DEFAULT_TOPIC
from agentmem_vault.board.store import BoardWriter

from hooks_helpers import (
    answer,
    claude_start,
    codex_start,
    context_of,
    cursor_cli_start,
    cursor_start,
    hook_env,
    hooks_log,
    id_from,
    iter_pairs,
    rows,
    run_hook,
)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A current folder that is not inside the vault: the vault must come from the payload."""
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


CASES = [
    ("cursor-session-start", lambda v: cursor_start(v.root), "cursor-main-agent"),
    ("cursor-session-start", lambda v: cursor_cli_start(v.root), "cursor-main-agent"),
    (
        "cursor-session-start",
        lambda v: {**cursor_start(v.root), "brand_new_field": {"x": [1, 2]}, "attachments": []},
        "cursor-main-agent",
    ),
    ("cursor-session-start", lambda v: cursor_start(v.root / "memory" / "sessions"), "cursor-main-agent"),  # walk up
    ("claude-session-start", lambda v: claude_start(v.root), "claude-main-agent"),
    (
        "claude-session-start",
        lambda v: claude_start(v.root, model="claude-opus-4-5", agent_type="main"),
        "claude-main-agent",
    ),
    (
        "claude-session-start",
        lambda v: {"session_id": "abc", "cwd": str(v.root), "hook_event_name": "SessionStart"},
        "claude-main-agent",
    ),
    ("codex-session-start", lambda v: codex_start(v.root), "codex-main-agent"),
]


@pytest.mark.parametrize("hook,make,agent", CASES)
def test_real_payload_registers_exactly_one_row(vault: Vault, outside: Path, hook: str, make, agent: str) -> None:
    before = rows(vault)
    proc = run_hook(hook, make(vault), cwd=outside)
    assert proc.returncode == 0, proc.stderr
    obj = answer(proc)
    sid = id_from(obj)
    after = rows(vault)
    assert len(after) == len(before) + 1
    row = after[-1]
    assert row.session_id == sid == f"2026-06-01-0930-{agent}"
    assert (row.agent_name, row.topic, row.summary, row.keywords, row.status, row.referenced_by) == (
        agent,
        DEFAULT_TOPIC,
        DEFAULT_SUMMARY,
        DEFAULT_KEYWORDS,
        "idle",
        "-",
    )
    assert row.started_at == row.updated_at == "2026-06-01 09:30"
    assert not (vault.sessions_dir / f"{sid}.md").exists()  # SessionStart creates an index row only
    if hook.startswith("cursor"):
        assert obj["env"] == {"AGENTMEM_SESSION_ID": sid}
    else:
        assert set(obj) == {"hookSpecificOutput"}
    assert str(vault.root) in context_of(obj)
    assert hooks_log(vault) == []


def test_pair_is_recorded_and_whoami_finds_it(vault: Vault, outside: Path, cli) -> None:
    sid = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="conv-一"), cwd=outside)))
    pair = find_pair(vault, "conv-一")
    assert pair is not None and pair["session_id"] == sid and pair["agent"] == "cursor"
    r = cli("whoami", "--conversation", "conv-一", "--json", vault=vault)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["session_id"] == sid
    assert json.loads(r.stdout)["on_board"] is True
    r = cli("whoami", vault=vault, env={"AGENTMEM_SESSION_ID": sid})
    assert r.stdout.strip() == f"Your Memory Session ID is: {sid}"
    r = cli("whoami", vault=vault, env={"CLAUDE_CODE_SESSION_ID": "conv-一"})
    assert r.stdout.strip() == f"Your Memory Session ID is: {sid}"
    r = cli("whoami", "--conversation", "never-seen", "--json", vault=vault)
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "session_not_found"
    r = cli("whoami", vault=vault)
    assert r.returncode == 2


def test_claude_resume_and_compact_keep_the_session_id(vault: Vault, outside: Path) -> None:
    first = id_from(answer(run_hook("claude-session-start", claude_start(vault.root, sid="S1"), cwd=outside)))
    n = len(rows(vault))
    for source in ("resume", "compact"):
        obj = answer(
            run_hook(
                "claude-session-start",
                claude_start(vault.root, sid="S1", source=source),
                cwd=outside,
                env={"AGENTMEM_NOW": "2026-06-02T10:00"},
            )
        )
        assert id_from(obj) == first
        assert "already registered" in context_of(obj)
    assert len(rows(vault)) == n
    assert len([p for p in iter_pairs(vault) if p["conversation_id"] == "S1"]) == 1
    # A different Claude session (e.g. after /clear) is a new chat.
    other = id_from(
        answer(run_hook("claude-session-start", claude_start(vault.root, sid="S2", source="clear"), cwd=outside))
    )
    assert other != first and len(rows(vault)) == n + 1


def test_resume_after_the_row_was_organized_away_registers_anew(vault: Vault, outside: Path, cli) -> None:
    first = id_from(answer(run_hook("claude-session-start", claude_start(vault.root, sid="S1"), cwd=outside)))
    with BoardWriter(vault, "test") as w:
        w.remove_row(first)
    second = id_from(
        answer(run_hook("claude-session-start", claude_start(vault.root, sid="S1", source="resume"), cwd=outside))
    )
    assert second != first  # never reuse an ID
    assert [r.session_id for r in rows(vault)] == [second]
    r = cli("whoami", "--conversation", "S1", vault=vault)
    assert r.stdout.strip() == f"Your Memory Session ID is: {second}"


def test_same_cursor_conversation_twice_gets_one_row(vault: Vault, outside: Path) -> None:
    a = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="C"), cwd=outside)))
    b = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="C"), cwd=outside)))
    assert a == b and len(rows(vault)) == 1


def test_background_agent_uses_its_own_name(vault: Vault, outside: Path) -> None:
    obj = answer(
        run_hook(
            "cursor-session-start",
            cursor_start(vault.root, is_background_agent=True, composer_mode="background"),
            cwd=outside,
        )
    )
    assert id_from(obj) == "2026-06-01-0930-cursor-background-agent"


def test_agent_name_from_option_env_and_config(vault: Vault, outside: Path) -> None:
    sid = id_from(
        answer(
            run_hook(
                "cursor-session-start", cursor_start(vault.root, conv="a"), cwd=outside, args=["--agent", "my-agent"]
            )
        )
    )
    assert sid == "2026-06-01-0930-my-agent"
    sid = id_from(
        answer(
            run_hook(
                "claude-session-start",
                claude_start(vault.root, sid="b"),
                cwd=outside,
                env={"AGENTMEM_AGENT": "env-agent"},
            )
        )
    )
    assert sid == "2026-06-01-0930-env-agent"
    vault.config_path.write_text(
        "agent_name: cfg-cursor-agent\nclaude_agent_name: cfg-claude-agent\n", encoding="utf-8"
    )
    assert (
        id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="c"), cwd=outside)))
        == "2026-06-01-0930-cfg-cursor-agent"
    )
    assert (
        id_from(answer(run_hook("claude-session-start", claude_start(vault.root, sid="d"), cwd=outside)))
        == "2026-06-01-0930-cfg-claude-agent"
    )


def test_vault_resolution_order(vault: Vault, tmp_path: Path, outside: Path) -> None:
    from agentmem_vault.ops.board import init_vault

    other = Vault(tmp_path / "other vault 二")
    other.root.mkdir()
    init_vault(other)
    # --vault beats the payload's workspace
    run_hook("cursor-session-start", cursor_start(vault.root, conv="1"), cwd=outside, args=["--vault", str(other.root)])
    assert len(rows(other)) == 1 and len(rows(vault)) == 0
    # AGENTMEM_VAULT beats the payload
    run_hook(
        "cursor-session-start", cursor_start(vault.root, conv="2"), cwd=outside, env={"AGENTMEM_VAULT": str(other.root)}
    )
    assert len(rows(other)) == 2
    # first workspace root that is inside a vault wins; roots outside any vault are skipped
    p = cursor_start(outside, conv="3")
    p["workspace_roots"] = [str(outside), str(vault.root)]
    run_hook("cursor-session-start", p, cwd=outside)
    assert len(rows(vault)) == 1
    # no roots at all: CURSOR_PROJECT_DIR, then the current folder
    p = cursor_cli_start(outside, conv="4")
    del p["workspace_roots"]
    run_hook("cursor-session-start", p, cwd=outside, env={"CURSOR_PROJECT_DIR": str(vault.root)})
    run_hook("cursor-session-start", {**p, "conversation_id": "5"}, cwd=vault.root / "memory")
    assert len(rows(vault)) == 3
    # Windows-style URI root from Cursor ("/c:/...") is not mistaken on POSIX for a vault elsewhere
    p = cursor_start(vault.root, conv="6")
    p["workspace_roots"] = ["/c:/Users/nobody/proj", str(vault.root)]
    assert answer(run_hook("cursor-session-start", p, cwd=outside))
    assert len(rows(vault)) == 4


def test_claude_env_file_gets_the_session_id(vault: Vault, outside: Path, tmp_path: Path) -> None:
    env_file = tmp_path / "session-env" / "sessionstart-hook-0.sh"
    env_file.parent.mkdir()
    sid = id_from(
        answer(
            run_hook(
                "claude-session-start", claude_start(vault.root), cwd=outside, env={"CLAUDE_ENV_FILE": str(env_file)}
            )
        )
    )
    assert env_file.read_text(encoding="utf-8") == f"export AGENTMEM_SESSION_ID={sid}\n"


def test_global_options_before_hook_also_take_the_fast_path(vault: Vault, outside: Path) -> None:
    data = json.dumps(cursor_start(outside, conv="g")).encode()
    proc = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(vault.root), "hook", "cursor-session-start"],
        input=data,
        capture_output=True,
        cwd=outside,
        env=hook_env(),
    )
    assert id_from(answer(proc)) == "2026-06-01-0930-cursor-main-agent"


def test_recall_context_is_appended_when_available(vault: Vault, outside: Path, tmp_path: Path) -> None:
    """A recall module that answers is appended after the ID; one that raises is skipped."""
    shim = tmp_path / "shim"
    (shim / "agentmem_vault").mkdir(parents=True)
    # sitecustomize makes `agentmem_vault.recall` importable as a stub without touching the package.
    (shim / "sitecustomize.py").write_text(
        "import sys, types, os\n"
        "m = types.ModuleType('agentmem_vault.recall')\n"
        # still the package (its other modules, such as the board writer's recall/refresh.py, load)
        f"m.__path__ = [{str(Path(agentmem_vault.__file__).parent / 'recall')!r}]\n"
        "def session_start_context(vault, budget=0, exclude=(), doc=None, **kw):\n"
        "    if os.environ.get('RECALL_FAIL'): raise RuntimeError('boom')\n"
        "    return '## Long-term memories\\n- remember the milk (budget %d)' % budget\n"
        "m.session_start_context = session_start_context\n"
        "sys.modules['agentmem_vault.recall'] = m\n",
        encoding="utf-8",
    )
    env = {"PYTHONPATH": str(shim) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    ctx = context_of(
        answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="r1"), cwd=outside, env=env))
    )
    assert ctx.startswith("Your Memory Session ID is: ")
    assert ctx.rstrip().endswith("- remember the milk (budget 1500)")
    ctx = context_of(
        answer(
            run_hook(
                "cursor-session-start",
                cursor_start(vault.root, conv="r2"),
                cwd=outside,
                env={**env, "RECALL_FAIL": "1"},
            )
        )
    )
    assert ctx.startswith("Your Memory Session ID is: ") and "milk" not in ctx
    assert len(rows(vault)) == 2


def test_twenty_chats_in_the_same_second(vault: Vault, outside: Path, tmp_path: Path) -> None:
    # No timing on a loaded machine: each hook gets its whole payload as a file on stdin (ready at
    # once, not fed one pipe after another while the others wait), and the lock waits generously.
    env = hook_env({"AGENTMEM_NOW": "2026-06-01T09:30", "AGENTMEM_HOOK_STDIN_TIMEOUT": "120"})
    vault.config_path.parent.mkdir(parents=True, exist_ok=True)
    vault.config_path.write_text("lock_timeout: 120\nhook_lock_timeout: 120\n", encoding="utf-8")
    procs = []
    for i in range(20):
        payload = (
            cursor_start(vault.root, conv=f"conv-{i:02d}") if i % 2 else claude_start(vault.root, sid=f"conv-{i:02d}")
        )
        hook = "cursor-session-start" if i % 2 else "claude-session-start"
        stdin = tmp_path / f"payload-{i:02d}.json"
        stdin.write_text(json.dumps(payload), encoding="utf-8")
        with stdin.open("rb") as fh:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "agentmem_vault", "hook", hook],
                    stdin=fh,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=outside,
                    env=env,
                )
            )
    printed = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        printed.append(id_from(json.loads(out)))
    board = [r.session_id for r in rows(vault)]
    assert len(board) == 20 and len(set(board)) == 20
    assert len(set(printed)) == 20 and set(printed) == set(board)
    pairs = {p["conversation_id"]: p["session_id"] for p in iter_pairs(vault)}
    assert len(pairs) == 20 and set(pairs.values()) == set(board)
    assert hooks_log(vault) == []
