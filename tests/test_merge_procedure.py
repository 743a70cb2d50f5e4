"""The procedure's merge rule per section (docs/snapshots.md): nothing whose text differs from
every incoming item is dropped; a revised decision keeps the old text marked [superseded]; union
sections keep both; only a restatement stays one item; the report names what was marked."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.board.table import parse_index
from agentmem_vault.model.snapshot import Snapshot, parse_snapshot
from agentmem_vault.model.snapshot_merge import merge_snapshots, verify_merge
from agentmem_vault.model.snapshot_merge import marked_by_merge
from tests.conftest import run_cli

SID = "2026-06-01-0930-cursor-main-agent"


def snap(**sections: list[str]) -> Snapshot:
    body = "".join(
        f"## {name.replace('_', ' ').title().replace('Files', 'Files / Artifacts')}\n"
        + "".join(f"- {i}\n" for i in items)
        for name, items in sections.items()
    )
    return parse_snapshot(f"# Session: {SID}\n\n{body}")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Retry up to 5 times with exponential backoff", "Retry up to 8 times with exponential backoff"),
        ("重試最多 5 次，使用指數退避", "重試最多 8 次，使用指數退避"),  # zh-TW
        ("重试最多 5 次，使用指数退避", "重试最多 8 次，使用指数退避"),  # zh-CN
        ("快取用 SQLite 儲存", "快取用 Postgres 儲存"),  # a changed word, not a number
        ("Use SQLite for the index cache", "Use Postgres for the index cache"),
    ],
)
def test_a_revised_decision_keeps_the_old_text_marked_superseded(old: str, new: str) -> None:
    before = snap(decisions=[old, "Keep the journal"])
    merged = merge_snapshots(before, snap(decisions=[new]), updated_at="2026-06-02 10:00")
    assert merged.items("Decisions") == [new, "Keep the journal"]
    assert merged.items("Superseded / Resolved") == [f"[superseded] (Decisions) {old}"]
    assert marked_by_merge(before, merged) == [f"[superseded] (Decisions) {old}"]
    assert verify_merge(before, merged) == []
    # idempotent: the same update again changes nothing
    assert merge_snapshots(merged, snap(decisions=[new]), updated_at="2026-06-02 10:00") == merged


@pytest.mark.parametrize("section", ["next_actions", "open_questions", "files"])
def test_union_sections_keep_items_that_differ_in_a_number(section: str) -> None:
    old, new = "Fix flaky test in issue #1234", "Fix flaky test in issue #1235"
    if section == "files":
        old, new = "docs/release-2026-05.md", "docs/release-2026-06.md"
    heading = {"next_actions": "Next Actions", "open_questions": "Open Questions", "files": "Files / Artifacts"}
    before = snap(**{section: [old]})
    merged = merge_snapshots(before, snap(**{section: [new]}), updated_at="t")
    assert merged.items(heading[section]) == [old, new]
    assert merged.items("Superseded / Resolved") == []
    assert marked_by_merge(before, merged) == []


def test_a_restatement_stays_one_item_in_every_section() -> None:
    before = snap(decisions=["決定使用 SQLite 儲存索引"], next_actions=["Write the tests."])
    merged = merge_snapshots(
        before, snap(decisions=["决定使用SQLite储存索引"], next_actions=["**write the tests**"]), updated_at="t"
    )
    assert merged.items("Decisions") == ["決定使用 SQLite 儲存索引"]
    assert merged.items("Next Actions") == ["Write the tests."]
    assert merged.items("Superseded / Resolved") == []


def test_a_revised_context_paragraph_is_kept_marked_and_an_extended_one_replaced() -> None:
    before = parse_snapshot(
        f"# Session: {SID}\n\n## Current Context\nThe parser handles CRLF files.\n\n快取目前存 5 分鐘。\n"
    )
    inc = parse_snapshot("## Current Context\nThe parser handles CRLF files and a BOM.\n\n快取目前存 30 分鐘。\n")
    merged = merge_snapshots(before, inc, updated_at="t")
    assert merged.items("Current Context") == ["The parser handles CRLF files and a BOM.", "快取目前存 30 分鐘。"]
    assert merged.items("Superseded / Resolved") == ["[superseded] (Current Context) 快取目前存 5 分鐘。"]
    assert verify_merge(before, merged) == []


def test_verification_refuses_a_merge_that_dropped_a_near_duplicate() -> None:
    before = snap(decisions=["Retry up to 5 times with exponential backoff"], next_actions=["Fix issue #1234"])
    lost = snap(decisions=["Retry up to 8 times with exponential backoff"], next_actions=["Fix issue #1235"])
    assert verify_merge(before, lost) == [
        "Decisions: Retry up to 5 times with exponential backoff",
        "Next Actions: Fix issue #1234",
    ]


def _board_row(v, sid: str):
    return parse_index((v.memory / "index.md").read_text(encoding="utf-8")).get(sid)


def test_update_reports_the_marked_item_and_rederives_the_summary(vault) -> None:
    env = {"AGENTMEM_NOW": "2026-06-01T09:30"}
    first = (
        "## Current Context\nRetries use 5 attempts.\n\n## Decisions\n- Retry up to 5 times with exponential backoff\n"
    )
    reg = run_cli("--json", "register", "--manual", "--snapshot", "-", vault=vault, input=first, env=env)
    assert reg.returncode == 0, reg.stderr
    sid = json.loads(reg.stdout)["session_id"]
    assert _board_row(vault, sid).summary == "Retries use 5 attempts."
    second = (
        "## Current Context\nRetries use 8 attempts.\n\n## Decisions\n- Retry up to 8 times with exponential backoff\n"
    )
    env["AGENTMEM_NOW"] = "2026-06-01T10:00"
    up = run_cli("update", sid, "--snapshot", "-", vault=vault, input=second, env=env)
    assert up.returncode == 0, up.stderr
    assert "marked: [superseded] (Decisions) Retry up to 5 times with exponential backoff" in up.stdout
    assert _board_row(vault, sid).summary == "Retries use 8 attempts."  # follows the merged Current Context
    text = vault.session_path(sid).read_text(encoding="utf-8")
    assert "- [superseded] (Decisions) Retry up to 5 times with exponential backoff" in text
    # a Summary the agent gives wins over the derived one
    env["AGENTMEM_NOW"] = "2026-06-01T10:30"
    js = run_cli("--json", "update", sid, "--summary", "Retry policy settled", vault=vault, env=env)
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout)["marked"] == []
    assert _board_row(vault, sid).summary == "Retry policy settled"


def test_continue_reports_the_marked_item_as_update_does(vault) -> None:
    env = {"AGENTMEM_NOW": "2026-06-01T09:30"}
    src = json.loads(run_cli("--json", "register", "--manual", vault=vault, env=env).stdout)["session_id"]
    first = "## Current Context\nRetries.\n\n## Decisions\n- Retry up to 5 times with exponential backoff\n"
    reg = run_cli("--json", "register", "--manual", "--snapshot", "-", vault=vault, input=first, env=env)
    sid = json.loads(reg.stdout)["session_id"]
    second = "## Decisions\n- Retry up to 8 times with exponential backoff\n"
    env["AGENTMEM_NOW"] = "2026-06-01T10:00"
    js = run_cli("--json", "continue", src, "--session", sid, "--snapshot", "-", vault=vault, input=second, env=env)
    assert js.returncode == 0, js.stderr
    out = json.loads(js.stdout)
    item = "[superseded] (Decisions) Retry up to 5 times with exponential backoff"
    assert out["marked"] == [item]
    assert f"  marked: {item}" in out["message"].splitlines()
    text = vault.session_path(sid).read_text(encoding="utf-8")
    assert f"- {item}" in text
