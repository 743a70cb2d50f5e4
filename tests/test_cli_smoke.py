"""One real `python -m agentmem_vault` process per command (and memories sub-command).

Every other CLI test runs the commands in-process (conftest.run_cli) for speed; these make sure
the console entry, lazy command loading and exit codes work in a real interpreter. The commands run
in order on one vault, each on the state the previous ones left."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_process

from agentmem_vault.vault import Vault

SNAP = "## Current Context\nSmoke test of every command.\n\n## Decisions\n- keep one smoke test per command\n"


def test_every_command_runs_in_a_real_process(vault: Vault, tmp_path: Path) -> None:
    v = ["--vault", str(vault.root)]
    env = {"AGENTMEM_NOW": "2026-06-01T09:30"}
    ran: list[str] = []

    def run(*args: str, code: int = 0, input: str | None = None) -> str:
        p = run_process([*v, *args], input=input, env=env)
        assert p.returncode == code, (args, p.returncode, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr, p.stderr
        ran.append(args[0] if args[0] != "memories" else f"memories {args[1]}")
        return p.stdout

    run("init")
    idle = json.loads(run("register", "--json"))["session_id"]
    manual = json.loads(run("register", "--manual", "--json", "--snapshot", "-", input=SNAP))["session_id"]
    assert idle in run("list")
    assert manual in run("show", manual)
    run("find", "smoke")
    run("update", idle, "--snapshot", "-", input=SNAP)
    run("continue", manual, "--session", idle)
    run("release", manual, "--session", idle)
    run("organize", "--dry-run")
    run("archive", idle, "--dry-run")
    run("say", "整理 memory", "--dry-run")
    run("doctor")
    run("journal")
    run("restore", "2026-01-01-0000-nobody", code=1)  # nothing to restore: a clear refusal
    run("whoami", "--conversation", "no-such-chat", code=1)
    run("extract", "--offline", "--dry-run")
    run("reindex")
    run("context", "smoke test")
    run("injected", idle)  # what that chat was given (nothing recorded for it here)
    run("memories", "list")
    run("memories", "search", "smoke")
    run("memories", "show", "no-such-note", code=1)
    run("memories", "deprecate", "no-such-note", "--reason", "x", code=1)
    run("memories", "move", "no-such-note", "--global", code=1)
    run("eval", str(tmp_path / "no-fixtures"), code=2)  # a missing folder is a usage error
    project = tmp_path / "project"
    project.mkdir()
    run("install-rules", "--project", str(project))
    run("install-hook", "cursor", "--project", str(project), "--dry-run")
    run("install-mcp", "cursor", "--project", str(project), "--dry-run")
    run("install-merge-driver", "--help")  # needs a git repository; its behaviour is tested in test_sync_merge
    run("merge-driver", "--help")  # git runs it; exercised for real in test_sync_merge
    run("mcp", "--help")  # a stdio server; driven for real in test_mcp_server
    run("daemon", "status", code=3)  # not running: systemd's exit status
    run("setup", "--yes", "--dry-run")  # HOME is a temporary folder here (conftest)
    run("completion", "bash")
    run("hook", "cursor-session-start", input="{}")  # never breaks the chat: exit 0 even on bad input

    from agentmem_vault.cli import _COMMANDS, _MEMORIES

    assert set(_COMMANDS) <= set(ran), set(_COMMANDS) - set(ran)
    assert {f"memories {m}" for m in _MEMORIES} <= set(ran)
