"""Scope from the source, end to end (docs/projects.md): two git repositories, chats registered
by the real hook and by the CLI, a global preference; no note of one project reaches the other
project's chat, the preference reaches both, an unknown source's rule reaches neither."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.longterm.notes import load_notes
from conftest import run_cli
from hooks_helpers import answer, context_of, cursor_start, hook_env, id_from, run_hook

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}


def _repo(path: Path, remote: str) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=GIT_ENV, timeout=60)
    subprocess.run(["git", "remote", "add", "origin", remote], cwd=path, check=True, env=GIT_ENV, timeout=60)
    return path


def _start(vault: Vault, ws: Path, conv: str) -> tuple[str, str]:
    proc = run_hook(
        "cursor-session-start", cursor_start(ws, conv=conv), cwd=ws, args=["--vault", str(vault.root)], env=hook_env()
    )
    ans = answer(proc)
    return id_from(ans), context_of(ans)


def _claude_transcript(folder: Path, cwd: Path, text: str) -> Path:
    p = folder / "t.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {"type": "user", "cwd": str(cwd), "message": {"role": "user", "content": text}},
        {
            "type": "assistant",
            "cwd": str(cwd),
            "message": {"role": "assistant", "content": [{"type": "text", "text": "好"}]},
        },
    ]
    p.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return p


@needs_git
def test_no_note_of_one_project_reaches_the_other_projects_chat(vault: Vault, tmp_path: Path) -> None:
    billing = _repo(tmp_path / "code" / "billing", "git@github.com:acme/billing-svc.git")
    blog = _repo(tmp_path / "code" / "blog", "git@github.com:acme/trail-blog.git")
    env = {"AGENTMEM_NOW": "2026-12-01T20:06:41"}

    # billing-svc: a chat registered by the hook, its snapshot's decision
    sid, _ = _start(vault, billing, "c-billing")
    snap = "## Decisions\n- 對外 webhook 一律帶 Idempotency-Key，接收端以此去重\n"
    assert run_cli("update", sid, "--snapshot", "-", vault=vault, input=snap, cwd=billing).returncode == 0
    # trail-blog: a chat registered by hand through the CLI, run in the blog's folder
    reg = run_cli("register", "--manual", "--json", vault=vault, cwd=blog)
    assert reg.returncode == 0, reg.stderr
    blog_sid = json.loads(reg.stdout)["session_id"]
    snap = "## Decisions\n- 圖片一律放在 src/assets/posts/ 下面，不要放 public/\n"
    assert run_cli("update", blog_sid, "--snapshot", "-", vault=vault, input=snap, cwd=blog).returncode == 0
    # a preference said in a billing chat, and a rule from a text that records no workspace
    t = _claude_transcript(
        tmp_path / ".claude" / "projects" / "-code-billing", billing, "記住：以後回答一律用繁體中文。"
    )
    loose = tmp_path / "loose.txt"
    loose.write_text(
        "user: Remember: always run `./scripts/check-env.sh` before `terraform apply`.\n", encoding="utf-8"
    )
    for args in (["--session", sid, "--session", blog_sid], ["--file", str(t)], ["--file", str(loose)]):
        p = run_cli("extract", "--offline", "--json", *args, vault=vault, env=env)
        assert p.returncode == 0, p.stdout + p.stderr

    notes = {n.title: n for n in load_notes(vault)}
    webhook = next(n for t_, n in notes.items() if "Idempotency-Key" in t_)
    images = next(n for t_, n in notes.items() if "src/assets/posts" in t_)
    pref = next(n for t_, n in notes.items() if "繁體中文" in t_)
    loose_note = next(n for t_, n in notes.items() if "check-env.sh" in t_)
    assert (webhook.project, webhook.scope) == ("billing-svc", "project")
    assert webhook.category == "important_decision_experience"  # a snapshot's Decisions item
    assert (images.project, images.scope) == ("trail-blog", "project")
    assert (pref.project, pref.scope) == ("", "global")
    assert (loose_note.project, loose_note.scope) == ("", "unscoped")
    assert webhook.sources == [f"[[{sid}]]"] and images.sources == [f"[[{blog_sid}]]"]
    # the chats: each project sees its own notes and the global preference, never the other's
    for imp in (webhook, images, pref, loose_note):
        assert imp.importance >= 0.7
    run_cli("reindex", vault=vault)

    def shown(task: str, folder: Path) -> str:
        p = run_cli("context", task, "--json", vault=vault, cwd=folder)
        assert p.returncode == 0, p.stderr
        return p.stdout

    assert webhook.id in shown("webhook Idempotency-Key 重送", billing)
    assert webhook.id not in shown("webhook Idempotency-Key 重送", blog)
    assert images.id in shown("圖片 src/assets/posts public", blog)
    assert images.id not in shown("圖片 src/assets/posts public", billing)
    assert pref.id in shown("回答 繁體中文", billing) and pref.id in shown("回答 繁體中文", blog)
    assert loose_note.id not in shown("terraform check-env.sh", billing) + shown("terraform check-env.sh", blog)
    _, start_billing = _start(vault, billing, "c-billing-2")
    _, start_blog = _start(vault, blog, "c-blog-2")
    assert "繁體中文" in start_billing and "繁體中文" in start_blog  # the global preference: a rule in both
    assert "Idempotency-Key" not in start_blog and "src/assets/posts" not in start_billing
    assert "check-env.sh" not in start_billing + start_blog
    # the unscoped note is listed by doctor, and placed by memories move
    report = json.loads(run_cli("doctor", "--json", vault=vault).stdout)
    assert any(loose_note.id in f["message"] for f in report["findings"] if f["kind"] == "note_unscoped")
    assert run_cli("memories", "move", loose_note.id, "--project", "billing-svc", vault=vault).returncode == 0
    assert loose_note.id in shown("terraform check-env.sh", billing)


@needs_git
def test_a_note_from_a_hook_registered_chat_links_its_session(vault: Vault, tmp_path: Path) -> None:
    shop = _repo(tmp_path / "code" / "shop", "git@github.com:acme/shop-api.git")
    sid, _ = _start(vault, shop, "c0ffee00-1111-4c2b-8a55-6e7f8a9b0c1d")
    t = tmp_path / ".cursor" / "projects" / "code-shop" / "agent-transcripts" / "c0ffee00-1111-4c2b-8a55-6e7f8a9b0c1d"
    t.mkdir(parents=True)
    f = t / "c0ffee00-1111-4c2b-8a55-6e7f8a9b0c1d.jsonl"
    said = {
        "role": "user",
        "message": {"content": [{"type": "text", "text": "<user_query>記住：這個專案一律用 pnpm</user_query>"}]},
    }
    f.write_text(json.dumps(said, ensure_ascii=False) + "\n", encoding="utf-8")
    p = run_cli("extract", "--offline", "--json", "--file", str(f), vault=vault)
    assert p.returncode == 0, p.stdout + p.stderr
    (n,) = load_notes(vault)
    assert n.sources == [f"[[{sid}]]"]
    assert (n.project, n.scope) == ("shop-api", "project")  # the hook's workspace for this chat
    assert n.id in run_cli("context", "pnpm", vault=vault, cwd=shop).stdout


def test_context_links_sessions_never_transcript_references() -> None:
    from agentmem_vault.recall.render import render_full
    from agentmem_vault.recall.rank import Hit

    h = Hit(
        id="lt-1",
        title="t",
        path="p",
        score=1.0,
        content="c",
        sources=["2026-06-01-0930-cursor-main-agent", "cursor:abc"],
    )
    text = render_full(h)
    assert "[[2026-06-01-0930-cursor-main-agent]]" in text and "cursor:abc" in text and "[[cursor:" not in text


def test_the_always_on_rules_have_a_budget(vault: Vault, tmp_path: Path) -> None:
    from agentmem_vault.recall.render import RULES_BUDGET

    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    for i in range(RULES_BUDGET + 5):
        (vault.longterm_dir / f"rule {i}.md").write_text(
            f"---\nid: lt-r{i:04d}\ntitle: rule number {i}\ncategory: user_communication\nimportance: 0.95\n"
            f"scope: global\nstatus: active\n---\nAlways do thing {i}.\n",
            encoding="utf-8",
        )
    run_cli("reindex", vault=vault)
    ws = tmp_path / "ws"
    ws.mkdir()
    _, ctx = _start(vault, ws, "c-budget")
    assert 1 <= ctx.count("lt-r") <= RULES_BUDGET
    p = run_cli("context", "anything at all", "--json", vault=vault, cwd=ws)
    assert len(json.loads(p.stdout)["rules"]) <= RULES_BUDGET


@needs_git
def test_a_session_registered_over_mcp_takes_the_project_of_its_folder(vault: Vault, tmp_path: Path) -> None:
    from test_recall_fresh import _mcp

    shop = _repo(tmp_path / "code" / "shop", "git@github.com:acme/shop-api.git")
    (reg,) = _mcp(vault, [("memory_register", {"topic": "checkout"})], shop)
    assert not reg.is_error, reg.structured_content
    sid = reg.structured_content["session_id"]
    snap = "## Decisions\n- 結帳流程一律走 Stripe Checkout，不自建付款頁\n"
    (upd,) = _mcp(vault, [("memory_update", {"session_id": sid, "snapshot": snap})], shop)
    assert not upd.is_error, upd.structured_content
    assert "| Project | shop-api |" in vault.session_path(sid).read_text(encoding="utf-8")
    p = run_cli("extract", "--offline", "--json", "--session", sid, vault=vault)
    assert p.returncode == 0, p.stdout + p.stderr
    (n,) = load_notes(vault)
    assert (n.project, n.scope, n.sources) == ("shop-api", "project", [f"[[{sid}]]"])
