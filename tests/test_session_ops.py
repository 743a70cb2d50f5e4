"""update / continue / release / register --manual end to end (real CLI subprocesses, real files)."""

from __future__ import annotations

import json
import stat

import pytest

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault
from agentmem_vault.board.register import register_idle
from agentmem_vault.model.snapshot import parse_snapshot

from conftest import run_cli

T0 = {"AGENTMEM_NOW": "2026-06-01T09:30"}
T1 = {"AGENTMEM_NOW": "2026-06-02T10:00"}
T2 = {"AGENTMEM_NOW": "2026-06-03T11:00"}


def row(v: Vault, sid: str) -> it.Row:
    return it.parse_index(v.index_path.read_text(encoding="utf-8")).get(sid)


def snap(v: Vault, sid: str):
    return parse_snapshot(v.session_path(sid).read_text(encoding="utf-8"))


def files(v: Vault) -> dict[str, bytes]:
    return {
        str(p.relative_to(v.root)): p.read_bytes()
        for p in v.memory.rglob("*")
        if p.is_file() and ".agentmem" not in p.parts
    }


FIRST = """# Session: {sid}

## Metadata
| Field | Value |
|---|---|
| Session ID | {sid} |
| Agent Name | cursor-main-agent |
| Topic | Snapshot merge |
| Status | active |
| Started At | 2026-06-01 09:30 |
| Updated At | 2026-06-01 09:30 |

## Current Context
Working on the merge engine.

## Decisions
- A: keep old facts
- B: store marks inline

## Files / Artifacts
- F1.py

## Open Questions
- Q1: which similarity threshold?

## Next Actions
- N1: write the scenario test

## Continues From
None

## Superseded / Resolved
None
"""

SECOND = """## Current Context
Merge engine done; now wiring the CLI.

## Decisions
- C: move marked items with their origin
- [superseded] B: store marks inline

## Files / Artifacts
- F1.py
- F2.py

## Open Questions
- [resolved] Q1: which similarity threshold?

## Next Actions
- [done] N1: write the scenario test
"""


@pytest.fixture
def idle(vault: Vault) -> str:
    import os

    os.environ["AGENTMEM_NOW"] = T0["AGENTMEM_NOW"]
    try:
        return register_idle(vault, "cursor-main-agent").session_id
    finally:
        del os.environ["AGENTMEM_NOW"]


def test_update_creates_then_merges(vault: Vault, idle: str) -> None:
    p = run_cli("update", idle, "--topic", "Snapshot merge", vault=vault, input=FIRST.format(sid=idle), env=T0)
    assert p.returncode == 0, p.stderr
    r = row(vault, idle)
    assert (r.status, r.topic, r.started_at) == ("active", "Snapshot merge", "2026-06-01 09:30")
    assert r.summary == "Working on the merge engine."  # placeholder Summary replaced from Current Context

    p = run_cli("update", idle, "--snapshot", "-", "--json", vault=vault, input=SECOND, env=T1)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["snapshot_created"] is False and out["snapshot_changed"] is True
    s = snap(vault, idle)
    assert s.items("Decisions") == ["A: keep old facts", "C: move marked items with their origin"]
    assert s.items("Files / Artifacts") == ["F1.py", "F2.py"]
    assert s.items("Open Questions") == [] and s.items("Next Actions") == []
    moved = s.items("Superseded / Resolved")
    assert "[superseded] (Decisions) B: store marks inline" in moved
    assert "[resolved] (Open Questions) Q1: which similarity threshold?" in moved
    assert "[done] (Next Actions) N1: write the scenario test" in moved
    assert s.metadata["Started At"] == "2026-06-01 09:30" and s.metadata["Updated At"] == "2026-06-02 10:00"
    r = row(vault, idle)
    assert (r.status, r.started_at, r.updated_at, r.referenced_by) == (
        "active",
        "2026-06-01 09:30",
        "2026-06-02 10:00",
        "-",
    )

    # the same input again: nothing changes but Updated At (the update is recorded)
    before = files(vault)
    p = run_cli("update", idle, "--json", vault=vault, input=SECOND, env=T2)
    assert p.returncode == 0 and json.loads(p.stdout)["snapshot_changed"] is False
    after = files(vault)
    key = f"memory/sessions/{idle}.md"
    assert after[key] == before[key].replace(
        b"| Updated At | 2026-06-02 10:00 |", b"| Updated At | 2026-06-03 11:00 |"
    ).replace(b"updated: 2026-06-02T10:00:00", b"updated: 2026-06-03T11:00:00")  # the frontmatter mirrors the table
    assert row(vault, idle).updated_at == "2026-06-03 11:00"
    assert after["memory/index.md"] == before["memory/index.md"].replace(b"2026-06-02 10:00 |", b"2026-06-03 11:00 |")


