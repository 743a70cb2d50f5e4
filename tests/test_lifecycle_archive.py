"""archive ID: single-session archive (docs/lifecycle.md), all or nothing."""

from __future__ import annotations

import json
import os
from datetime import datetime

import pytest
from conftest import props_of

from agentmem_vault.model import session_props as sp

from agentmem_vault.ops import archive as archive_module
from agentmem_vault.errors import InvalidSessionId, Refused, SessionNotFound, WriteFailed
from agentmem_vault.ops.archive import archive, render_archive_index
from agentmem_vault.board.rules import DEFAULT_SUMMARY
from agentmem_vault.board.store import BoardWriter

from lifecycle_helpers import NOW, index_rows, picture, row, write_index, write_snapshot

WHEN = datetime(2026, 6, 1, 9, 30)
X = "2026-05-20-0900-cursor-main-agent"  # the session to archive
S1 = "2026-05-01-0900-cursor-main-agent"  # source, Referenced By "X, Y"
S2 = "2026-05-02-0900-cursor-main-agent"  # source, Referenced By "X"
S3 = "2026-04-01-0900-cursor-main-agent"  # source already archived (no row)
Y = "2026-05-21-0900-other-agent"  # another session continuing from S1
IDLE = "2026-05-30-0900-cursor-main-agent"


@pytest.fixture
def board(vault):
    write_index(
        vault,
        [
            row(S1, refs=f"{X}, {Y}"),
            row(S2, "stale", refs=X),
            row(X, topic="封存 | 測試"),
            row(Y),
            row(IDLE, "idle"),
        ],
    )
    write_snapshot(vault, X, continues_from=[S1, S2, S3])
    write_snapshot(vault, Y, continues_from=[S1])
    return vault


def test_full_archive(board):
    before = index_rows(board)
    snap = board.session_path(X).read_bytes()
    res = archive(board, X, now=WHEN)
    assert res.done and res.to_dict()["action"] == "archived"
    folder = board.archive_path(X)
    # The snapshot moves byte for byte below the Properties it gains (docs/obsidian.md).
    moved = (folder / "session.md").read_bytes()
    assert moved.startswith(b"---\n") and moved.endswith(b"---\n\n" + snap)
    assert props_of(moved.decode("utf-8"))["status"] == "archived"
    assert not board.session_path(X).exists()
    assert sp.split_text((folder / "index.md").read_text(encoding="utf-8")).body.lstrip("\n") == (
        f"# Archived Session: {X}\n\n## Metadata\n| Field | Value |\n|---|---|\n"
        f"| Session ID | {X} |\n| Agent Name | cursor-main-agent |\n| Topic | 封存 \\| 測試 |\n"
        f"| Summary | {before[X].summary} |\n| Keywords | {before[X].keywords} |\n| Original Status | active |\n"
        f"| Referenced By | - |\n| Started At | 2026-05-01 08:00 |\n| Updated At | 2026-05-31 09:00 |\n"
        f"| Archived At | 2026-06-01 09:30 |\n\n## Files\n- Session: ./session.md\n"
    )
    after = index_rows(board)
    assert X not in after
    assert after[S1] == before[S1].with_(referenced_by=Y)
    assert after[S2] == before[S2].with_(referenced_by="-")
    assert after[Y] == before[Y] and after[IDLE] == before[IDLE]
    assert res.plan.release_from == [S1, S2]
    assert any(S3 in n for n in res.notes)
    # The board's show/find read archived metadata back.
    from agentmem_vault.ops.board import show_session

    view = show_session(board, X)
    assert view.archived and view.row.topic == "封存 | 測試"


def test_refused_when_referenced_then_forced(board, cli):
    pic = picture(board)
    proc = cli("archive", S1, "--json", vault=board)
    assert proc.returncode == 1
    err = json.loads(proc.stdout)["error"]
    assert err["code"] == "referenced" and X in err["message"] and Y in err["message"]
    assert picture(board) == pic
    res = archive(board, S1, force=True, now=WHEN)
    assert res.done and res.to_dict()["forced_past_references"] == [X, Y]
    meta = (board.archive_path(S1) / "index.md").read_text(encoding="utf-8")
    assert f"| Referenced By | {X}, {Y} |" in meta
    assert "| Files |" not in meta and "- Session: ./session.md" not in meta  # S1 had no snapshot
    assert S1 not in index_rows(board)


