"""The procedure's placement and naming rules (docs/setup.md, docs/board.md): memory/ is never
inside wiki/, and an Agent Name names the agent and ends in -agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("sub", ["wiki", "Wiki/projects"])
def test_init_refuses_a_vault_inside_wiki_and_creates_nothing(tmp_path: Path, sub: str) -> None:
    top = tmp_path / "Agent"
    (top / "raw").mkdir(parents=True)
    target = top / sub
    target.mkdir(parents=True)
    before = _tree(top)
    r = run_cli("--json", "init", "--vault", str(target))
    assert r.returncode == 1, r.stdout
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "memory_inside_wiki" and "beside wiki/" in err["message"]
    assert "Traceback" not in r.stderr
    assert _tree(top) == before  # no wiki/memory/


def test_every_command_refuses_a_memory_folder_inside_wiki(tmp_path: Path) -> None:
    wiki = tmp_path / "Agent" / "wiki"
    (wiki / "memory" / "sessions").mkdir(parents=True)
    (wiki / "memory" / "index.md").write_text(
        "| Session ID | Agent Name | Topic | Summary | Keywords | Status | Referenced By | Started At | Updated At |\n"
        "|---|---|---|---|---|---|---|---|---|\n",
        encoding="utf-8",
    )
    before = (wiki / "memory" / "index.md").read_bytes()
    for args in (["register"], ["list"], ["organize"], ["doctor"]):
        r = run_cli("--vault", str(wiki), *args)
        assert r.returncode == 1 and "beside wiki/" in r.stderr, (args, r.stdout, r.stderr)
    r = run_cli("register", cwd=wiki)  # found by walking up from inside wiki/
    assert r.returncode == 1 and "beside wiki/" in r.stderr, r.stderr
    assert (wiki / "memory" / "index.md").read_bytes() == before


def test_an_obsidian_vault_below_a_folder_named_wiki_is_fine(tmp_path: Path) -> None:
    vault = tmp_path / "wiki" / "Agent"
    (vault / ".obsidian").mkdir(parents=True)
    r = run_cli("init", "--vault", str(vault))
    assert r.returncode == 0, r.stderr
    assert (vault / "memory" / "index.md").is_file()


def test_a_task_named_agent_is_refused_with_the_reason_unless_overridden(vault) -> None:
    before = vault.index_path.read_bytes()
    r = run_cli("register", "--agent", "fix-login-bug", vault=vault)
    assert r.returncode == 2
    assert "names the agent, not the task" in r.stderr and "--allow-agent-name" in r.stderr
    assert vault.index_path.read_bytes() == before
    r = run_cli("register", "--agent", "fix-login-bug", vault=vault, env={"AGENTMEM_AGENT": ""})
    assert r.returncode == 2
    ok = run_cli("--allow-agent-name", "register", "--agent", "fix-login-bug", vault=vault)
    assert ok.returncode == 0, ok.stderr
    assert "-fix-login-bug" in ok.stdout
    for name in ("cursor-main-agent", "claude-code-agent", "codex-main-agent"):
        r = run_cli("register", "--agent", name, vault=vault)
        assert r.returncode == 0 and name in r.stdout, r.stderr


def test_the_config_and_the_environment_follow_the_convention_too(vault) -> None:
    r = run_cli("register", vault=vault, env={"AGENTMEM_AGENT": "refactor-db"})
    assert r.returncode == 2 and "refactor-db" in r.stderr
    cfg = vault.memory / ".agentmem" / "config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8") + "\nagent_name: refactor-db\n", encoding="utf-8")
    assert run_cli("register", vault=vault).returncode == 2
    cfg.write_text(cfg.read_text(encoding="utf-8") + "allow_any_agent_name: true\n", encoding="utf-8")
    r = run_cli("register", vault=vault)
    assert r.returncode == 0 and "refactor-db" in r.stdout, r.stderr
