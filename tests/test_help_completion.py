"""--help groups commands with whole summaries; `completion` prints a script for each shell; Session
IDs complete from the board (bash protocol and our PowerShell one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_vault.cli.help import SECTIONS

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
BOARD_IDS = [
    "2026-05-25-1318-cursor-main-agent",
    "2026-05-26-0900-cursor-main-agent",
    "2026-05-27-1402-cursor-main-agent",
    "2026-05-27-1530-claude-code-agent",
]


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agentmem_vault", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
        check=False,
    )


def test_help_groups_every_command_with_its_whole_first_sentence() -> None:
    import click

    from agentmem_vault.cli import cli

    out = _run("--help").stdout
    flat = " ".join(out.split())  # a summary longer than the terminal wraps; it is never cut
    headings = [h for h, _ in SECTIONS]
    positions = [out.index(f"\n{h}:\n") for h in headings]
    assert positions == sorted(positions)
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        cmd = cli.get_command(ctx, name)
        assert cmd is not None
        if cmd.hidden:
            continue
        summary = cmd.get_short_help_str(limit=10_000)
        assert "..." not in summary, name
        assert f"\n  {name} " in out and summary in flat, (name, summary)
    assert "\nCommands:\n" not in out  # nothing left in a flat list
    assert "\nOther:\n" not in out  # every command has a section


def test_sub_groups_show_whole_summaries_too() -> None:
    out = "\n" + _run("daemon", "--help").stdout.split("\nCommands:\n")[1]
    assert "\n  install " in out and "\n  uninstall " in out and "..." not in out


@pytest.mark.parametrize(
    "shell,marker",
    [
        ("bash", "complete -o nosort -F"),
        ("zsh", "#compdef agentmem"),
        ("fish", "complete --no-files --command agentmem"),
        ("powershell", "Register-ArgumentCompleter -Native -CommandName agentmem"),
    ],
)
def test_completion_scripts(shell: str, marker: str) -> None:
    r = _run("completion", shell)
    assert r.returncode == 0, r.stderr
    assert marker in r.stdout and "_AGENTMEM_COMPLETE" in r.stdout


def test_completion_needs_a_known_shell() -> None:
    r = _run("completion", "tcsh")
    assert r.returncode == 2 and "bash" in r.stderr


def test_bash_protocol_completes_session_ids_from_the_board() -> None:
    r = _run(
        env={
            "_AGENTMEM_COMPLETE": "bash_complete",
            "COMP_WORDS": f"agentmem --vault {SAMPLE} show 2026-05-2",
            "COMP_CWORD": "4",
        }
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [f"plain,{i}" for i in BOARD_IDS]


@pytest.mark.parametrize(
    "words",
    [
        "agentmem update 2026-05-2",
        "agentmem archive 2026-05-2",
        "agentmem say 歸檔 2026-05-2",
        "agentmem continue 2026-05-2",
    ],
)
def test_powershell_protocol_completes_session_ids(words: str) -> None:
    r = _run(
        env={
            "_AGENTMEM_COMPLETE": "powershell_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": "2026-05-2",
            "AGENTMEM_VAULT": str(SAMPLE),
        }
    )
    assert r.returncode == 0, r.stderr
    lines = [ln.split("\t") for ln in r.stdout.splitlines()]
    assert [ln[1] for ln in lines] == BOARD_IDS
    assert lines[1][2] == "快照合併規則實作"  # the Topic as the hint


def test_completion_without_a_vault_completes_nothing_quietly(tmp_path: Path) -> None:
    r = _run(env={"_AGENTMEM_COMPLETE": "bash_complete", "COMP_WORDS": "agentmem show 2026", "COMP_CWORD": "2"})
    assert r.returncode == 0 and r.stdout.strip() == "" and r.stderr == ""


def test_powershell_commands_complete() -> None:
    r = _run(env={"_AGENTMEM_COMPLETE": "powershell_complete", "COMP_WORDS": "agentmem da", "COMP_CWORD": "da"})
    assert [ln.split("\t")[1] for ln in r.stdout.splitlines()] == ["daemon"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_script_loads_in_bash() -> None:
    script = _run("completion", "bash").stdout
    proc = subprocess.run(
        ["bash", "-c", script + "\ncomplete -p agentmem"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0 and "_agentmem_completion" in proc.stdout, proc.stderr
