"""Project-scoped memory: project identity, scope at extraction, scoped recall, re-scoping."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.longterm.scope import scope_for
from agentmem_vault.ops.projects import Aliases, decode_slug, for_transcript, identify, identify_roots
from conftest import run_cli
from hooks_helpers import answer, context_of, cursor_start, hook_env, run_hook
from projects_helpers import build_vault, evaluate

HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=GIT_ENV, timeout=120)


def repo(path: Path, remote: str | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    if remote:
        git(path, "remote", "add", "origin", remote)
    return path


# -- identity ---------------------------------------------------------------------------------------


@needs_git
def test_a_repository_is_named_by_its_remote_then_its_top_folder(tmp_path: Path) -> None:
    r = repo(tmp_path / "code" / "my-app", "git@github.com:alice/shop-api.git")
    (r / "src" / "deep").mkdir(parents=True)
    assert identify(r / "src" / "deep").name == "shop-api"
    assert identify(r).source == "git-remote"
    plain = repo(tmp_path / "code" / "web_frontend")
    assert (identify(plain).name, identify(plain).source) == ("web_frontend", "git-folder")
    cjk = repo(tmp_path / "程式" / "記帳本")
    assert identify(cjk / ".").name == "記帳本"


@needs_git
def test_worktrees_name_their_main_repository_and_submodules_themselves(tmp_path: Path) -> None:
    main = repo(tmp_path / "agentmem-vault")
    (main / "f.txt").write_text("x", encoding="utf-8")
    git(main, "add", "f.txt")
    git(main, "commit", "-q", "-m", "x")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt-feature"), "-b", "feature")
    assert identify(tmp_path / "wt-feature").name == "agentmem-vault"
    lib = repo(tmp_path / "vendored-lib")
    (lib / "g.txt").write_text("y", encoding="utf-8")
    git(lib, "add", "g.txt")
    git(lib, "commit", "-q", "-m", "y")
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "libs/thing")
    ident = identify(main / "libs" / "thing")
    assert ident.name in ("vendored-lib", "thing") and ident.name != "agentmem-vault"


def test_a_folder_that_is_not_a_repository_and_windows_paths(tmp_path: Path) -> None:
    (tmp_path / "notes folder").mkdir()
    assert (identify(tmp_path / "notes folder").name, identify(tmp_path / "notes folder").source) == (
        "notes folder",
        "folder",
    )
    win = identify(r"G:\我的雲端硬碟\code\my-app")
    assert win.name == "my-app"
    assert identify("").name == "" and identify(None).source == "unknown"
    assert identify_roots(["", r"C:\Users\alice\code\web_frontend"]).name == "web_frontend"


def test_aliases_map_folders_and_old_names(tmp_path: Path) -> None:
    aliases = Aliases({"agentmem-vault": ["G:/code/agentmem-vault", "vault", "~/old/checkout"], "shop-api": "shop"})
    assert identify(r"G:\code\agentmem-vault\src", aliases).name == "agentmem-vault"
    (tmp_path / "vault").mkdir()
    assert identify(tmp_path / "vault", aliases).name == "agentmem-vault"  # an old name
    assert aliases.canonical("Shop") == "shop-api"
    assert aliases.names_for("agentmem-vault") == ["agentmem-vault", "vault"]
    assert Aliases("not a mapping").known() == []


def test_slugs_are_decoded_against_existing_folders_never_cut(tmp_path: Path) -> None:
    base = tmp_path / "Users" / "alice" / "code"
    (base / "agentmem-vault").mkdir(parents=True)
    (base / "web_frontend").mkdir()
    (base / "我的專案").mkdir()
    root = str(tmp_path).strip("/").replace("/", "-")
    assert decode_slug(f"{root}-Users-alice-code-agentmem-vault") == [str(base / "agentmem-vault")]
    assert decode_slug(f"-{root}-Users-alice-code-web-frontend") == [str(base / "web_frontend")]  # Claude Code form
    assert decode_slug(f"{root}-Users-alice-code-我的專案") == [str(base / "我的專案")]
    (base / "my" / "app").mkdir(parents=True)
    (base / "my-app").mkdir()
    assert len(decode_slug(f"{root}-Users-alice-code-my-app")) == 2  # ambiguous
    assert decode_slug("Users-nobody-nowhere") == []


def test_a_transcript_takes_its_recorded_cwd_else_the_decoded_slug_else_nothing(tmp_path: Path) -> None:
    claude = tmp_path / ".claude" / "projects" / "-home-alice-code-my-app" / "abc.jsonl"
    claude.parent.mkdir(parents=True)
    claude.write_text(
        json.dumps({"type": "user", "cwd": "/home/alice/code/my-app", "message": {}}) + "\n", encoding="utf-8"
    )
    assert for_transcript(claude).name == "my-app"  # not "app"
    cursor = tmp_path / ".cursor" / "projects" / "home-alice-code-my-app" / "agent-transcripts" / "x.jsonl"
    cursor.parent.mkdir(parents=True)
    cursor.write_text("{}\n", encoding="utf-8")
    unknown = for_transcript(cursor)
    assert unknown.name == "" and "home-alice-code-my-app" in unknown.note


# -- scope at extraction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "category, text, source, expected",
    [
        ("user_communication", "以後回答一律用繁體中文", "shop-api", ("", "global")),
        ("user_behavior", "I always use PowerShell", "shop-api", ("", "global")),
        ("user_behavior", "這個專案的回答用英文", "shop-api", ("shop-api", "project")),
        ("development_code_specification", "我們專案的 logging 一律用 structlog", "shop-api", ("shop-api", "project")),
        ("development_practice_specification", "這個專案的 commit message 用中文", "shop-api", ("shop-api", "project")),
        ("development_code_specification", "所有專案都用 ruff 做 lint", "shop-api", ("", "global")),
        ("project_tech_stack", "in every project I use pytest", "web", ("", "global")),
        ("project_tech_stack", "we use PostgreSQL 16", "", ("", "unscoped")),
    ],
)
def test_scope_rule(category: str, text: str, source: str, expected: tuple[str, str]) -> None:
    assert scope_for(category, text, source) == expected


# -- recall -------------------------------------------------------------------------------------------


@pytest.fixture
def projects_vault(tmp_path: Path) -> Vault:
    return build_vault(tmp_path / "多專案 vault")


def test_no_memory_of_another_project_is_shown_and_recall_holds(projects_vault: Vault) -> None:
    scoped = evaluate(projects_vault, scoped=True)
    unscoped = evaluate(projects_vault, scoped=False)
    assert scoped["tasks"] >= 30 and scoped["projects"] >= 4
    assert scoped["leak_rate"] == 0.0 and scoped["tasks_with_leak"] == 0, scoped["leaks"]
    assert unscoped["leak_rate"] > 0  # the fixture does test something
    assert scoped["recall_at_5"] >= unscoped["recall_at_5"]


def test_context_defaults_to_the_current_folders_project(projects_vault: Vault, tmp_path: Path) -> None:
    work = tmp_path / "work" / "shop-api"
    work.mkdir(parents=True)
    proc = run_cli("context", "commit message 格式", "--json", vault=projects_vault, cwd=work)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    ids = {h["id"] for h in d["rules"] + d["memories_full"] + d["memories_brief"]}
    assert "lt-sh06" in ids and "lt-web07" not in ids and "lt-ml01" not in ids
    assert d["scope"]["project"] == "shop-api"
    other = json.loads(
        run_cli("context", "commit message", "--json", "--project", "web-frontend", vault=projects_vault).stdout
    )
    assert "lt-web07" in {h["id"] for h in other["rules"]} and "lt-sh06" not in {h["id"] for h in other["rules"]}
    every = json.loads(run_cli("context", "commit message", "--json", "--all-projects", vault=projects_vault).stdout)
    assert {"lt-web07", "lt-sh06"} <= {h["id"] for h in every["rules"]}


def test_an_unknown_project_is_a_clear_error_listing_the_known_ones(projects_vault: Vault) -> None:
    proc = run_cli("memories", "search", "logging", "--project", "nope", vault=projects_vault)
    assert proc.returncode == 2 and "unknown project 'nope'" in proc.stderr
    assert "shop-api" in proc.stderr and "web-frontend" in proc.stderr and "Traceback" not in proc.stderr
    # a memory of a project no folder maps to is still found with --all-projects
    hits = json.loads(
        run_cli("memories", "search", "Slurm GPU", "--all-projects", "--json", vault=projects_vault).stdout
    )
    assert hits and hits[0]["id"] == "lt-ml04"


def test_session_start_shows_the_chats_own_project_rules_and_records_its_project(
    projects_vault: Vault, tmp_path: Path
) -> None:
    run_cli("reindex", vault=projects_vault)
    ws = tmp_path / "ws" / "web-frontend"
    ws.mkdir(parents=True)
    proc = run_hook(
        "cursor-session-start",
        cursor_start(ws, conv="c-web"),
        cwd=ws,
        args=["--vault", str(projects_vault.root)],
        env=hook_env(),
    )
    ctx = context_of(answer(proc))
    assert "web-frontend 用 pnpm 不用 npm" in ctx and "回答一律用繁體中文" in ctx
    assert "shop-api 的 logging 一律用 structlog" not in ctx and "訓練資料放 S3" not in ctx
    pairs = (projects_vault.state_dir / "conversations.jsonl").read_text(encoding="utf-8")
    pair = json.loads(pairs.strip().splitlines()[-1])
    assert pair["project"] == "web-frontend" and pair["workspace"] == str(ws)
    # the session's snapshot records the project (Metadata row and Property) on its first write
    sid = pair["session_id"]
    snap = "## Decisions\n- use pnpm for the date picker\n"
    upd = run_cli("update", sid, "--snapshot", "-", vault=projects_vault, input=snap)
    assert upd.returncode == 0, upd.stderr
    text = projects_vault.session_path(sid).read_text(encoding="utf-8")
    assert "| Project | web-frontend |" in text and "project: web-frontend" in text


def test_memories_move_rescopes_and_doctor_reports_orphans(projects_vault: Vault) -> None:
    moved = run_cli("memories", "move", "lt-ml06", "--global", "--json", vault=projects_vault)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["scope"] == "global"
    text = next(projects_vault.longterm_dir.glob("lt-ml06.md")).read_text(encoding="utf-8")
    assert "scope: global" in text and "scope moved from project ml-pipeline to global" in text
    assert run_cli("memories", "move", "lt-ml06", vault=projects_vault).returncode == 2
    assert run_cli("memories", "move", "lt-nope", "--global", vault=projects_vault).returncode == 1
    # once chats are registered with projects, notes of a project no chat ran in are reported
    (projects_vault.state_dir / "conversations.jsonl").write_text(
        json.dumps({"conversation_id": "c", "session_id": "2026-06-01-0930-cursor-main-agent", "project": "shop-api"})
        + "\n",
        encoding="utf-8",
    )
    report = json.loads(run_cli("doctor", "--json", vault=projects_vault).stdout)
    orphans = [f for f in report["findings"] if f["kind"] == "note_project_unknown"]
    assert orphans and all("shop-api" not in f["message"] for f in orphans)
    assert any("web-frontend" in f["message"] for f in orphans)


def test_memories_list_is_scoped_like_context(projects_vault: Vault, tmp_path: Path) -> None:
    """`memories list` (and `search`) answer with the current folder's project's and the global
    memories; another project's, and an unscoped one, only when asked (docs/projects.md)."""
    (projects_vault.longterm_dir / "lt-un01.md").write_text(
        "---\nid: lt-un01\ntitle: Build with make release\ncategory: development_practice_specification\n"
        "scope: unscoped\nimportance: 0.6\nstatus: active\nupdated: 2026-11-02T10:00\n---\nRun make release.\n",
        encoding="utf-8",
    )
    work = tmp_path / "work" / "shop-api"
    work.mkdir(parents=True)

    def listed(*args: str, cwd: Path = work) -> dict:
        proc = run_cli("memories", "list", "--json", *args, vault=projects_vault, cwd=cwd)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
        return json.loads(proc.stdout)

    here = listed()
    applies = {m["id"]: m["applies"] for m in here["memories"]}
    assert len(applies) == 12 and set(applies.values()) == {"project shop-api", "global"}, applies
    assert here["hidden"] == 19 and here["project"] == "shop-api"
    other = {m["id"] for m in listed("--project", "web-frontend")["memories"]}
    assert "lt-web07" in other and not any(i.startswith("lt-sh") for i in other)
    every = listed("--all-projects")["memories"]
    assert (
        len(every) == 31 and {"applies": "unscoped"}.items() <= next(m for m in every if m["id"] == "lt-un01").items()
    )
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    assert {m["applies"] for m in listed(cwd=nowhere)["memories"]} == {"global"}
    text = run_cli("memories", "list", vault=projects_vault, cwd=work).stdout
    assert "(global)" in text and "(19 of other projects or unscoped not shown: --all-projects lists them)" in text
    bad = run_cli("memories", "list", "--project", "nope", vault=projects_vault, cwd=work)
    assert bad.returncode == 2 and "unknown project 'nope'" in bad.stderr
    hits = json.loads(run_cli("memories", "search", "logging", "--json", vault=projects_vault, cwd=work).stdout)
    assert hits and all(h["project"] in ("shop-api", "") for h in hits)
