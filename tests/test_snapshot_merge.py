"""Snapshot merge (the merge table of docs/snapshots.md): scenarios, marks, restatements, safety."""

from __future__ import annotations

import pytest

from agentmem_vault.model import snapshot_merge
from agentmem_vault.errors import SnapshotFormatError, SnapshotMergeError
from agentmem_vault.model.snapshot import Snapshot, parse_snapshot, render_snapshot
from agentmem_vault.model.snapshot_merge import (
    item_key,
    merge_snapshots,
    new_snapshot,
    split_mark,
    verify_merge,
    with_continues_from,
)

SID = "2026-06-01-0930-cursor-main-agent"
SRC = "2026-05-25-1318-cursor-main-agent"


def snapshot_text(
    topic="Parser work",
    context="We are building the index parser.",
    decisions=("A", "B"),
    files=("F1",),
    questions=("Q1",),
    actions=("N1",),
    continues=(),
    resolved=(),
    updated="2026-06-01 09:30",
):
    def block(items):
        return "\n".join(f"- {i}" for i in items) if items else "None"

    return (
        f"# Session: {SID}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Session ID | {SID} |\n"
        f"| Agent Name | cursor-main-agent |\n| Topic | {topic} |\n| Status | active |\n"
        f"| Started At | 2026-06-01 09:30 |\n| Updated At | {updated} |\n\n"
        f"## Current Context\n{context or 'None'}\n\n## Decisions\n{block(decisions)}\n\n"
        f"## Files / Artifacts\n{block(files)}\n\n## Open Questions\n{block(questions)}\n\n"
        f"## Next Actions\n{block(actions)}\n\n## Continues From\n{block(continues)}\n\n"
        f"## Superseded / Resolved\n{block(resolved)}\n"
    )


# -- the issue's must-hold scenario -----------------------------------------------------------

INCOMING = """## Current Context
Round-trip tests pass; moving on to locks.

## Decisions
- C
- [superseded] B

## Files / Artifacts
- F1
- F2

## Open Questions
- [resolved] Q1

## Next Actions
- [done] N1
"""

EXPECTED = f"""# Session: {SID}

## Metadata
| Field | Value |
|---|---|
| Session ID | {SID} |
| Agent Name | cursor-main-agent |
| Topic | Parser work |
| Status | active |
| Started At | 2026-06-01 09:30 |
| Updated At | 2026-06-01 11:45 |

## Current Context
We are building the index parser.

Round-trip tests pass; moving on to locks.

## Decisions
- A
- C

## Files / Artifacts
- F1
- F2

## Open Questions
None

## Next Actions
None

## Continues From
None

## Superseded / Resolved
- [superseded] (Decisions) B
- [resolved] (Open Questions) Q1
- [done] (Next Actions) N1
"""


def test_issue_scenario_exact_result_and_idempotent():
    old = parse_snapshot(snapshot_text())
    inc = parse_snapshot(INCOMING)
    merged = merge_snapshots(old, inc, updated_at="2026-06-01 11:45")
    assert render_snapshot(merged) == EXPECTED
    assert verify_merge(old, merged) == []
    # the inputs are not modified
    assert old == parse_snapshot(snapshot_text()) and inc == parse_snapshot(INCOMING)
    # merging the same incoming again changes nothing but Updated At
    again = merge_snapshots(merged, inc, updated_at="2026-06-02 08:00")
    assert render_snapshot(again) == EXPECTED.replace("2026-06-01 11:45", "2026-06-02 08:00")


OLD_ZH = snapshot_text(
    topic="雲端同步評估",
    context="比較 rclone 排程同步與 Google Drive 桌面版用戶端。",
    decisions=("使用 Google Drive 用戶端同步 vault", "鎖檔放在同步資料夾裡面"),
    files=("`raw/需求 訪談.md`",),
    questions=("鎖檔應該放在同步資料夾外面嗎？",),
    actions=("撰寫來回轉換測試",),
)
INCOMING_ZH = """## Metadata
| Field | Value |
|---|---|
| Topic | 未設定 |

## Current Context
來回轉換測試已通過，接著處理鎖檔。

## Decisions
- 鎖檔放在使用者快取目錄
- [已取代] 鎖檔放在同步資料夾裡面

## Files / Artifacts
- raw/需求 訪談.md
- agentmem_vault/locking.py

## Open Questions
- [已解決] 鎖檔應該放在同步資料夾外面嗎？

## Next Actions
- [已完成] 撰寫來回轉換測試
"""


