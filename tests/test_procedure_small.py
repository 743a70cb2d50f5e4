"""Small points of the procedure a user notices (issue 27 item 8): `say` echoes the phrase as typed,
`daemon status` exits as systemd's, and every time property is written with seconds."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
import yaml

from agentmem_vault.model.notes import parse_note
from agentmem_vault.model.triggers import route
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("typed", "echo"),
    [
        ("整理记忆", "整理记忆"),  # Simplified stays Simplified
        ("整理記憶", "整理記憶"),
        ("請幫我 整理 Memory 吧", "整理 Memory"),
        ("Organize Memory please", "Organize Memory"),
        ("狀態更新 2026-06-01-0930-cursor-main-agent", "狀態更新"),
    ],
)
def test_say_names_the_phrase_as_typed(typed: str, echo: str) -> None:
    assert route(typed).phrase == echo


def test_say_prints_the_phrase_as_typed(vault) -> None:
    r = run_cli("say", "整理记忆", "--dry-run", vault=vault)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("(整理记忆 → organize)")
    js = run_cli("--json", "say", "整理记忆", "--dry-run", vault=vault)
    assert json.loads(js.stdout)["phrase"] == "整理记忆"


def test_daemon_status_exits_3_when_no_daemon_runs(vault) -> None:
    r = run_cli("daemon", "status", vault=vault)
    assert r.returncode == 3 and "daemon: not running" in r.stdout, r.stderr
    js = run_cli("daemon", "status", "--json", vault=vault)
    assert js.returncode == 3 and json.loads(js.stdout)["running"] is False


def test_note_times_are_written_with_seconds_and_read_as_datetimes(vault, monkeypatch) -> None:
    from agentmem_vault.longterm.remember import remember

    monkeypatch.setenv("AGENTMEM_NOW", "2026-11-29T15:20")
    res = remember(vault, "Always run pnpm install --frozen-lockfile in CI for this repository", offline=True)
    assert res.to_dict(), res
    [path] = vault.longterm_dir.glob("*.md")
    text = path.read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["created"] == datetime(2026, 11, 29, 15, 20, 0) and front["updated"] == front["created"]
    assert "created: 2026-11-29T15:20:00\n" in text


def test_an_old_note_without_seconds_still_reads() -> None:
    old = (
        "---\nid: lt-1a2b3c\ntitle: Use pnpm\ncategory: code_standard\nstatus: active\n"
        "created: 2026-11-29T15:20\nupdated: 2026-11-30\n---\nUse pnpm in this repository.\n"
    )
    n = parse_note(old)
    assert n.created == "2026-11-29T15:20:00" and n.updated == "2026-11-30T00:00:00"


def test_memory_register_without_content_is_the_clis_manual_registration(vault) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from tests.test_mcp_server import call, drive

    async def scenario(c) -> list[dict]:
        return [await call(c, "memory_register", args) for args in ({}, {"snapshot": ""}, {"snapshot": " \n"})]

    got = drive(vault, scenario)
    cli = run_cli("--json", "register", "--manual", vault=vault)
    assert cli.returncode == 0, cli.stderr
    sids = [g["session_id"] for g in got if not g["error"]] + [json.loads(cli.stdout)["session_id"]]
    assert len(sids) == 4
    from agentmem_vault.board.table import parse_index
    from agentmem_vault.model.snapshot import parse_snapshot

    doc = parse_index(vault.index_path.read_text(encoding="utf-8"))
    for sid in sids:
        row = doc.get(sid)
        assert (row.status, row.topic, row.summary) == ("active", "未設定", "手動補註冊，已建立 session snapshot。")
        assert row.keywords == "manual-registration, cursor-agent, session-snapshot"
        snap = parse_snapshot(vault.session_path(sid).read_text(encoding="utf-8"))
        assert snap.items("Current Context") == ["手動補註冊，已建立 session snapshot。"]  # not a snapshot of None


def test_list_status_archived_lists_the_archived_sessions(vault) -> None:
    snap = "## Current Context\nFinished work.\n"
    sid = json.loads(run_cli("--json", "register", "--manual", "--snapshot", "-", vault=vault, input=snap).stdout)[
        "session_id"
    ]
    assert run_cli("archive", sid, vault=vault).returncode == 0
    r = run_cli("--json", "list", "--status", "archived", vault=vault)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [row["session_id"] for row in json.loads(r.stdout)["rows"]] == [sid]
    human = run_cli("list", "--status", "archived", vault=vault).stdout
    assert sid in human and "archived" in human
    assert sid not in run_cli("list", vault=vault).stdout  # the board itself never shows it
