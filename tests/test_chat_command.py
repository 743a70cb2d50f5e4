"""The text given to the chat names a command the chat can run (docs/setup.md): the absolute path
of the installed executable, quoted for the platform's shell, in the hook's answer, the agent rule
and the MCP instructions; a bare `agentmem` is not on the chat's PATH after a venv install."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hooks_helpers import context_of, cursor_start, hook_env

AGENTMEM = Path(sys.executable).parent / ("agentmem.exe" if sys.platform == "win32" else "agentmem")


def _runs(command_text: str, tmp_path: Path) -> None:
    """The command as written in the chat's text starts agentmem from a shell without the venv."""
    argv = shlex.split(command_text)
    env = {k: v for k, v in hook_env().items() if k not in ("VIRTUAL_ENV",)}
    env["PATH"] = "/usr/bin:/bin"  # the chat's shell: no venv on PATH
    proc = subprocess.run([*argv, "--version"], capture_output=True, cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell quoting (PowerShell's is tested below)")
def test_the_hook_answer_names_the_installed_executable(vault, tmp_path: Path) -> None:
    assert AGENTMEM.is_file()
    proc = subprocess.run(
        [str(AGENTMEM), "hook", "cursor-session-start"],  # as install-hook writes it
        input=json.dumps(cursor_start(vault.root)).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=hook_env(),
        timeout=60,
    )
    text = context_of(json.loads(proc.stdout))
    update = next(line for line in text.splitlines() if "update memory session ->" in line)
    cmd = update.split("-> ", 1)[1].split(" update ", 1)[0]
    assert shlex.split(cmd) == [str(AGENTMEM)], update
    assert "-> agentmem " not in text  # no bare command left
    _runs(cmd, tmp_path)


def test_the_agent_rule_and_the_mcp_instructions_name_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(AGENTMEM), "install-rules"])
    from agentmem_vault.command import chat_command
    from agentmem_vault.integrations.rules import install_rules, template_text, with_command

    project = tmp_path / "proj"
    project.mkdir()
    install_rules(project, agents_md=True)
    note = f"On this machine run agentmem as: {chat_command()} "
    for f in (project / ".cursor" / "rules" / "agent-memory.mdc", project / "AGENTS.md"):
        assert note in f.read_text(encoding="utf-8"), f
    assert note in with_command(template_text("mcp-instructions.md"))
    if sys.platform != "win32":
        _runs(chat_command(), tmp_path)


@pytest.mark.parametrize(
    ("platform", "path", "expected"),
    [
        ("linux", "/home/ann/my venv/bin/agentmem", "'/home/ann/my venv/bin/agentmem'"),
        ("linux", "/opt/it's/agentmem", "'/opt/it'\"'\"'s/agentmem'"),
        ("linux", "/usr/local/bin/agentmem", "/usr/local/bin/agentmem"),
        (
            "win32",
            "C:\\Users\\Ann\\我的 venv\\Scripts\\agentmem.exe",
            "& 'C:\\Users\\Ann\\我的 venv\\Scripts\\agentmem.exe'",
        ),
        ("win32", "C:\\O'Brien\u2019s\\agentmem.exe", "& 'C:\\O''Brien\u2019\u2019s\\agentmem.exe'"),
    ],
)
def test_quoted_for_the_platforms_shell(monkeypatch, platform: str, path: str, expected: str) -> None:
    from agentmem_vault import command

    monkeypatch.setattr(command, "agentmem_argv", lambda: [path])
    assert command.chat_command(platform) == expected


def test_the_hook_failure_line_names_the_installed_executable(tmp_path: Path) -> None:
    # no vault anywhere: the one line the chat gets names the command it can run, not a bare one
    proc = subprocess.run(
        [str(AGENTMEM), "hook", "cursor-session-start"],
        input=json.dumps({"workspace_roots": [str(tmp_path)]}).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=hook_env(),
        timeout=60,
    )
    line = json.loads(proc.stdout)["additional_context"]
    assert "no vault found" in line, line
    cmd = line.split("Fix: run `", 1)[1].split(" setup`", 1)[0]
    assert shlex.split(cmd) == [str(AGENTMEM)], line
    assert "`agentmem " not in line