def test_continues_from_is_the_fallback_protection(vault):
    write_index(vault, [row(S1), row(Y)])
    write_snapshot(vault, S1)
    write_snapshot(vault, Y, continues_from=[S1])
    with pytest.raises(Refused) as exc:
        archive(vault, S1, now=WHEN)
    assert exc.value.details["referenced_by"] == [Y]


def test_idle_without_snapshot_is_deleted_not_archived(board, cli):
    proc = cli("archive", IDLE, "--json", vault=board)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["action"] == "deleted"
    assert IDLE not in index_rows(board)
    assert not board.archive_path(IDLE).exists()
    assert sorted(os.listdir(board.archive_dir)) == []


def test_placeholder_active_without_snapshot_is_deleted_meaningful_one_archived(vault):
    a, b = S1, S2
    write_index(vault, [row(a, summary=DEFAULT_SUMMARY), row(b, summary="重要的結論")])
    assert archive(vault, a, now=WHEN).plan.action == "delete_row"
    assert not vault.archive_path(a).exists()
    res = archive(vault, b, now=WHEN)
    assert res.plan.action == "archive"
    meta = (vault.archive_path(b) / "index.md").read_text(encoding="utf-8")
    assert "重要的結論" in meta and "- Session: None" in meta
    assert not (vault.archive_path(b) / "session.md").exists()
    assert index_rows(vault) == {}


def test_idle_with_snapshot_is_archived(vault):
    write_index(vault, [row(IDLE, "idle")])
    write_snapshot(vault, IDLE)
    assert archive(vault, IDLE, now=WHEN).plan.action == "archive"
    assert (vault.archive_path(IDLE) / "session.md").exists()


def test_dry_run_writes_nothing(board, cli):
    pic = picture(board)
    proc = cli("archive", X, "--dry-run", "--json", vault=board, env={"AGENTMEM_NOW": NOW})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["dry_run"] and len(out["steps"]) == 5
    assert picture(board) == pic
    human = cli("archive", X, "--dry-run", vault=board)
    assert "dry run" in human.stdout and f"memory/archive/{X}/index.md" in human.stdout


@pytest.mark.parametrize("bad", ["../etc", "2026-05-20-0900-../x", "nonsense"])
def test_invalid_ids_refused(board, bad):
    pic = picture(board)
    with pytest.raises(InvalidSessionId):
        archive(board, bad)
    assert picture(board) == pic


def test_unknown_and_already_archived(board, cli):
    proc = cli("archive", "2026-01-01-0000-nobody", vault=board)
    assert proc.returncode == 1 and "no row" in proc.stderr
    archive(board, X, now=WHEN)
    with pytest.raises(SessionNotFound, match="already archived"):
        archive(board, X, now=WHEN)


def test_a_snapshot_without_a_row_and_a_duplicate_row_are_refused(vault):
    """Neither is archived by guesswork: the snapshot needs its row first, a duplicate a person."""
    write_index(vault, [row(S1), row(S1)])
    write_snapshot(vault, S1)
    write_snapshot(vault, X)
    pic = picture(vault)
    with pytest.raises(SessionNotFound, match="doctor --fix"):
        archive(vault, X, now=WHEN)
    with pytest.raises(Refused, match="more than one row"):
        archive(vault, S1, now=WHEN)
    assert picture(vault) == pic


def test_existing_archive_folder_is_not_overwritten(board):
    board.archive_path(X).mkdir()
    (board.archive_path(X) / "index.md").write_text("keep me", encoding="utf-8")
    pic = picture(board)
    with pytest.raises(Refused):
        archive(board, X, now=WHEN)
    assert picture(board) == pic


# -- all or nothing -------------------------------------------------------------------------------


def test_read_only_archive_folder_leaves_vault_unchanged(board, cli):
    board.archive_dir.chmod(0o555)
    try:
        pic = picture(board)
        proc = cli("archive", X, "--json", vault=board)
        assert proc.returncode == 1
        assert json.loads(proc.stdout)["error"]["code"] in ("read_only", "write_failed")
        assert picture(board) == pic
        assert not board.archive_path(X).exists()
    finally:
        board.archive_dir.chmod(0o755)