def test_update_chinese_marks(vault: Vault, idle: str) -> None:
    first = "## Current Context\n整理合併規則。\n\n## Decisions\n- 甲：保留舊決策\n- 乙：標記寫在行內\n\n## Files / Artifacts\n- 檔案一.md\n\n## Open Questions\n- 問題一：門檻要設多少？\n\n## Next Actions\n- 下一步一：寫測試\n"
    second = "## Decisions\n- 丙：移動時註明來源\n- [已取代] 乙：標記寫在行內\n\n## Files / Artifacts\n- 檔案一.md\n- 檔案二.md\n\n## Open Questions\n- [已解決] 問題一：門檻要設多少？\n\n## Next Actions\n- [已完成] 下一步一：寫測試\n"
    assert run_cli("update", idle, "--topic", "合併規則", vault=vault, input=first, env=T0).returncode == 0
    assert run_cli("update", idle, vault=vault, input=second, env=T1).returncode == 0
    s = snap(vault, idle)
    assert s.items("Decisions") == ["甲：保留舊決策", "丙：移動時註明來源"]
    assert s.items("Files / Artifacts") == ["檔案一.md", "檔案二.md"]
    moved = s.items("Superseded / Resolved")
    assert "[已取代] (Decisions) 乙：標記寫在行內" in moved
    assert "[已解決] (Open Questions) 問題一：門檻要設多少？" in moved
    assert "[已完成] (Next Actions) 下一步一：寫測試" in moved
    assert row(vault, idle).topic == "合併規則"


@pytest.mark.parametrize(
    "payload, code", [("   \n", "snapshot_malformed"), ("\x00\x01 garbage ###", "snapshot_malformed")]
)
def test_update_rejects_empty_or_garbled_snapshot(vault: Vault, idle: str, payload: str, code: str) -> None:
    assert run_cli("update", idle, vault=vault, input=FIRST.format(sid=idle), env=T0).returncode == 0
    before = files(vault)
    p = run_cli("update", idle, "--snapshot", "-", "--json", vault=vault, input=payload, env=T1)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["code"] == code
    assert files(vault) == before


def test_update_rejects_other_session_id(vault: Vault, idle: str) -> None:
    assert run_cli("update", idle, vault=vault, input=FIRST.format(sid=idle), env=T0).returncode == 0
    before = files(vault)
    p = run_cli("update", idle, vault=vault, input=FIRST.format(sid="2026-01-01-0000-someone-else"), env=T1)
    assert p.returncode == 1 and "2026-01-01-0000-someone-else" in p.stderr
    assert files(vault) == before


def test_update_unknown_and_bad_ids(vault: Vault) -> None:
    before = files(vault)
    p = run_cli("update", "2026-01-01-0000-nobody", vault=vault, input=SECOND)
    assert p.returncode == 1 and "no row" in p.stderr
    p = run_cli("update", "../../etc/passwd", vault=vault, input=SECOND)
    assert p.returncode == 1 and "invalid Session ID" in p.stderr
    assert files(vault) == before


def test_update_without_snapshot_on_new_session_is_refused(vault: Vault, idle: str) -> None:
    before = files(vault)
    p = run_cli("update", idle, vault=vault, input="", env=T1)
    assert p.returncode == 2 and "no snapshot yet" in p.stderr
    assert files(vault) == before


def test_update_rolls_back_snapshot_when_row_write_fails(vault: Vault, idle: str) -> None:
    assert run_cli("update", idle, vault=vault, input=FIRST.format(sid=idle), env=T0).returncode == 0
    before = files(vault)
    mode = vault.index_path.stat().st_mode
    vault.index_path.chmod(stat.S_IRUSR)
    try:
        p = run_cli("update", idle, vault=vault, input=SECOND, env=T1)
    finally:
        vault.index_path.chmod(mode)
    assert p.returncode == 1 and "incomplete" in p.stderr
    assert p.stderr.count("nothing was") == 1, p.stderr  # said once, not "nothing was written (nothing was changed)"
    assert files(vault) == before


def test_register_manual_writes_row_and_snapshot(vault: Vault) -> None:
    p = run_cli(
        "register",
        "--manual",
        "--topic",
        "手動註冊測試",
        "--snapshot",
        "-",
        "--json",
        vault=vault,
        input="## Current Context\n補註冊這個對話。\n\n## Decisions\n- 用 CLI 註冊\n",
        env=T0,
    )
    assert p.returncode == 0, p.stderr
    sid = json.loads(p.stdout)["session_id"]
    r = row(vault, sid)
    assert (r.status, r.keywords, r.topic) == (
        "active",
        "manual-registration, cursor-agent, session-snapshot",
        "手動註冊測試",
    )
    s = snap(vault, sid)
    assert s.session_id == sid and s.items("Decisions") == ["用 CLI 註冊"] and s.metadata["Status"] == "active"


