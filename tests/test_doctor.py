"""doctor: every kind of damage is reported; --fix repairs the safe ones (with a backup) and says
what it left for a person; a healthy vault is left alone."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.board import table as it
from agentmem_vault.ops.doctor import diagnose, repair
from agentmem_vault.ops.doctor.checks import diagnose_state
from agentmem_vault.ops.doctor.state import read_state

from daemon_helpers import index_text, sid
from daemon_helpers import row as daemon_row
from lifecycle_helpers import index_rows, picture, row, write_index, write_snapshot

A = "2026-05-01-0900-cursor-main-agent"
B = "2026-05-02-0900-cursor-main-agent"
C = "2026-05-03-0900-cursor-main-agent"
D = "2026-05-04-0900-cursor-main-agent"
GONE = "2026-01-01-0000-cursor-main-agent"
ARCH = "2026-02-01-0000-cursor-main-agent"


def kinds(report, *, fixed=None):
    return sorted((f.kind, f.session_id) for f in report.findings if fixed is None or f.fixed == fixed)


def test_healthy_vault_has_nothing_to_fix(vault, cli):
    write_index(vault, [row(A, refs=B), row(B), row(C, "idle")])
    write_snapshot(vault, A)
    write_snapshot(vault, B, continues_from=[A])
    assert diagnose(vault).findings == []
    pic = picture(vault)
    proc = cli("doctor", "--fix", "--json", vault=vault)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert picture(vault) == pic
    assert "healthy" in cli("doctor", vault=vault).stdout


def test_malformed_rows_are_left_for_a_person_and_other_fixes_still_apply(vault, cli):
    write_index(vault, [row(A, "closed")], extra="| broken | row |\n")
    proc = cli("doctor", "--json", vault=vault)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert {f["kind"] for f in out["left_for_person"]} == {"malformed_row", "row_without_snapshot"}
    assert [f["kind"] for f in out["fixable"]] == ["bad_status"]
    proc = cli("doctor", "--fix", "--json", vault=vault)
    assert proc.returncode == 1  # the broken row is still there
    text = vault.index_path.read_text(encoding="utf-8")
    assert "| broken | row |\n" in text
    assert index_rows(vault)[A].status == "stale"


def test_duplicates_identical_removed_different_reported(vault):
    write_index(vault, [row(A), row(A), row(B), row(B, summary="不同")])
    write_snapshot(vault, A)
    write_snapshot(vault, B)
    rep = repair(vault)
    fixed = [f for f in rep.findings if f.kind == "duplicate_id" and f.fixed]
    left = [f for f in rep.findings if f.kind == "duplicate_id" and not f.fixed]
    assert [f.session_id for f in fixed] == [A] and [f.session_id for f in left] == [B]
    text = vault.index_path.read_text(encoding="utf-8")
    assert text.count(A) == 1 and text.count(B) == 2
    assert rep.backup and (vault.root / rep.backup / "index.md").read_text(encoding="utf-8").count(A) == 2


def test_rows_without_snapshot_and_snapshots_without_rows(vault):
    write_index(vault, [row(A), row(B, "idle")])
    write_snapshot(vault, B)  # idle row with a snapshot
    write_snapshot(vault, C, topic="孤兒快照")  # snapshot without a row
    rep = diagnose(vault)
    assert ("row_without_snapshot", A) in kinds(rep)
    assert ("idle_with_snapshot", B) in kinds(rep)
    assert ("snapshot_without_row", C) in kinds(rep)
    rep = repair(vault)
    rows = index_rows(vault)
    assert rows[B].status == "active"
    assert rows[C].status == "active" and rows[C].topic == "孤兒快照"
    assert rows[C].started_at == "2026-05-01 08:00" and rows[C].updated_at == "2026-05-31 09:00"
    assert [f.kind for f in rep.findings if not f.fixed] == ["row_without_snapshot"]
    # second run: only the advice remains, nothing is written
    pic = picture(vault)
    again = repair(vault)
    assert [f.kind for f in again.findings] == ["row_without_snapshot"] and again.backup is None
    assert picture(vault) == pic


def test_unknown_and_one_sided_references(vault):
    write_index(
        vault,
        [
            row(A, refs=f"{GONE}, {ARCH}, cursor-main-agent"),  # unknown, archived, an agent name
            row(B, refs=C),  # C's snapshot does not say so
            row(C),
            row(D, refs=D),  # itself
        ],
    )
    vault.archive_path(ARCH).mkdir(parents=True)
    write_snapshot(vault, A, continues_from=[GONE])
    write_snapshot(vault, C, continues_from=[D])  # D's Referenced By lacks C
    write_snapshot(vault, D)
    rep = repair(vault)
    rows = index_rows(vault)
    assert rows[A].referenced_by == "cursor-main-agent"
    assert rows[D].referenced_by == C
    left = {(f.kind, f.session_id, f.severity) for f in rep.findings if not f.fixed}
    assert ("unknown_reference", A, "error") in left  # the agent name: a person decides
    assert ("unknown_reference", A, "warning") in left  # A's snapshot continues from GONE
    assert ("one_sided_reference", B, "warning") in left
    fixed = {(f.kind, f.session_id) for f in rep.findings if f.fixed}
    assert {("unknown_reference", A), ("one_sided_reference", D), ("self_reference", D)} <= fixed


@pytest.mark.parametrize("status,expected", [("closed", "stale"), ("archived", "stale"), ("Active", "active")])
def test_closed_and_archived_statuses(vault, status, expected):
    write_index(vault, [row(A, status)])
    write_snapshot(vault, A)
    assert ("bad_status", A) in kinds(diagnose(vault))
    repair(vault)
    assert index_rows(vault)[A].status == expected


def test_unknown_status_is_left_for_a_person(vault):
    write_index(vault, [row(A, "wip")])
    rep = repair(vault)
    assert [(f.kind, f.fixed) for f in rep.findings if f.kind == "bad_status"] == [("bad_status", False)]
    assert index_rows(vault)[A].status == "wip"


@pytest.mark.parametrize(
    "name",
    ["index (1).md", "index (Ann's conflicted copy 2026-05-01).md", "index.sync-conflict-20260501-120000-ABCDEF.md"],
)
def test_conflict_copies_are_folded_back(vault, name, cli):
    write_index(vault, [row(A, "idle"), row(B, updated="2026-05-10 09:00")])
    copy = it.new_index_text() + "".join(
        it.render_row(r) + "\n"
        for r in [row(A, "idle"), row(B, updated="2026-05-12 09:00", summary="較新的摘要"), row(C, "idle")]
    )
    (vault.memory / name).write_text(copy, encoding="utf-8")
    proc = cli("doctor", "--json", vault=vault)
    assert proc.returncode == 1
    assert any(f["kind"] == "conflict_copy" for f in json.loads(proc.stdout)["fixable"])
    proc = cli("doctor", "--fix", "--json", vault=vault)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = index_rows(vault)
    assert rows[B].summary == "較新的摘要" and C in rows
    assert not (vault.memory / name).exists()
    assert (vault.state_dir / "conflicts").is_dir() and any((vault.state_dir / "conflicts").iterdir())
    backup = vault.root / json.loads(proc.stdout)["backup"]
    assert (backup / name).read_text(encoding="utf-8") == copy


def test_conflict_copy_of_a_snapshot_is_left_for_a_person(vault):
    write_index(vault, [row(A)])
    write_snapshot(vault, A)
    (vault.sessions_dir / f"{A} (1).md").write_text("# Session: x\n", encoding="utf-8")
    (vault.sessions_dir / "notes.md").write_text("hello", encoding="utf-8")
    rep = repair(vault)
    left = [(f.kind, f.session_id) for f in rep.findings if not f.fixed]
    assert ("conflict_copy", A) in left and ("session_file_name", None) in left
    assert (vault.sessions_dir / f"{A} (1).md").exists()
    hint = next(f.hint for f in rep.findings if f.kind == "conflict_copy")
    assert f"agentmem update {A} --snapshot" in hint


def test_missing_and_unreadable_index(vault, cli):
    vault.index_path.unlink()
    proc = cli("doctor", "--json", vault=vault)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["left_for_person"][0]["kind"] == "index_missing"
    vault.index_path.write_bytes(b"\xff\xfe not utf-8")
    rep = repair(vault)
    assert [f.kind for f in rep.findings] == ["index_unreadable"]
    assert vault.index_path.read_bytes() == b"\xff\xfe not utf-8"


def test_fix_is_all_or_nothing_on_read_only_index(vault, cli):
    write_index(vault, [row(A, "closed")])
    vault.index_path.chmod(0o444)
    try:
        pic = picture(vault)
        proc = cli("doctor", "--fix", vault=vault)
        assert proc.returncode == 1
        assert picture(vault) == pic
    finally:
        vault.index_path.chmod(0o644)


def test_diagnosis_is_pure(vault):
    write_index(vault, [row(A, "closed")])
    state = read_state(vault)
    f1, p1 = diagnose_state(state)
    f2, p2 = diagnose_state(state)
    assert f1 == f2 and p1 == p2 and state.index_text == vault.index_path.read_text(encoding="utf-8")


def test_human_report_says_what_is_left(vault, cli):
    write_index(vault, [row(A, "wip", refs="some-agent")])
    out = cli("doctor", "--fix", vault=vault).stdout
    assert "left for a person" in out and "never agent names" in out


def test_doctor_fix_does_not_put_an_archived_session_back_on_the_board(vault):
    from agentmem_vault.board import table as it
    from agentmem_vault.ops.doctor import repair
    from agentmem_vault.fs import read_text

    gone, other = sid(5), sid(6)
    vault.index_path.write_text(index_text([]), encoding="utf-8")
    (vault.archive_dir / gone).mkdir(parents=True)
    (vault.memory / "index (1).md").write_text(index_text([daemon_row(gone), daemon_row(other)]), encoding="utf-8")
    rep = repair(vault)
    assert it.parse_index(read_text(vault.index_path)).ids() == [other]
    assert any("archived since" in f.message and gone in f.message for f in rep.findings)


def _halfway_archive(vault, sid, *, snapshot_moved):
    """What an archive killed before its last step left (before archive ran in one transaction):
    the archive index written, the source released or not, the row still on the board."""
    from agentmem_vault.ops.archive import render_archive_index

    folder = vault.archive_path(sid)
    folder.mkdir(parents=True)
    r = row(sid)
    (folder / "index.md").write_text(render_archive_index(r, "2026-05-31 10:00", has_snapshot=True), encoding="utf-8")
    snap = write_snapshot(vault, sid, continues_from=[B])
    (folder / "session.md").write_bytes(snap.read_bytes())
    if snapshot_moved:
        snap.unlink()
    write_snapshot(vault, B)
    write_index(vault, [r, row(B, refs=sid)])


def test_an_archive_killed_after_its_snapshot_moved_is_finished_by_fix(vault, cli):
    _halfway_archive(vault, A, snapshot_moved=True)
    found = [f for f in diagnose(vault).findings if f.kind == "half_archived"]
    assert [(f.session_id, bool(f.fix)) for f in found] == [(A, True)]
    proc = cli("doctor", "--fix", "--json", vault=vault)
    assert proc.returncode == 0, proc.stdout
    rows = index_rows(vault)
    assert A not in rows and rows[B].referenced_by == "-"  # the row gone, the source released
    assert (vault.archive_path(A) / "session.md").is_file()
    assert diagnose(vault).findings == []
    listed = json.loads(cli("list", "--status", "archived", "--json", vault=vault).stdout)["rows"]
    assert [r["session_id"] for r in listed] == [A]


def test_an_archive_killed_before_its_snapshot_moved_says_what_to_run(vault):
    _halfway_archive(vault, A, snapshot_moved=False)
    pic = picture(vault)
    rep = repair(vault)
    [f] = [f for f in rep.findings if f.kind == "half_archived"]
    assert not f.fixed and f"agentmem archive {A}" in f.hint and f"memory/archive/{A}/" in f.hint
    assert A in index_rows(vault)
    assert picture(vault) == pic


def test_a_half_archived_row_that_changed_since_is_left_for_a_person(vault):
    _halfway_archive(vault, A, snapshot_moved=True)
    write_index(vault, [row(A, summary="changed after the archive"), row(B, refs=A)])
    rep = repair(vault)
    [f] = [f for f in rep.findings if f.kind == "half_archived"]
    assert not f.fixed and f"differs from memory/archive/{A}/index.md" in f.hint
    assert A in index_rows(vault)
