"""organize: the organize rules of docs/lifecycle.md (整理 memory) on every case of its rules."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from agentmem_vault.board import table as it
from agentmem_vault.errors import IndexFormatError, UsageError
from agentmem_vault.ops.lifecycle import (
    apply_organize_text,
    continues_from_of,
    organize,
    plan_organize,
)
from agentmem_vault.board.rules import DEFAULT_SUMMARY

from lifecycle_helpers import NOW, index_rows, picture, row, write_index, write_snapshot

WHEN = datetime(2026, 6, 1, 9, 30)
OLD = "2026-05-17 09:00"  # 15 days before NOW
EDGE = "2026-05-18 09:30"  # exactly 14 days: not older than 14 days
FRESH = "2026-05-31 18:00"

A_IDLE = "2026-05-20-1000-cursor-main-agent"  # idle placeholder -> deleted
B_IDLE_REF = "2026-05-20-1100-cursor-main-agent"  # idle, Referenced By X -> protected
C_IDLE_FILE = "2026-05-20-1200-cursor-main-agent"  # idle with a snapshot -> inconsistent
D_OLD_SNAP = "2026-05-10-0900-cursor-main-agent"  # active, 15 days, snapshot -> stale
E_OLD_SUMMARY = "2026-05-10-1000-cursor-main-agent"  # active, 15 days, meaningful Summary -> stale
F_OLD_DEFAULT = "2026-05-10-1100-cursor-main-agent"  # active, 15 days, default Summary, no file -> kept
G_OLD_REF = "2026-05-10-1200-cursor-main-agent"  # active, 15 days, referenced -> kept + protected
H_STALE = "2026-04-01-0900-cursor-main-agent"  # stale -> untouched
I_FRESH = "2026-05-31-0900-cursor-main-agent"  # fresh active -> kept
J_FALLBACK = "2026-05-10-1300-cursor-main-agent"  # active, 15 days, only X's Continues From names it
K_IDLE_FALLBACK = "2026-05-20-1300-cursor-main-agent"  # idle, only X's Continues From names it
L_EDGE = "2026-05-10-1400-cursor-main-agent"  # active, exactly 14 days, snapshot -> kept
X_CURRENT = "2026-05-30-1000-cursor-main-agent"  # fresh active, continues from B, G, J, K

ROWS = [
    row(A_IDLE, "idle"),
    row(B_IDLE_REF, "idle", refs=X_CURRENT),
    row(C_IDLE_FILE, "idle"),
    row(D_OLD_SNAP, updated=OLD, summary=DEFAULT_SUMMARY),
    row(E_OLD_SUMMARY, updated=OLD),
    row(F_OLD_DEFAULT, updated=OLD, summary=DEFAULT_SUMMARY),
    row(G_OLD_REF, updated=OLD, refs=X_CURRENT),
    row(H_STALE, "stale", updated="2026-04-02 09:00"),
    row(I_FRESH, updated=FRESH),
    row(J_FALLBACK, updated=OLD),
    row(K_IDLE_FALLBACK, "idle"),
    row(L_EDGE, updated=EDGE),
    row(X_CURRENT, updated=FRESH),
]

EXPECTED = {
    "deleted": [A_IDLE],
    "marked_stale": [D_OLD_SNAP, E_OLD_SUMMARY],
    "kept_active": [F_OLD_DEFAULT, G_OLD_REF, I_FRESH, J_FALLBACK, L_EDGE, X_CURRENT],
    "protected": [B_IDLE_REF, G_OLD_REF, J_FALLBACK, K_IDLE_FALLBACK],
    "inconsistent": [C_IDLE_FILE],
}


@pytest.fixture
def board(vault):
    write_index(vault, ROWS)
    for sid in (C_IDLE_FILE, D_OLD_SNAP, L_EDGE, I_FRESH):
        write_snapshot(vault, sid)
    write_snapshot(vault, X_CURRENT, continues_from=[B_IDLE_REF, G_OLD_REF, J_FALLBACK, K_IDLE_FALLBACK])
    return vault


def test_matrix_gives_the_skills_lists_and_second_run_changes_nothing(board, monkeypatch):
    monkeypatch.setenv("AGENTMEM_NOW", NOW)
    before = index_rows(board)
    plan = organize(board)
    assert plan.to_dict() == EXPECTED
    after = index_rows(board)
    assert A_IDLE not in after
    assert after[D_OLD_SNAP].status == after[E_OLD_SUMMARY].status == "stale"
    # Updated At unchanged: it still says when the last real work happened.
    assert after[D_OLD_SNAP].updated_at == before[D_OLD_SNAP].updated_at == OLD
    for sid in set(before) - {A_IDLE, D_OLD_SNAP, E_OLD_SUMMARY}:
        assert after[sid] == before[sid]
    assert plan.protected_by[J_FALLBACK] == [X_CURRENT]

    pic = picture(board)
    again = organize(board)
    assert picture(board) == pic
    assert again.deleted == [] and again.marked_stale == []
    assert again.inconsistent == [C_IDLE_FILE]


def test_deleted_rows_are_recoverable_from_the_journal(board, monkeypatch):
    monkeypatch.setenv("AGENTMEM_NOW", NOW)
    original = index_rows(board)[A_IDLE]
    organize(board)
    entries = [json.loads(x) for x in board.journal_path.read_text(encoding="utf-8").splitlines()]
    runs = [e for e in entries if e["action"] == "organize"]
    assert len(runs) == 1
    restored = [it.Row(**r) for r in runs[0]["deleted_rows"] if r["session_id"] == A_IDLE]
    assert restored == [original]
    assert it.parse_index(runs[0]["before_text"]).find(A_IDLE) == original


def test_dry_run_writes_nothing(board, monkeypatch):
    monkeypatch.setenv("AGENTMEM_NOW", NOW)
    pic = picture(board)
    plan = organize(board, dry_run=True)
    assert plan.to_dict() == EXPECTED
    assert picture(board) == pic


def test_stale_days_override(board):
    plan = organize(board, stale_days=30, dry_run=True, now=WHEN)
    assert plan.marked_stale == []
    plan = organize(board, stale_days=0, dry_run=True, now=WHEN)
    assert I_FRESH in plan.marked_stale and X_CURRENT in plan.marked_stale
    assert F_OLD_DEFAULT not in plan.marked_stale and G_OLD_REF not in plan.marked_stale
    with pytest.raises(UsageError):
        organize(board, stale_days=-1)


def test_config_stale_days_is_the_default(board):
    board.config_path.write_text("stale_days: 20\n", encoding="utf-8")
    assert organize(board, dry_run=True, now=WHEN).marked_stale == []


def test_plan_is_pure_and_matches_the_cli_json(board, cli):
    doc = it.parse_index(board.index_path.read_text(encoding="utf-8"))
    snaps = {C_IDLE_FILE, D_OLD_SNAP, L_EDGE, I_FRESH, X_CURRENT}
    cf = {X_CURRENT: [B_IDLE_REF, G_OLD_REF, J_FALLBACK, K_IDLE_FALLBACK]}
    assert plan_organize(doc, snaps, cf, WHEN, 14).to_dict() == EXPECTED
    proc = cli("organize", "--json", vault=board, env={"AGENTMEM_NOW": NOW})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert list(out) == ["deleted", "marked_stale", "kept_active", "protected", "inconsistent"]
    assert out == EXPECTED
    human = cli("organize", "--dry-run", vault=board, env={"AGENTMEM_NOW": NOW})
    assert human.returncode == 0 and "inconsistent" in human.stdout and C_IDLE_FILE in human.stdout


def test_only_target_lines_change_crlf_bom_and_text_outside_kept(vault):
    head = "\ufeff# Memory Index\r\n\r\nNotes 筆記 | not a row\r\n\r\n"
    body = "".join(it.render_row(r) + "\r\n" for r in ROWS[:5])
    text = head + it.header_lines("\r\n") + body + "\r\nTrailing text.\r\n"
    vault.index_path.write_bytes(text.encode("utf-8"))
    organize(vault, now=WHEN)
    got = vault.index_path.read_bytes().decode("utf-8")
    assert got.startswith(head) and got.endswith("\r\nTrailing text.\r\n")
    assert A_IDLE not in got and "\n" not in got.replace("\r\n", "")
    assert it.render_row(ROWS[4].with_(status="stale")) + "\r\n" in got
    assert it.render_row(ROWS[1]) + "\r\n" in got


def test_malformed_table_is_refused_but_dry_run_still_plans(vault):
    write_index(vault, ROWS[:3], extra="| broken | row |\n")
    pic = picture(vault)
    with pytest.raises(IndexFormatError):
        organize(vault, now=WHEN)
    assert picture(vault) == pic
    assert organize(vault, now=WHEN, dry_run=True).deleted == [A_IDLE, C_IDLE_FILE]


def test_duplicate_ids_are_left_alone(vault):
    write_index(vault, [row(A_IDLE, "idle"), row(A_IDLE, "idle"), row(K_IDLE_FALLBACK, "idle")])
    plan = organize(vault, now=WHEN)
    assert plan.deleted == [K_IDLE_FALLBACK]
    assert A_IDLE in plan.skipped
    assert vault.index_path.read_text(encoding="utf-8").count(A_IDLE) == 2


def test_read_only_index_fails_cleanly(vault, cli):
    write_index(vault, ROWS[:2])
    vault.index_path.chmod(0o444)
    try:
        pic = picture(vault)
        proc = cli("organize", "--json", vault=vault, env={"AGENTMEM_NOW": NOW})
        assert proc.returncode == 1
        assert json.loads(proc.stdout)["error"]["code"] in ("read_only", "write_failed")
        assert picture(vault) == pic
    finally:
        vault.index_path.chmod(0o644)


def test_empty_and_missing_index(tmp_path):
    from agentmem_vault.vault import Vault

    v = Vault(tmp_path)
    (tmp_path / "memory").mkdir()
    assert organize(v, now=WHEN).to_dict() == {k: [] for k in EXPECTED}


def test_continues_from_reader_accepts_links_and_plain_ids():
    text = f"# Session: x\n\n## Continues From\n- [[{A_IDLE}]]\n- {B_IDLE_REF} (plain)\n\n## Superseded / Resolved\n- {C_IDLE_FILE}\n"
    assert continues_from_of(text) == [A_IDLE, B_IDLE_REF]
    assert continues_from_of("## Continues From\nNone\n") == []


def test_continues_from_of_a_snapshot_with_nul_bytes_names_its_sources_unchanged():
    # A damaged snapshot (NULs where a torn write left them) still protects what it continues
    # from, and by their own IDs: a NUL next to an ID must not join the ID to the text after it.
    text = f"# Session: x\n\n## Continues From\n- {A_IDLE}\x00\x00tail\n- [[{B_IDLE_REF}]]\x00\n"
    assert continues_from_of(text) == [A_IDLE, B_IDLE_REF]


def test_a_damaged_snapshot_still_protects_its_source(vault):
    """The parser refuses a snapshot with a NUL byte; its Continues From still counts."""
    write_index(vault, [row(A_IDLE, "idle"), row(K_IDLE_FALLBACK)])
    p = write_snapshot(vault, K_IDLE_FALLBACK, continues_from=[A_IDLE])
    p.write_text(p.read_text(encoding="utf-8").replace("做了一些事情", "做了\x00一些事情"), encoding="utf-8")
    plan = organize(vault, now=WHEN)
    assert plan.protected == [A_IDLE] and plan.deleted == []
    assert A_IDLE in index_rows(vault)


def test_edit_table_deletes_last_row_and_appends():
    doc = it.parse_index(it.new_index_text() + it.render_row(ROWS[0]) + "\n" + it.render_row(ROWS[1]))
    text = it.edit_table(doc, {doc.rows[1][0]: None}, [ROWS[2]])
    assert it.parse_index(text).ids() == [A_IDLE, C_IDLE_FILE]
    plan = plan_organize(doc, set(), {}, WHEN, 14)
    assert it.parse_index(apply_organize_text(doc, plan)).ids() == [B_IDLE_REF]