def test_issue_scenario_with_chinese_marks_and_traditional_content():
    old = parse_snapshot(OLD_ZH)
    merged = merge_snapshots(old, parse_snapshot(INCOMING_ZH), updated_at="2026-06-01 11:45")
    assert merged.metadata["Topic"] == "雲端同步評估"  # a placeholder topic never overwrites a real one
    assert merged.metadata["Started At"] == "2026-06-01 09:30" and merged.metadata["Status"] == "active"
    assert merged.items("Decisions") == ["使用 Google Drive 用戶端同步 vault", "鎖檔放在使用者快取目錄"]
    assert merged.items("Files / Artifacts") == ["`raw/需求 訪談.md`", "agentmem_vault/locking.py"]
    assert merged.items("Open Questions") == [] and merged.items("Next Actions") == []
    assert merged.items("Superseded / Resolved") == [
        "[已取代] (Decisions) 鎖檔放在同步資料夾裡面",
        "[已解決] (Open Questions) 鎖檔應該放在同步資料夾外面嗎？",
        "[已完成] (Next Actions) 撰寫來回轉換測試",
    ]
    assert merged.items("Current Context") == [
        "比較 rclone 排程同步與 Google Drive 桌面版用戶端。",
        "來回轉換測試已通過，接著處理鎖檔。",
    ]
    again = merge_snapshots(merged, parse_snapshot(INCOMING_ZH), updated_at="2026-06-01 11:45")
    assert again == merged


def test_simplified_chinese_mark_restates_traditional_item():
    old = parse_snapshot(OLD_ZH)
    inc = parse_snapshot("## Open Questions\n- [已解决] 锁档应该放在同步资料夹外面吗？\n")
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Open Questions") == []
    # exact (folded) match: the old wording is what is kept
    assert merged.items("Superseded / Resolved") == ["[已解决] (Open Questions) 鎖檔應該放在同步資料夾外面嗎？"]


# -- marks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "item, expected",
    [
        ("[done] write tests", ("[done]", "done", "write tests")),
        ("[DONE] write tests", ("[DONE]", "done", "write tests")),
        ("**[Superseded]** use X", ("[Superseded]", "superseded", "use X")),
        ("write tests [done]", ("[done]", "done", "write tests")),
        ("[x] write tests", ("[x]", "done", "write tests")),
        ("[已完成] 撰寫測試", ("[已完成]", "done", "撰寫測試")),
        ("[已解决] 问题", ("[已解决]", "resolved", "问题")),
        ("[ ] open task", (None, None, "[ ] open task")),
        ("[[2026-05-25-1318-a]] link", (None, None, "[[2026-05-25-1318-a]] link")),
        ("[done]", (None, None, "[done]")),
        ("[note] something", (None, None, "[note] something")),
    ],
)
def test_split_mark(item, expected):
    assert split_mark(item) == expected


def test_marked_item_that_revises_an_old_one_marks_it_and_keeps_both_wordings():
    old = parse_snapshot(snapshot_text(decisions=("Store the lock file inside the vault folder",)))
    inc = parse_snapshot(
        "## Decisions\n- [superseded] Store the lock file inside the vault folder (sync clients break it)\n"
    )
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Decisions") == []
    assert merged.items("Superseded / Resolved") == [
        "[superseded] (Decisions) Store the lock file inside the vault folder",
        "[superseded] (Decisions) Store the lock file inside the vault folder (sync clients break it)",
    ]
    assert merge_snapshots(merged, inc, updated_at="t") == merged


def test_marked_item_without_old_counterpart_is_recorded_once():
    old = parse_snapshot(snapshot_text())
    inc = parse_snapshot("## Next Actions\n- [done] something done in this chat only\n")
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Next Actions") == ["N1"]
    assert merged.items("Superseded / Resolved") == ["[done] (Next Actions) something done in this chat only"]
    assert merge_snapshots(merged, inc, updated_at="t") == merged


def test_old_items_marked_by_hand_are_moved_on_merge():
    old = parse_snapshot(snapshot_text(decisions=("A", "B [superseded]"), actions=("[x] N1", "N2")))
    merged = merge_snapshots(old, parse_snapshot("## Decisions\n- A\n"), updated_at="t")
    assert merged.items("Decisions") == ["A"] and merged.items("Next Actions") == ["N2"]
    assert merged.items("Superseded / Resolved") == ["[superseded] (Decisions) B", "[x] (Next Actions) N1"]