def test_register_manual_failure_prints_no_id_and_leaves_nothing(vault: Vault) -> None:
    vault.sessions_dir.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        before = files(vault)
        p = run_cli("register", "--manual", vault=vault, env=T0)
    finally:
        vault.sessions_dir.chmod(0o755)
    assert p.returncode == 1 and "Session ID is" not in p.stdout
    assert files(vault) == before


def test_continue_and_release_bookkeeping(vault: Vault, idle: str) -> None:
    assert (
        run_cli("update", idle, "--topic", "來源工作", vault=vault, input=FIRST.format(sid=idle), env=T0).returncode
        == 0
    )
    source = idle
    cur = json.loads(run_cli("register", "--json", vault=vault, env=T1).stdout)["session_id"]
    p = run_cli("continue", source, "--session", cur, "--json", vault=vault, env=T1)
    assert p.returncode == 0, p.stderr
    assert row(vault, source).referenced_by == cur
    assert row(vault, source).updated_at == "2026-06-01 09:30"  # source's other fields unchanged
    assert snap(vault, cur).continues_from == [source]
    assert row(vault, cur).status == "active"
    # idempotent
    before = files(vault)
    assert run_cli("continue", source, "--session", cur, vault=vault, env=T2).returncode == 0
    assert files(vault) == before
    # a second referencing session
    third = json.loads(run_cli("continue", source, "--json", vault=vault, env=T2).stdout)
    assert third["registered"]
    assert row(vault, source).referenced_by == f"{cur}, {third['session_id']}"
    # release one
    p = run_cli("release", source, "--session", cur, vault=vault, env=T2)
    assert p.returncode == 0, p.stderr
    assert row(vault, source).referenced_by == third["session_id"]
    assert snap(vault, cur).continues_from == []
    assert "## Continues From\nNone" in vault.session_path(cur).read_text(encoding="utf-8")
    before = files(vault)
    assert run_cli("release", source, "--session", cur, vault=vault, env=T2).returncode == 0
    assert files(vault) == before
    run_cli("release", source, "--session", third["session_id"], vault=vault, env=T2)
    assert row(vault, source).referenced_by == "-"


def test_continue_unknown_source_changes_nothing(vault: Vault, idle: str) -> None:
    before = files(vault)
    p = run_cli("continue", "2026-01-01-0000-ghost", "--session", idle, vault=vault)
    assert p.returncode == 1 and "2026-01-01-0000-ghost" in p.stderr
    assert files(vault) == before


def test_crlf_snapshot_stays_crlf(vault: Vault, idle: str) -> None:
    vault.session_path(idle).write_bytes(("\ufeff" + FIRST.format(sid=idle)).replace("\n", "\r\n").encode("utf-8"))
    assert run_cli("update", idle, vault=vault, input=SECOND, env=T1).returncode == 0
    data = vault.session_path(idle).read_bytes()
    assert data.startswith("\ufeff".encode()) and b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert "C: move marked items with their origin" in snap(vault, idle).items("Decisions")


def test_continue_with_registration_is_all_or_nothing(vault: Vault, idle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # `continue SOURCE` without --session registers the current chat first. If the bookkeeping then
    # fails, the new row and snapshot must go too: their ID was never reported to the agent.
    from agentmem_vault.errors import WriteFailed
    from agentmem_vault.ops.sessions import IncompleteOperation, continue_session
    from agentmem_vault.board.store import BoardWriter

    monkeypatch.setenv("AGENTMEM_NOW", T1["AGENTMEM_NOW"])
    before = files(vault)
    real = BoardWriter.update_row

    def failing(self, session_id, change, **kw):
        if session_id == idle:
            raise WriteFailed("disk full")
        return real(self, session_id, change, **kw)

    monkeypatch.setattr(BoardWriter, "update_row", failing)
    with pytest.raises(IncompleteOperation):
        continue_session(vault, idle, agent="cursor-main-agent")
    assert files(vault) == before


def test_continue_refuses_a_snapshot_of_another_session(vault: Vault, idle: str) -> None:
    cur = json.loads(run_cli("register", "--json", vault=vault, env=T1).stdout)["session_id"]
    before = files(vault)
    other = FIRST.format(sid="2026-01-01-0000-someone-else")
    p = run_cli("continue", idle, "--session", cur, "--snapshot", "-", "--json", vault=vault, input=other, env=T1)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["code"] == "snapshot_malformed"
    assert files(vault) == before


def test_update_on_damaged_index_says_nothing_was_written_once(vault: Vault, idle: str) -> None:
    with vault.index_path.open("a", encoding="utf-8") as f:
        f.write("| 2026-05-25-1318-x | x | t |\n")  # a short row: no command changes the table until repaired
    before = files(vault)
    p = run_cli("update", idle, vault=vault, input=FIRST.format(sid=idle), env=T0)
    assert p.returncode == 1 and "row has 3 cells" in p.stderr
    assert p.stderr.lower().count("nothing was") == 1, p.stderr
    assert files(vault) == before
