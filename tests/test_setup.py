"""agentmem setup: creates or adopts the vault, pins it, installs hooks for the agents found, the
daemon service (through an injected runner), and proves it works; idempotent; --dry-run writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from test_user_service import FakeRunner

from agentmem_vault.vault import Vault, user_config_dir
from agentmem_vault.config import resolve_vault
from agentmem_vault.integrations.setup import SetupOptions, render, run_setup
from agentmem_vault.ops.board import load_index


@pytest.fixture(autouse=True)
def _no_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = Path.home()
    for d in (".cursor", ".claude", ".codex"):
        (h / d).mkdir()
    return h


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _actions(res) -> dict[tuple[str, str], str]:
    return {(c.step, c.target): c.action for c in res.changes}


def test_fresh_machine_then_idempotent(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "雲端 硬碟" / "Agent Memory"
    run = FakeRunner()
    res = run_setup(SetupOptions(vault=target, home=home), runner=run)
    assert res.ok, render(res)
    vault = Vault(target)
    assert vault.index_path.is_file()
    # pinned: resolution without --vault or AGENTMEM_VAULT finds it
    assert yaml.safe_load((user_config_dir() / "config.yaml").read_text(encoding="utf-8"))["vault"] == str(target)
    assert resolve_vault(None, cwd=tmp_path).root == target
    for rel in (".cursor/hooks.json", ".claude/settings.json", ".codex/hooks.json"):
        text = (home / rel).read_text(encoding="utf-8")
        assert "--vault" in text and str(target) in text, rel
    assert (
        tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))["features"]["codex_hooks"] is True
    )
    unit = next((home / ".config" / "systemd" / "user").glob("agentmem-daemon-*.service"))
    assert ["systemctl", "--user", "enable", "--now", unit.name] in run.calls
    # the check ran the installed hook and its row is on the board
    assert res.session_id and load_index(vault).find(res.session_id) is not None
    checks = [c for c in res.changes if c.step == "check"]
    assert [c.action for c in checks] == ["ok", "ok"]

    before = _tree(home) | {"vault/" + k: v for k, v in _tree(target).items() if ".agentmem" not in k}
    again = run_setup(SetupOptions(vault=target, home=home), runner=FakeRunner())
    assert again.ok and not again.changed, render(again)
    assert again.session_id == res.session_id  # the check chat is found again, no second row
    after = _tree(home) | {"vault/" + k: v for k, v in _tree(target).items() if ".agentmem" not in k}
    assert before == after
    assert len(load_index(vault).row_list()) == 1


def test_dry_run_writes_nothing_and_shows_every_change(home: Path, tmp_path: Path) -> None:
    before = _tree(home)
    run = FakeRunner()
    res = run_setup(SetupOptions(vault=tmp_path / "v"), dry_run=True, runner=run)
    assert _tree(home) == before and not (tmp_path / "v").exists() and run.calls == []
    if any(c.step == "mcp" and c.action == "create" for c in res.changes):  # the MCP extra is installed
        assert "mcp --vault" in render(res)
    text = render(res)
    assert "would create" in text and "cursor-session-start --vault" in text and "claude-session-start" in text
    assert "[Service]" in text or "<key>KeepAlive</key>" in text or "<Task" in text
    assert "codex_hooks" in text and "Run without --dry-run" in text


def test_adopts_an_existing_vault_and_keeps_other_settings(home: Path, tmp_path: Path) -> None:
    from agentmem_vault.ops.board import init_vault

    v = Vault(tmp_path / "old vault")
    v.root.mkdir()
    init_vault(v)
    cfg = user_config_dir() / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("# mine\nvault: /somewhere/else\nagent_name: my-agent\n", encoding="utf-8")
    toml = home / ".codex" / "config.toml"
    toml.write_text('model = "o3"\n\n[features]\nweb_search = true\n', encoding="utf-8")
    res = run_setup(SetupOptions(vault=v.root, agents=("codex",), daemon=False, home=home), runner=FakeRunner())
    assert res.ok, render(res)
    assert _actions(res)[("vault", str(v.root))] == "unchanged"
    text = cfg.read_text(encoding="utf-8")
    assert (
        text.startswith("# mine\n") and "agent_name: my-agent" in text and yaml.safe_load(text)["vault"] == str(v.root)
    )
    parsed = tomllib.loads(toml.read_text(encoding="utf-8"))
    assert parsed["model"] == "o3" and parsed["features"] == {"web_search": True, "codex_hooks": True}
    assert not (home / ".cursor" / "hooks.json").exists()  # only the agent asked for


def test_codex_hooks_switched_off_by_the_user_is_left_alone(home: Path, tmp_path: Path) -> None:
    toml = home / ".codex" / "config.toml"
    toml.write_text("[features]\ncodex_hooks = false\n", encoding="utf-8")
    res = run_setup(SetupOptions(vault=tmp_path / "v", agents=("codex",), daemon=False, check=False, home=home))
    assert tomllib.loads(toml.read_text(encoding="utf-8"))["features"] == {"codex_hooks": False}
    assert any(c.action == "skip" and "codex_hooks" in c.detail for c in res.changes)


def test_no_agents_found_is_a_skip_with_what_to_do(tmp_path: Path) -> None:
    res = run_setup(SetupOptions(vault=tmp_path / "v", daemon=False), runner=FakeRunner())
    assert res.ok
    hooks = next(c for c in res.changes if c.step == "hooks")
    assert hooks.action == "skip" and "agentmem setup" in hooks.detail
    assert res.session_id  # the check still proves the vault works through the hook command


def test_rules_into_a_project(home: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    res = run_setup(
        SetupOptions(vault=tmp_path / "v", project=proj, agents_md=True, daemon=False, check=False, home=home),
        dry_run=True,
    )
    assert not (proj / ".cursor").exists() and any(c.step == "rules" and c.action == "create" for c in res.changes)
    run_setup(SetupOptions(vault=tmp_path / "v", project=proj, agents_md=True, daemon=False, check=False, home=home))
    assert (proj / ".cursor" / "rules" / "agent-memory.mdc").is_file() and (proj / "AGENTS.md").is_file()


def test_a_broken_check_is_reported_as_failed(home: Path, tmp_path: Path) -> None:
    """A board the hook cannot register on (here: hand-damaged) fails the vault step and the check,
    each saying what to do; nothing is rewritten."""
    target = tmp_path / "v"
    run_setup(SetupOptions(vault=target, daemon=False, check=False, home=home))
    damaged = "not a table at all\n| broken\n"
    Vault(target).index_path.write_text(damaged, encoding="utf-8")
    res = run_setup(SetupOptions(vault=target, daemon=False, home=home))
    assert not res.ok
    text = render(res)
    assert "FAILED" in text and "agentmem doctor" in text and "run `agentmem setup` again" in text
    assert (
        next(c for c in res.changes if c.detail.startswith("Agent Memory") or c.target == "sessionStart").action
        == "fail"
    )
    assert Vault(target).index_path.read_text(encoding="utf-8") == damaged


def test_cli_without_a_terminal_needs_yes(cli, tmp_path: Path) -> None:
    r = cli("setup", input="")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--yes" in r.stderr


def test_cli_yes_json(cli, home: Path, tmp_path: Path) -> None:
    r = cli("setup", "--yes", "--no-daemon", "--json", "--vault", str(tmp_path / "v"))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (
        out["ok"] and out["session_id"] and {c["step"] for c in out["changes"]} >= {"vault", "config", "hooks", "check"}
    )
    r = cli("setup", "--yes", "--no-daemon", "--json", "--vault", str(tmp_path / "v"))
    assert json.loads(r.stdout)["changed"] is False


def test_setup_is_listed_and_documented() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "--help"], check=False, capture_output=True, text=True
    )
    assert "setup" in proc.stdout and "Hooks and integrations" in proc.stdout


def test_mcp_configs_for_the_agents_found(home: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    res = run_setup(SetupOptions(vault=tmp_path / "v", daemon=False, check=False, home=home))
    mcp = {c.target: c.action for c in res.changes if c.step == "mcp"}
    assert mcp == {
        str(home / ".cursor" / "mcp.json"): "create",
        str(home / ".claude.json"): "create",
        str(home / ".codex" / "config.toml"): "update",
    }
    cfg = json.loads((home / ".cursor" / "mcp.json").read_text(encoding="utf-8"))
    args = cfg["mcpServers"]["agentmem"]["args"]
    assert "mcp" in args and args[args.index("--vault") + 1] == str(tmp_path / "v")
    parsed = tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))
    assert parsed["features"]["codex_hooks"] is True and "agentmem" in parsed["mcp_servers"]
    again = run_setup(SetupOptions(vault=tmp_path / "v", daemon=False, check=False, home=home))
    assert not again.changed, render(again)


def test_an_unchanged_config_step_carries_no_preview(home: Path, tmp_path: Path) -> None:
    # `setup --json` lists each step; a preview is the content a step would write, so a config that
    # already pins this vault has none (as every other unchanged step).
    opts = SetupOptions(vault=tmp_path / "v", daemon=False, check=False, hooks=False, mcp=False, home=home)
    run_setup(opts, runner=FakeRunner())
    again = run_setup(opts, runner=FakeRunner())
    config = next(c for c in again.to_dict()["changes"] if c["step"] == "config")
    assert (config["action"], config["preview"]) == ("unchanged", "")


def test_a_codex_edit_that_would_not_enable_hooks_fails_also_under_python_dash_o(tmp_path: Path) -> None:
    """``[features]`` inside a multi-line string: the edit lands in the string, so codex_hooks is
    still unset; the check refuses it, also with ``python -O`` (which drops asserts)."""
    codex = tmp_path / ".codex"
    codex.mkdir()
    original = 'notes = """\n[features]\n"""\nmodel = "o3"\n'
    (codex / "config.toml").write_text(original, encoding="utf-8")
    code = (
        "import sys; from pathlib import Path; from agentmem_vault.integrations.setup import _codex_toml_step; "
        "c = _codex_toml_step(Path(sys.argv[1]), dry_run=False); print(c.action, c.detail)"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("fail could not add codex_hooks safely"), out.stdout + out.stderr
    assert (codex / "config.toml").read_text(encoding="utf-8") == original


def test_every_installer_reads_project_the_same_way(cli, vault: Vault, tmp_path: Path) -> None:
    """install-hook, install-mcp, install-rules and setup share one ``--project`` check: ``~`` is
    expanded (install-hook and install-rules refused a quoted ``~/proj`` that the other two took),
    a missing folder gets one message."""
    (Path.home() / "proj").mkdir()
    commands = (
        ["install-hook", "cursor", "--dry-run"],
        ["install-mcp", "cursor", "--dry-run"],
        ["install-rules"],
        ["setup", "--yes", "--no-daemon", "--no-hooks", "--no-mcp", "--no-check"],
    )
    missing = tmp_path / "missing"
    refusals = set()
    for argv in commands:
        ok = cli(*argv, "--project", "~/proj", vault=vault)
        assert ok.returncode == 0, (argv, ok.stderr)
        bad = cli(*argv, "--project", str(missing), vault=vault)
        assert bad.returncode == 2, (argv, bad.stderr)
        refusals.add(bad.stderr.strip())
    assert refusals == {
        f"error: --project {missing}: no such folder; pass the project's existing folder (create it if it is new)"
    }
    assert (Path.home() / "proj" / ".cursor" / "rules" / "agent-memory.mdc").is_file()