def test_incoming_resolved_section_entries_act_on_their_origin():
    old = parse_snapshot(snapshot_text())
    inc = parse_snapshot(
        "## Superseded / Resolved\n- [done] (Next Actions) N1\n- [resolved] Q1\n- dropped idea\n- [wontfix] (Decisions) odd\n"
    )
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Next Actions") == [] and merged.items("Open Questions") == []
    assert merged.items("Superseded / Resolved") == [
        "[resolved] (Open Questions) Q1",
        "[done] (Next Actions) N1",
        "dropped idea",
        "[wontfix] (Decisions) odd",
    ]
    assert merge_snapshots(merged, inc, updated_at="t") == merged


def test_contradictory_incoming_mark_wins_and_reopened_item_comes_back():
    old = parse_snapshot(snapshot_text(actions=("N1",), resolved=("[done] (Next Actions) N0",)))
    inc = parse_snapshot("## Next Actions\n- N1\n- [done] N1\n- N0\n")
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Next Actions") == ["N0"]  # N0 was listed again unmarked: reopened
    assert merged.items("Superseded / Resolved") == ["[done] (Next Actions) N0", "[done] (Next Actions) N1"]
    assert merge_snapshots(merged, inc, updated_at="t") == merged


# -- restatements ---------------------------------------------------------------------------


def test_restated_decision_replaces_in_place_but_a_reversal_does_not():
    old = parse_snapshot(snapshot_text(decisions=("Use SQLite for the index cache", "Keep the CLI thin")))
    inc = parse_snapshot(
        "## Decisions\n- Use SQLite for the index cache, with WAL mode enabled\n- Use Postgres for the index cache\n"
    )
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Decisions") == [
        "Use SQLite for the index cache, with WAL mode enabled",
        "Keep the CLI thin",
        "Use Postgres for the index cache",
    ]
    assert verify_merge(old, merged) == []
    assert merge_snapshots(merged, inc, updated_at="t") == merged


def test_restated_context_paragraph_replaces_in_place():
    old = parse_snapshot(snapshot_text(context="Para one about the parser.\n\nWe are building the index parser."))
    inc = parse_snapshot(
        "## Current Context\nWe are building the index parser; round-trip tests pass.\n\nBrand new fact.\n"
    )
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Current Context") == [
        "Para one about the parser.",
        "We are building the index parser; round-trip tests pass.",
        "Brand new fact.",
    ]


def test_exact_restatement_pins_an_old_item_against_near_duplicates():
    a = "Use SQLite for the index cache"
    old = parse_snapshot(snapshot_text(decisions=(a,)))
    inc = parse_snapshot(f"## Decisions\n- {a}\n- {a} and the journal\n")
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Decisions") == [a, f"{a} and the journal"]
    assert merge_snapshots(merged, inc, updated_at="t") == merged


def _merged_decisions(old: str, new: str) -> tuple[list[str], list[str]]:
    """(Decisions, Superseded / Resolved) after merging a snapshot deciding ``new`` into one deciding ``old``."""
    merged = merge_snapshots(
        parse_snapshot(snapshot_text(decisions=(old,))), parse_snapshot(f"## Decisions\n- {new}\n"), updated_at="t"
    )
    return merged.items("Decisions"), merged.items("Superseded / Resolved")


def is_restatement(old: str, new: str) -> bool:
    return item_key(old) == item_key(new)


def is_revision(old: str, new: str) -> bool:
    """The merge put ``new`` in ``old``'s place and recorded ``old`` as superseded."""
    decisions, resolved = _merged_decisions(old, new)
    return decisions == [new] and resolved == [f"[superseded] (Decisions) {old}"]


def test_restatement_is_the_same_text_and_a_revision_a_changed_word():
    assert is_restatement("Use SQLite for storage", "use sqlite for storage.")
    assert is_restatement("決定使用 SQLite 儲存索引", "决定使用SQLite储存索引")
    assert not is_restatement("決定使用 SQLite 儲存索引", "决定使用SQLite储存索引，并开启 WAL")
    assert not is_restatement("Use SQLite for the index cache", "Use Postgres for the index cache")
    assert is_revision("Use SQLite for the index cache", "Use Postgres for the index cache")
    assert is_revision("重試最多 5 次，使用指數退避", "重试最多 8 次，使用指数退避")
    assert not is_revision("Use SQLite for storage", "use sqlite for storage.")  # a restatement
    assert not is_revision("Use SQLite for storage", "Deploy with Docker on Fridays")
    assert not is_revision("N1", "N2")  # short items never revise each other