@pytest.mark.parametrize("read_only", ["sessions", "index"])
def test_failure_after_earlier_steps_rolls_back(board, monkeypatch, read_only):
    """Skip the up-front check so the read-only target fails mid-way and the undo has work to do."""
    monkeypatch.setattr(archive_module, "_preflight", lambda vault, plan: None)
    target = board.sessions_dir if read_only == "sessions" else board.index_path
    pic = picture(board)
    target.chmod(0o555 if read_only == "sessions" else 0o444)
    try:
        with pytest.raises(WriteFailed, match="exactly as before"):
            archive(board, X, now=WHEN)
    finally:
        target.chmod(0o755 if read_only == "sessions" else 0o644)
    assert picture(board) == pic
    entries = [json.loads(x) for x in board.journal_path.read_text(encoding="utf-8").splitlines()]
    assert entries[-1]["action"] == "rollback" and entries[-1]["failed"] == []


@pytest.mark.parametrize("fail_at", ["write_file", "move_file", "update_row:1", "update_row:2", "remove_row"])
def test_injected_failure_at_every_step_rolls_back(board, monkeypatch, fail_at):
    name, _, nth = fail_at.partition(":")
    nth = int(nth or 1)
    real = getattr(BoardWriter, name)
    calls = {"n": 0}

    def flaky(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == nth:
            if name == "move_file":  # fail after the copy, before the original is removed
                self._check_inside(a[0])
                self._remember(a[0])  # as the real move_file does before it copies
                self._remember(a[1])
                a[1].write_bytes(a[0].read_bytes())
            raise WriteFailed(f"injected failure in {name}")
        return real(self, *a, **kw)

    monkeypatch.setattr(BoardWriter, name, flaky)
    pic = picture(board)
    with pytest.raises(WriteFailed, match="injected"):
        archive(board, X, now=WHEN)
    assert picture(board) == pic


def test_render_archive_index_escapes_cells():
    r = row(X).with_(summary="a | b\nc")
    text = render_archive_index(r, "2026-06-01 09:30", has_snapshot=True)
    assert "| Summary | a \\| b c |" in text


def test_an_archive_index_is_read_alike_by_list_show_find_and_its_properties(board, cli) -> None:
    """One reader of archive indexes (the snapshot model): a hand edit that leaves a ``|`` of the
    Topic unescaped gives the same Topic to ``list --status archived``, ``show``, ``find
    --archived`` and the file's own properties (was: the rows took the first cell only, the
    properties the whole value)."""
    archive(board, X, now=WHEN)
    index = board.archive_path(X) / "index.md"
    text = index.read_text(encoding="utf-8")
    index.write_text(text.replace("| Topic | 封存 \\| 測試 |", "| Topic | blue | green |"), encoding="utf-8")
    assert cli("doctor", "--fix", vault=board).returncode in (0, 1)
    listed = json.loads(cli("list", "--status", "archived", "--json", vault=board).stdout)
    shown = json.loads(cli("show", X, "--json", vault=board).stdout)
    found = json.loads(cli("find", "green", "--archived", "--json", vault=board).stdout)
    props = props_of(index.read_text(encoding="utf-8"))
    topics = {listed["rows"][0]["topic"], shown["row"]["topic"], found["hits"][0]["topic"], props["topic"]}
    assert topics == {"blue | green"}


@pytest.mark.parametrize("heading", ["", "### Metadata\n", "## 中繼資料\n", "bom, no title"])
def test_an_archive_index_whose_metadata_heading_was_edited_still_names_its_session(board, cli, heading) -> None:
    """An archive index whose ``## Metadata`` heading was removed, demoted or renamed by hand keeps
    its Field/Value rows: ``list --status archived`` and ``show`` still read its session (was:
    read by the snapshot model alone, it named no session and the archived session vanished)."""
    archive(board, X, now=WHEN)
    index = board.archive_path(X) / "index.md"
    text = index.read_text(encoding="utf-8")
    if heading == "bom, no title":  # its Session ID row is the first line, after a BOM
        text, heading = "\ufeff" + text[text.index("| Session ID |") :], ""
    index.write_text(text.replace("## Metadata\n", heading), encoding="utf-8")
    listed = json.loads(cli("list", "--status", "archived", "--json", vault=board).stdout)
    shown = json.loads(cli("show", X, "--json", vault=board).stdout)
    assert [r["session_id"] for r in listed["rows"]] == [X]
    assert shown["row"]["session_id"] == X and shown["row"]["status"] == "active"
