"""`agentmem context`, `memories search`, `reindex` and the session-start context: budgets, sections, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from agentmem_vault.vault import Vault
from agentmem_vault.recall.context import build_context, relevant_sessions
from agentmem_vault.recall.rank import Hit
from agentmem_vault.recall.render import SessionHit, render_context
from agentmem_vault.recall.session_start import session_start_context
from agentmem_vault.board.table import Row
from recall_helpers import write_corpus
from conftest import run_cli

NOW = "2026-06-01T09:30"
HEADER = (
    "| Session ID | Agent Name | Topic | Summary | Keywords | Status | Referenced By | Started At | Updated At |\n"
    "|---|---|---|---|---|---|---|---|---|\n"
)


def _row(
    sid: str, topic: str, summary: str, status: str = "active", updated: str = "2026-05-30 10:00", kw: str = "-"
) -> str:
    return f"| {sid} | cursor-main-agent | {topic} | {summary} | {kw} | {status} | - | 2026-05-25 13:18 | {updated} |\n"


@pytest.fixture
def filled(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    monkeypatch.setenv("AGENTMEM_NOW", NOW)
    write_corpus(vault.longterm_dir)
    vault.index_path.write_text(
        HEADER
        + _row("2026-05-25-1318-cursor-main-agent", "退款改為異步佇列", "退款超時拖垮閘道的排查", kw="退款, RabbitMQ")
        + _row("2026-05-26-0900-cursor-main-agent", "首页样式", "Tailwind 迁移", updated="2026-05-31 09:00")
        + _row("2026-05-20-0800-cursor-main-agent", "退款 旧讨论", "退款超时", status="idle")
        + _row(
            "2026-04-01-0800-cursor-main-agent",
            "退款 第一版",
            "渠道超时重试",
            status="stale",
            updated="2026-04-02 10:00",
        ),
        encoding="utf-8",
    )
    return vault


def _hit(i: int, content_len: int, rule: bool = False) -> Hit:
    return Hit(
        id=f"lt-{i:06x}",
        title=f"標題 {i} " + "長" * (i % 7),
        path=f"/v/{i}.md",
        score=1.0 / (i + 1),
        importance=0.95 if rule else 0.5,
        category="pitfall",
        updated="2026-05-01T10:00",
        usage_scenario=["修改接口", "排查"],
        sources=["2026-05-25-1318-cursor-main-agent"],
        content=("內容" * content_len)[:content_len] or "x",
        rel_path=f"{i}.md",
    )


@settings(max_examples=200, deadline=None)
@given(
    budget=st.integers(min_value=1, max_value=9000),
    n_rules=st.integers(0, 6),
    n_mem=st.integers(0, 15),
    n_sess=st.integers(0, 6),
    clen=st.integers(0, 3000),
    full=st.integers(0, 5),
)
def test_render_never_exceeds_the_budget(
    budget: int, n_rules: int, n_mem: int, n_sess: int, clen: int, full: int
) -> None:
    rules = [_hit(100 + i, clen, rule=True) for i in range(n_rules)]
    mems = [_hit(i, clen) for i in range(n_mem)]
    sess = [
        SessionHit(f"2026-05-2{i}-1318-cursor-main-agent", "主題" * i, "摘要 " * 30, "active", "2026-05-30 10:00", 0.5)
        for i in range(n_sess)
    ]
    md, r, f, b, s = render_context(rules, mems, sess, budget=budget, full_count=full)
    assert len(md) <= budget
    # every listed item is really in the text, and nothing is listed twice
    for h in r + f + b:
        assert h.id in md
    assert len({h.id for h in f + b}) == len(f) + len(b)
    for x in s:
        assert x.session_id in md
    if budget >= 3000 and n_rules:
        assert r, "rules always get their own share"


def test_context_sections_and_content(filled: Vault) -> None:
    res = build_context(filled, "退款超時 閘道被拖垮", budget=6000)
    md = res.markdown
    assert (
        md.index("## Rules that always apply")
        < md.index("## Relevant memories")
        < md.index("## Sessions you may continue")
    )
    # rule index: importance >= 0.9 always there, even when unrelated to the task
    assert "Never force-push to main" in md and "回覆使用繁體中文" in md
    assert all(h.importance >= 0.9 for h in res.rules) and len(res.rules) == 8
    # the strongest memory in full: content, where it applies, source session, id
    top = res.full[0]
    assert top.title == "退款走异步队列，不在请求线程里调用渠道"
    assert "refund-worker" in md and "Applies when:" in md and "[[2026-05-25-1318-cursor-main-agent]]" in md
    assert top.id in md
    # sessions: active/stale rows relevant to the task, with their IDs; idle rows are not listed
    ids = [s.session_id for s in res.sessions]
    assert ids[0] == "2026-05-25-1318-cursor-main-agent" and "2026-04-01-0800-cursor-main-agent" in ids
    assert "2026-05-20-0800-cursor-main-agent" not in md and "2026-05-26-0900-cursor-main-agent" not in ids
    # deprecated memories never show
    assert "旧方案" not in md
    assert len(md) <= 6000


def test_context_budget_is_respected_and_rules_keep_their_share(filled: Vault) -> None:
    for budget in (200, 700, 1500, 4000):
        res = build_context(filled, "注册 验证码 短信", budget=budget)
        assert len(res.markdown) <= budget
    small = build_context(filled, "注册 验证码 短信", budget=1500)
    assert small.rules and "## Rules that always apply" in small.markdown
    assert small.full or small.brief


def test_unrelated_task_lists_no_memories_but_recent_sessions(filled: Vault) -> None:
    res = build_context(filled, "量子计算 光刻机", budget=3000)
    assert not res.full and not res.brief
    assert res.sessions and all(s.recent_only for s in res.sessions)
    assert "## Recent active sessions" in res.markdown


def test_relevant_sessions_ignores_single_common_token() -> None:
    rows = [
        Row(
            "2026-05-25-1318-cursor-main-agent",
            "a",
            "支付回调幂等改造",
            "重复入账",
            "-",
            "active",
            "-",
            "",
            "2026-05-30 10:00",
        ),
        Row(
            "2026-05-25-1319-cursor-main-agent", "a", "接口文档", "补充说明", "-", "active", "-", "", "2026-05-31 10:00"
        ),
    ]
    got = relevant_sessions(rows, "支付回调 幂等 接口")
    assert [s.session_id for s in got] == ["2026-05-25-1318-cursor-main-agent"]


def test_cli_context_respects_budget_and_json(filled: Vault) -> None:
    env = {"AGENTMEM_NOW": NOW}
    for budget in ("300", "1200", "5000"):
        p = run_cli("context", "退款超時 閘道", "--budget", budget, "--all-projects", vault=filled, env=env)
        assert p.returncode == 0, p.stderr
        assert len(p.stdout.rstrip("\n")) <= int(budget)
        assert p.stdout.strip()
    p = run_cli(
        "context", "退款超時", "--budget", "2000", "--limit", "2", "--json", "--all-projects", vault=filled, env=env
    )
    d = json.loads(p.stdout)
    assert d["chars"] == len(d["markdown"]) <= 2000 and len(d["memories_full"]) + len(d["memories_brief"]) <= 2
    assert d["sessions"][0]["session_id"] == "2026-05-25-1318-cursor-main-agent"
    bad = run_cli("context", "x", "--budget", "0", vault=filled, env=env)
    assert bad.returncode == 2


def test_cli_memories_search_json_and_reindex(filled: Vault) -> None:
    env = {"AGENTMEM_NOW": NOW}
    p = run_cli(
        "memories", "search", "註冊 簡訊驗證碼", "--limit", "3", "--json", "--all-projects", vault=filled, env=env
    )
    assert p.returncode == 0, p.stderr
    hits = json.loads(p.stdout)
    assert 1 <= len(hits) <= 3
    assert {"id", "title", "path", "score"} <= set(hits[0])
    assert hits[0]["title"] == "用户注册必须先校验短信验证码" and hits[0]["id"].startswith("lt-")
    assert Path(hits[0]["path"]).is_file()
    assert hits == sorted(hits, key=lambda h: -h["score"])
    human = run_cli("memories", "search", "Redis 分布式锁", "--all-projects", vault=filled, env=env)
    assert "分布式锁" in human.stdout.splitlines()[0]
    assert run_cli("memories", "search", "  ", vault=filled, env=env).returncode == 2
    r = run_cli("reindex", "--json", vault=filled, env=env)
    d = json.loads(r.stdout)
    assert r.returncode == 0 and d["total"] >= 150 and d["rebuilt"] is True
    # without a vault: a clear error, not a traceback
    nov = run_cli("--vault", str(filled.root / "nope"), "memories", "search", "x")
    assert nov.returncode != 0 and "Traceback" not in nov.stderr


def test_session_start_context_reads_prebuilt_index_fast_and_fresh(filled: Vault) -> None:
    assert "Never force-push" not in session_start_context(filled)  # no index yet: no rules, no build
    build_context(filled, "anything")  # builds the index
    text = session_start_context(filled, budget=1500)
    assert len(text) <= 1500
    assert "## Long-term rules (agentmem)" in text and "Never force-push to main" in text
    assert "## Recent active sessions" in text and "2026-05-26-0900-cursor-main-agent" in text
    assert "2026-05-20-0800-cursor-main-agent" not in text  # idle
    own = session_start_context(filled, exclude=["2026-05-26-0900-cursor-main-agent"])
    assert "2026-05-26-0900-cursor-main-agent" not in own
    # a rule edited or deleted in Obsidian since the last sync: never the stale text (the hook
    # does not parse notes); the edit shows after the next sync
    rule = next(p for p in filled.longterm_dir.iterdir() if p.name.startswith("Never force-push"))
    rule.write_text(
        rule.read_text(encoding="utf-8")
        .replace("open a pull request", "OPEN A PR NOW")
        .replace("Open a pull request", "OPEN A PR NOW"),
        encoding="utf-8",
    )
    edited = session_start_context(filled, budget=4000)
    assert "Never force-push" not in edited and "OPEN A PR NOW" not in edited
    build_context(filled, "anything")  # syncs the index
    assert "OPEN A PR NOW" in session_start_context(filled, budget=4000)
    rule.unlink()
    assert "Never force-push" not in session_start_context(filled)
    for b in (0, 50, 300):
        assert len(session_start_context(filled, budget=b)) <= b


def test_session_start_path_imports_nothing_heavy(filled: Vault) -> None:
    build_context(filled, "anything")
    code = (
        "import sys, time\nfrom pathlib import Path\nt = time.perf_counter()\n"
        "from agentmem_vault.config import Vault\nfrom agentmem_vault.recall import session_start_context\n"
        "out = session_start_context(Vault(Path(sys.argv[1])))\n"
        "heavy = sorted(m for m in ('yaml', 'frontmatter', 'anthropic', 'watchdog', 'click', 'hanziconv') if m in sys.modules)\n"
        "print(heavy, len(out) > 0)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(filled.root)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[] True"


def test_session_start_never_raises(tmp_path: Path) -> None:
    v = Vault(tmp_path / "no-vault")
    assert session_start_context(v) == ""
    (tmp_path / "v2" / "memory" / ".agentmem" / "recall").mkdir(parents=True)
    (tmp_path / "v2" / "memory" / ".agentmem" / "recall" / "index.sqlite3").write_bytes(b"junk" * 100)
    (tmp_path / "v2" / "memory" / "index.md").write_text("| broken", encoding="utf-8")
    assert session_start_context(Vault(tmp_path / "v2")) == ""


def test_recall_commands_have_help_text() -> None:
    import click

    from agentmem_vault.cli import cli, memories

    cli.list_commands(click.Context(cli))  # commands register when their module is imported (lazily)
    memories.list_commands(click.Context(memories))
    for cmd in (cli.commands["context"], cli.commands["reindex"], memories.commands["search"]):
        assert cmd.help and len(cmd.help.strip()) > 20
        for p in cmd.params:
            if getattr(p, "param_type_name", "") == "option":
                assert p.help, f"{cmd.name} {p.name} lacks help"


def test_cli_project_scoping(filled: Vault) -> None:
    env = {"AGENTMEM_NOW": NOW}
    p = run_cli("memories", "search", "限流 驗證碼 登入", "--project", "mobile", "--json", vault=filled, env=env)
    hits = json.loads(p.stdout)
    assert hits and all(h["project"] in ("", "mobile") for h in hits)