# -- other sections ---------------------------------------------------------------------------


def test_files_union_ignores_backticks_slashes_and_dot_prefix():
    old = parse_snapshot(snapshot_text(files=("`src\\a.py`", "docs/", "./README.md", "docs")))
    inc = parse_snapshot("## Files / Artifacts\n- src/a.py\n- `docs`\n- README.md\n- src//b.py\n")
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Files / Artifacts") == ["`src\\a.py`", "docs/", "./README.md", "src//b.py"]
    assert verify_merge(old, merged) == []


def test_continues_from_only_grows_on_merge():
    old = parse_snapshot(snapshot_text(continues=(f"[[{SRC}]]",)))
    inc = parse_snapshot(f"## Continues From\n- {SRC}\n- 2026-05-26-0900-b\n")
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.items("Continues From") == [f"[[{SRC}]]", "[[2026-05-26-0900-b]]"]  # new items are written as links
    merged = merge_snapshots(merged, parse_snapshot("## Continues From\nNone\n"), updated_at="t")
    assert merged.continues_from == [SRC, "2026-05-26-0900-b"]


def test_with_continues_from_adds_and_removes_ids():
    s = parse_snapshot(snapshot_text(continues=(f"[[{SRC}]]", "2026-05-26-0900-b, 2026-05-27-0900-c")))
    added = with_continues_from(s, add=["2026-05-28-0900-d", SRC])
    # added IDs are written as [[id]] links; an untouched old item stays as written
    assert added.items("Continues From") == [
        f"[[{SRC}]]",
        "2026-05-26-0900-b, 2026-05-27-0900-c",
        "[[2026-05-28-0900-d]]",
    ]
    removed = with_continues_from(added, remove=[SRC, "2026-05-27-0900-c"])
    assert removed.items("Continues From") == ["[[2026-05-26-0900-b]]", "[[2026-05-28-0900-d]]"]
    empty = with_continues_from(removed, remove=["2026-05-26-0900-b", "2026-05-28-0900-d"])
    assert "## Continues From\nNone\n" in render_snapshot(empty)
    assert s.items("Continues From") == [f"[[{SRC}]]", "2026-05-26-0900-b, 2026-05-27-0900-c"]  # input untouched


def test_metadata_topic_extra_rows_and_ids():
    old = parse_snapshot(snapshot_text().replace("| Updated At |", "| Priority | high |\n| Updated At |"))
    inc = parse_snapshot(
        "## Metadata\n| Field | Value |\n|---|---|\n| Session ID | <id> |\n| Topic | New topic |\n"
        "| Started At | 2030-01-01 00:00 |\n| Owner | me |\n"
    )
    merged = merge_snapshots(old, inc, updated_at="2026-06-01 12:00")
    assert merged.metadata == {
        "Session ID": SID,
        "Agent Name": "cursor-main-agent",
        "Topic": "New topic",
        "Status": "active",
        "Started At": "2026-06-01 09:30",
        "Updated At": "2026-06-01 12:00",
        "Priority": "high",
        "Owner": "me",
    }
    assert merged.title == SID


def test_unknown_sections_frontmatter_and_preamble_survive_a_merge():
    old = parse_snapshot(
        "---\ntags: [a]\n---\n" + snapshot_text().replace("## Decisions", "## My Notes\nline 1\n\n## Decisions")
    )
    inc = parse_snapshot("---\ntags: [b]\n---\n## My Notes\nline 2\n\n## Links\n- x\n\n## Decisions\n- A\n")
    merged = merge_snapshots(old, inc, updated_at="t")
    assert merged.frontmatter == "tags: [a]"
    assert [(e.heading, e.body, e.after) for e in merged.extras] == [
        ("My Notes", "line 1\nline 2", "Current Context"),
        ("Links", "- x", "Superseded / Resolved"),
    ]
    assert merge_snapshots(merged, inc, updated_at="t") == merged


# -- bad input ------------------------------------------------------------------------------


