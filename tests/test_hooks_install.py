"""install-hook: merge into existing configs, idempotent, backup, refusal; the installed command runs."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.integrations.hook_install import hook_command, merge

from hooks_helpers import cursor_start, claude_start, hook_env, id_from, rows

HOME_FILES = {"cursor": ".cursor/hooks.json", "claude": ".claude/settings.json", "codex": ".codex/hooks.json"}


@pytest.fixture(autouse=True)
def _a_vault_from_the_environment(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    """install-hook needs a vault to pin; these tests give it one through AGENTMEM_VAULT."""
    monkeypatch.setenv("AGENTMEM_VAULT", str(vault.root))
    return vault


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".agentmem-backup-*"))


def _commands(agent: str, doc: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for event, lst in doc["hooks"].items():
        if agent == "cursor":
            out[event] = [h["command"] for h in lst]
        else:
            out[event] = [h["command"] for g in lst for h in g["hooks"]]
    return out


@pytest.mark.parametrize("agent", ["cursor", "claude", "codex"])
def test_fresh_install_then_idempotent(cli, agent: str) -> None:
    path = Path.home() / HOME_FILES[agent]
    r = cli("install-hook", agent, "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["created"] and res["changed"] and res["backup"] is None and res["file"] == str(path)
    first = path.read_bytes()
    doc = json.loads(first)
    cmds = _commands(agent, doc)
    starts = [c for cs in cmds.values() for c in cs if f"{agent}-session-start" in c]
    assert len(starts) == 1
    if agent == "cursor":
        assert doc["version"] == 1
    else:
        assert doc["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    r = cli("install-hook", agent, "--json")
    res = json.loads(r.stdout)
    assert not res["changed"] and res["backup"] is None
    assert {e["action"] for e in res["entries"]} == {"unchanged"}
    assert path.read_bytes() == first and _backups(path) == []


def test_merge_keeps_other_hooks_and_settings_and_backs_up(cli) -> None:
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    original = {
        "permissions": {"allow": ["Bash(git status)"]},
        "model": "opus",
        "hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/guard.sh"}]}],
        },
    }
    raw = json.dumps(original, indent=4).encode()
    path.write_bytes(raw)
    r = cli("install-hook", "claude", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["changed"] and not res["created"]
    assert Path(res["backup"]).read_bytes() == raw
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["permissions"] == original["permissions"] and doc["model"] == "opus"
    assert doc["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    starts = _commands("claude", doc)["SessionStart"]
    assert starts[0] == "echo hello" and len(starts) == 2 and "claude-session-start" in starts[1]
    # twice: nothing changes, no second backup
    r = cli("install-hook", "claude", "--json")
    assert not json.loads(r.stdout)["changed"] and len(_backups(path)) == 1


def test_an_old_entry_of_ours_is_updated_in_place_and_duplicates_removed(cli) -> None:
    path = Path.home() / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "hooks": {
                    "sessionStart": [
                        {"command": "/old/venv/bin/agentmem hook cursor-session-start", "timeout": 3},
                        {"command": "./audit.sh"},
                        {"command": "/old/venv/bin/agentmem hook cursor-session-start"},
                    ],
                    "beforeShellExecution": [{"command": "./guard.sh"}],
                },
            }
        ),
        encoding="utf-8",
    )
    r = cli("install-hook", "cursor", "--json")
    res = json.loads(r.stdout)
    assert [e["action"] for e in res["entries"]] == ["updated", "added"]
    doc = json.loads(path.read_text(encoding="utf-8"))
    ss = doc["hooks"]["sessionStart"]
    assert len(ss) == 2 and ss[1] == {"command": "./audit.sh"}
    assert ss[0]["timeout"] == 3 and "/old/venv" not in ss[0]["command"]
    assert doc["hooks"]["beforeShellExecution"] == [{"command": "./guard.sh"}]


@pytest.mark.parametrize(
    "content", [b"{ not json", b"[1, 2]", b'{"hooks": []}', b'{"hooks": {"sessionStart": {}}}', b"\xff\xfe\x00"]
)
def test_refuses_a_file_it_cannot_parse(cli, content: bytes) -> None:
    path = Path.home() / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    r = cli("install-hook", "cursor", "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["error"]["code"] == "refused"
    assert path.read_bytes() == content and _backups(path) == []


def test_project_install_and_dry_run(cli, tmp_path: Path) -> None:
    proj = tmp_path / "my proj 專案"
    proj.mkdir()
    r = cli("install-hook", "codex", "--project", str(proj), "--dry-run", "--json")
    res = json.loads(r.stdout)
    assert res["dry_run"] and not (proj / ".codex" / "hooks.json").exists()
    r = cli("install-hook", "codex", "--project", str(proj))
    assert r.returncode == 0, r.stderr
    doc = json.loads((proj / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    assert "codex-session-start" in doc["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert "codex-stop" in doc["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert "codex_hooks = true" in r.stdout  # reminder to enable Codex hooks
    assert not (Path.home() / ".codex" / "hooks.json").exists()
    r = cli("install-hook", "cursor", "--project", str(tmp_path / "missing"))
    assert r.returncode == 2


def test_installed_command_runs_with_cjk_and_spaces(cli, vault: Vault, tmp_path: Path) -> None:
    """The command written to the config, run through a shell as the agent would, registers the chat."""
    r = cli("install-hook", "cursor", "--json", vault=vault)
    assert r.returncode == 0, r.stderr
    doc = json.loads((Path.home() / ".cursor" / "hooks.json").read_text(encoding="utf-8"))
    cmd = doc["hooks"]["sessionStart"][0]["command"]
    assert str(vault.root) in cmd or "'" in cmd
    elsewhere = tmp_path / "ws"
    elsewhere.mkdir()
    proc = subprocess.run(
        ["sh", "-c", cmd],
        input=json.dumps(cursor_start(elsewhere)).encode(),
        capture_output=True,
        cwd=elsewhere,
        env=hook_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert id_from(json.loads(proc.stdout)) == "2026-06-01-0930-cursor-main-agent"
    assert len(rows(vault)) == 1


def test_powershell_and_posix_quoting() -> None:
    argv = [r"C:\Users\me\my venv\Scripts\agentmem.exe"]
    ps = hook_command(
        "cursor", "cursor-session-start", vault="G:\\我的雲端硬碟\\O'Neil\\Agent", argv=argv, platform="win32"
    )
    assert (
        ps
        == "& 'C:\\Users\\me\\my venv\\Scripts\\agentmem.exe' 'hook' 'cursor-session-start' '--vault' 'G:\\我的雲端硬碟\\O''Neil\\Agent'"
    )
    posix = hook_command(
        "claude", "claude-session-start", vault="/v/我的 vault", argv=["/opt/my env/bin/agentmem"], platform="linux"
    )
    assert posix == "'/opt/my env/bin/agentmem' hook claude-session-start --vault '/v/我的 vault'"


CODEX_COMMANDS = {n: f"agentmem hook {n}" for n in ("codex-session-start", "codex-stop", "codex-user-prompt")}


def test_pure_merge_does_not_touch_its_input() -> None:
    existing = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}
    snapshot = json.dumps(existing)
    new, actions = merge(
        "codex",
        existing,
        CODEX_COMMANDS,
    )
    assert json.dumps(existing) == snapshot
    assert [a["action"] for a in actions] == ["added", "added", "added"]
    assert new["hooks"]["Stop"][0] == {"hooks": [{"type": "command", "command": "x"}]}
    again, actions = merge(
        "codex",
        new,
        CODEX_COMMANDS,
    )
    assert again == new and {a["action"] for a in actions} == {"unchanged"}


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
@pytest.mark.parametrize("hook_payload,expect_id", [("start", True), ("end", False)])
def test_ready_shell_scripts_from_a_cjk_path(vault: Vault, tmp_path: Path, hook_payload: str, expect_id: bool) -> None:
    script = "agentmem-hook.sh"
    src = Path(__file__).resolve().parent.parent / "hooks" / script
    where = tmp_path / "腳本 with space"
    where.mkdir()
    dst = where / script
    shutil.copy(src, dst)
    payload = (
        claude_start(vault.root)
        if hook_payload == "start"
        else {
            "session_id": "00893aaf-19fa-41d2-8238-13269b9b3ca0",
            "transcript_path": str(Path.home() / ".claude" / "projects" / "p" / "x.jsonl"),
            "cwd": str(vault.root),
            "hook_event_name": "SessionEnd",
            "reason": "other",
        }
    )
    env = (
        hook_env({"AGENTMEM_BIN": str(Path(sys.executable).parent / "agentmem")})
        if (Path(sys.executable).parent / "agentmem").exists()
        else hook_env()
    )
    proc = subprocess.run(
        ["sh", str(dst), hook_payload, "claude"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    if expect_id:
        assert id_from(obj) == "2026-06-01-0930-claude-main-agent"
    else:
        assert obj == {}
        assert (vault.state_dir / "extract-queue.jsonl").exists()


def test_shell_script_without_agentmem_answers_empty(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parent.parent / "hooks" / "agentmem-hook.sh"
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    os.symlink(shutil.which("sh"), empty_bin / "sh")
    proc = subprocess.run(
        [str(empty_bin / "sh"), str(src), "start", "cursor"],
        input=b"{}",
        capture_output=True,
        env={"PATH": str(empty_bin), "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0 and json.loads(proc.stdout) == {}


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_shell_script_with_an_unknown_event_answers_empty_and_registers_nothing(vault: Vault, tmp_path: Path) -> None:
    src = Path(__file__).resolve().parent.parent / "hooks" / "agentmem-hook.sh"
    for args in (["cursor"], ["begin", "cursor"], []):  # the event forgotten or misspelt
        proc = subprocess.run(
            ["sh", str(src), *args],
            input=json.dumps(claude_start(vault.root)).encode(),
            capture_output=True,
            cwd=tmp_path,
            env=hook_env(),
        )
        assert proc.returncode == 0 and json.loads(proc.stdout) == {} and b"start or end" in proc.stderr
    assert "claude-main-agent" not in vault.index_path.read_text(encoding="utf-8")


def test_example_configs_name_scripts_that_exist() -> None:
    import re

    hooks_dir = Path(__file__).resolve().parent.parent / "hooks"
    for cfg in (hooks_dir / "examples").glob("*.json"):
        for name, kind in re.findall(r"(agentmem-[a-z-]+\.(?:sh|ps1))\\?\"? (\w+)", cfg.read_text(encoding="utf-8")):
            assert (hooks_dir / name).is_file(), (cfg.name, name)
            assert kind in ("start", "end"), (cfg.name, kind)


@pytest.mark.parametrize("agent", ["cursor", "claude", "codex"])
def test_the_written_command_pins_the_vault_from_the_environment(cli, vault: Vault, agent: str, tmp_path: Path) -> None:
    """A vault found through AGENTMEM_VAULT is written into the command: an agent started from the
    desktop (without that variable, in another folder) still reaches it."""
    r = cli("install-hook", agent, "--json")
    assert r.returncode == 0, r.stderr
    for e in json.loads(r.stdout)["entries"]:
        assert e["command"].endswith("--vault " + shlex.quote(str(vault.root))), e
    if agent == "cursor":
        cmd = json.loads((Path.home() / HOME_FILES[agent]).read_text(encoding="utf-8"))["hooks"]["sessionStart"][0][
            "command"
        ]
        env = {k: v for k, v in hook_env().items() if k != "AGENTMEM_VAULT"}
        proc = subprocess.run(
            ["sh", "-c", cmd],
            input=json.dumps(cursor_start(tmp_path)).encode(),
            capture_output=True,
            cwd=tmp_path,
            env=env,
        )
        assert id_from(json.loads(proc.stdout)), proc.stdout


def test_refuses_without_a_vault_and_says_what_to_do(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AGENTMEM_VAULT")
    proc = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "install-hook", "cursor"], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "--vault PATH" in proc.stderr and "agentmem setup" in proc.stderr
    assert not (Path.home() / ".cursor" / "hooks.json").exists()
    r = cli("install-hook", "cursor", vault=tmp_path / "typo")
    assert r.returncode == 1 and "vault folder not found" in r.stderr and "(from --vault)" in r.stderr
    bare = tmp_path / "not yet a vault"
    bare.mkdir()
    r = cli("install-hook", "cursor", vault=bare)
    assert r.returncode == 1 and "agentmem init --vault" in r.stderr
    assert not (Path.home() / ".cursor" / "hooks.json").exists()