def test_incoming_for_another_session_is_refused():
    old = parse_snapshot(snapshot_text())
    other = "2026-06-01-0931-cursor-main-agent"
    with pytest.raises(SnapshotFormatError, match=other):
        merge_snapshots(
            old,
            parse_snapshot(snapshot_text().replace(f"| Session ID | {SID} |", f"| Session ID | {other} |")),
            updated_at="t",
        )
    with pytest.raises(SnapshotFormatError):
        merge_snapshots(old, parse_snapshot(f"# Session: {other}\n## Decisions\n- Z\n"), updated_at="t")
    with pytest.raises(SnapshotFormatError):
        new_snapshot(SID, "a", "t", "s", "u", incoming=parse_snapshot(f"# Session: {other}\n"))
    # a template placeholder or a same-ID link is not a different session
    merged = merge_snapshots(
        old, parse_snapshot(f"# Session: <id>\n## Metadata\n- Session ID: [[{SID}]]\n"), updated_at="t"
    )
    assert merged.items("Decisions") == ["A", "B"]


def test_title_only_incoming_changes_nothing_but_updated_at():
    old = parse_snapshot(snapshot_text())
    merged = merge_snapshots(old, parse_snapshot(f"# Session: {SID}\n"), updated_at="2026-06-01 09:30")
    assert merged == old


def test_verify_merge_reports_lost_items_and_merge_refuses(monkeypatch):
    old = parse_snapshot(snapshot_text(continues=(SRC,)))
    lost = old.copy()
    lost.sections["Decisions"] = ["A"]
    lost.sections["Continues From"] = []
    lost.metadata["Started At"] = "later"
    assert verify_merge(old, lost) == [
        "Metadata: Started At = 2026-06-01 09:30",
        "Decisions: B",
        f"Continues From: {SRC}",
    ]

    real = snapshot_merge._merge_body

    def buggy(o, i):  # fault injection: a merge body that drops an old decision
        out = real(o, i)
        out.sections["Decisions"] = out.sections["Decisions"][1:]
        return out

    monkeypatch.setattr(snapshot_merge, "_merge_body", buggy)
    with pytest.raises(SnapshotMergeError) as ei:
        merge_snapshots(old, parse_snapshot(INCOMING), updated_at="t")
    assert ei.value.code == "merge_verification_failed" and ei.value.exit_code == 1
    assert ei.value.details["missing"] == ["Decisions: A"]
    assert "nothing was written" in ei.value.message


# -- creation ---------------------------------------------------------------------------------


def test_new_snapshot_from_template():
    s = new_snapshot(SID, "cursor-main-agent", "未設定", "2026-06-01 09:30", "2026-06-01 09:30")
    text = render_snapshot(s)
    assert text.startswith(f"# Session: {SID}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Session ID | {SID} |\n")
    assert "| Topic | 未設定 |\n| Status | active |\n" in text
    assert parse_snapshot(text) == s


def test_new_snapshot_filled_from_incoming_moves_marked_items():
    inc = parse_snapshot(
        INCOMING.replace(
            "## Current Context", "## Metadata\n| Field | Value |\n|---|---|\n| Topic | Locks |\n\n## Current Context"
        )
    )
    s = new_snapshot(
        SID, "cursor-main-agent", "未設定", "2026-06-01 09:30", "2026-06-01 10:00", status="active", incoming=inc
    )
    assert s.topic == "Locks"  # the placeholder gives way to the agent's topic
    assert s.items("Decisions") == ["C"] and s.items("Files / Artifacts") == ["F1", "F2"]
    assert s.items("Superseded / Resolved") == [
        "[superseded] (Decisions) B",
        "[resolved] (Open Questions) Q1",
        "[done] (Next Actions) N1",
    ]
    assert new_snapshot(SID, "a", "Explicit", "s", "u", incoming=inc).topic == "Explicit"
    assert isinstance(s, Snapshot) and parse_snapshot(render_snapshot(s)) == s


def test_context_bullet_and_paragraph_forms_of_the_same_fact_are_one():
    old = parse_snapshot(snapshot_text(context="- Parser done\n- Locks next"))
    merged = merge_snapshots(old, parse_snapshot("## Current Context\nParser done\n\n* Locks next.\n"), updated_at="t")
    assert merged.items("Current Context") == ["- Parser done", "- Locks next"]
