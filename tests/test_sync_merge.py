"""Several machines, one vault: three-way merges by key (pure) and the git merge driver (real git)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem_vault.vault import Vault
from agentmem_vault.errors import Unmergeable
from agentmem_vault.board import table as it
from agentmem_vault.model.merge3 import merge_board, merge_note_texts, merge_rows, merge_snapshot_texts
from agentmem_vault.model.snapshot import parse_snapshot
from conftest import run_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

AGENT = "cursor-main-agent"


def row(
    sid: str, *, topic: str = "未設定", status: str = "idle", refs: str = "-", upd: str = "2026-06-01 09:30"
) -> it.Row:
    return it.Row(sid, AGENT, topic, "summary", "k1, k2", status, refs, "2026-06-01 09:30", upd)


def board(*rows: it.Row, before: str = "# Working board\n\n", after: str = "") -> str:
    return before + it.header_lines() + "".join(it.render_row(r) + "\n" for r in rows) + after


def no_line_merge(o: str, a: str, b: str) -> tuple[str, bool]:
    raise AssertionError("the table's rows must not need a line merge")


def simple_line_merge(o: str, a: str, b: str) -> tuple[str, bool]:
    return f"<<<<<<< ours\n{a}=======\n{b}>>>>>>> theirs\n", False


def rows_of(text: str) -> dict[str, it.Row]:
    doc = it.parse_index(text)
    assert not doc.bad, doc.bad
    assert not doc.duplicate_ids()
    return {r.session_id: r for r in doc.row_list()}


A = "2026-06-01-0930-cursor-main-agent"
B = "2026-06-01-0931-cursor-main-agent"
C = "2026-06-02-1000-cursor-main-agent"
D = "2026-06-02-1001-cursor-main-agent"


# -- the board, pure ----------------------------------------------------------------------------


def test_rows_added_on_both_sides_are_all_kept_in_time_order() -> None:
    base = board(row(A))
    ours = board(row(A), row(D))
    theirs = board(row(A), row(C))
    out = merge_board(base, ours, theirs, no_line_merge)
    assert out.clean
    assert list(rows_of(out.text)) == [A, C, D]
    assert out.text.startswith("# Working board\n\n| Session ID |")


def test_a_change_on_one_side_is_taken() -> None:
    base = board(row(A), row(B))
    theirs = board(row(A), row(B, topic="Snapshot merge", status="active", upd="2026-06-03 10:00"))
    out = merge_board(base, base, theirs, no_line_merge)
    assert rows_of(out.text)[B].topic == "Snapshot merge"
    out = merge_board(base, theirs, base, no_line_merge)
    assert rows_of(out.text)[B].topic == "Snapshot merge"


def test_changed_on_both_sides_merges_field_by_field_and_the_later_update_wins() -> None:
    base = board(row(A, refs=f"{C}, {D}"))
    ours = board(row(A, topic="ours topic", status="active", refs=C, upd="2026-06-02 08:00"))  # released D
    theirs = board(row(A, topic="theirs topic", status="stale", refs=f"{C}, {D}, {B}", upd="2026-06-02 09:00"))
    r = rows_of(merge_board(base, ours, theirs, no_line_merge).text)[A]
    assert (r.topic, r.status, r.updated_at) == ("theirs topic", "stale", "2026-06-02 09:00")
    assert it.split_id_list(r.referenced_by) == [C, B]  # union, minus the released D


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("garbage", "2026-06-01 09:30"),  # unreadable: the oldest (it sorted after every date)
        ("2026-5-1 10:00", "2026-10-01 10:00"),  # one-digit month: "5" sorted after "1"
        ("2026-02-30 10:00", "2026-01-01 10:00"),  # no such day
        ("2026-06-01 09:30", "2026-06-01T09:30:30"),  # ISO with seconds
        ("-", "2026-06-01"),
    ],
)
def test_the_later_update_wins_by_the_boards_own_time_order_for_odd_times(older: str, newer: str) -> None:
    """The merge orders Updated At as the board does (board/rules.ts_key: one function, one rule)."""
    from agentmem_vault.board.rules import ts_key

    assert ts_key(older) < ts_key(newer)
    base = board(row(A))
    for ours_upd, theirs_upd, want in ((older, newer, "theirs"), (newer, older, "ours")):
        ours = board(row(A, topic="ours topic", upd=ours_upd))
        theirs = board(row(A, topic="theirs topic", upd=theirs_upd))
        r = rows_of(merge_board(base, ours, theirs, no_line_merge).text)[A]
        assert r.topic == f"{want} topic", (ours_upd, theirs_upd)


def test_deleted_on_one_side_and_unchanged_on_the_other_is_deleted() -> None:
    base = board(row(A), row(B))
    ours = board(row(A))  # organize deleted B
    out = merge_board(base, ours, base, no_line_merge)
    assert list(rows_of(out.text)) == [A]
    out = merge_board(base, base, ours, no_line_merge)
    assert list(rows_of(out.text)) == [A]


def test_deleted_on_one_side_and_changed_on_the_other_is_kept_and_reported() -> None:
    base = board(row(A), row(B))
    ours = board(row(A))
    theirs = board(row(A), row(B, topic="still working", status="active", upd="2026-06-04 10:00"))
    out = merge_board(base, ours, theirs, no_line_merge)
    assert rows_of(out.text)[B].topic == "still working"
    assert any(B in m and "kept" in m for m in out.reports)


def test_same_id_added_on_both_machines_is_one_row_and_reported() -> None:
    base = board(row(A))
    ours = board(row(A), row(C, topic="x", upd="2026-06-02 10:05"))
    theirs = board(row(A), row(C, topic="y", upd="2026-06-02 10:07"))
    out = merge_board(base, ours, theirs, no_line_merge)
    assert rows_of(out.text)[C].topic == "y"
    assert any("machine" in m for m in out.reports)


def test_untouched_rows_keep_their_bytes_and_crlf_and_bom() -> None:
    odd = "|2026-06-01-0930-cursor-main-agent|cursor-main-agent|未設定|s|k|idle|-|2026-06-01 09:30|2026-06-01 09:30|"
    base = "\ufeff# B\r\n\r\n" + it.header_lines("\r\n") + odd + "\r\n"
    ours = base + it.render_row(row(D)) + "\r\n"
    theirs = base + it.render_row(row(C)) + "\r\n"
    out = merge_board(base, ours, theirs, no_line_merge)
    assert out.text.startswith("\ufeff# B\r\n")
    assert odd + "\r\n" in out.text
    assert "\n" not in out.text.replace("\r\n", "")


def test_text_outside_the_table_uses_the_line_merge() -> None:
    base = board(row(A), before="# Board\n\nnotes\n\n")
    ours = board(row(A), before="# Board\n\nnotes by ours\n\n")
    theirs = board(row(A), before="# Board\n\nnotes by theirs\n\n")
    out = merge_board(base, ours, theirs, simple_line_merge)
    assert not out.clean and "<<<<<<<" in out.text
    assert list(rows_of(out.text.split(">>>>>>> theirs\n", 1)[1])) == [A]
    # changed on one side only: no conflict
    out = merge_board(base, ours, base, no_line_merge)
    assert out.clean and "notes by ours" in out.text


@pytest.mark.parametrize(
    "bad",
    [
        board(row(A)) + "| broken | row |\n",
        board(row(A), row(A, topic="dup")),
    ],
)
def test_a_side_that_does_not_parse_is_unmergeable(bad: str) -> None:
    with pytest.raises(Unmergeable):
        merge_board(board(row(A)), bad, board(row(A), row(C)), no_line_merge)


def test_merge_rows_is_the_identity_when_nothing_changed() -> None:
    r = row(A)
    assert merge_rows(r, r, r) == r


# Operations one machine can do to a board: register, update, release, organize (delete idle), archive.
OPS = st.lists(
    st.tuples(st.sampled_from(["register", "update", "delete", "ref", "unref"]), st.integers(0, 30)), max_size=12
)


def _apply(
    rows: dict[str, it.Row], ops: list[tuple[str, int]], side: str, clock: list[int]
) -> tuple[dict[str, it.Row], set[str], set[str]]:
    """Returns the new rows, the IDs this side changed, and the IDs it deleted."""
    rows = dict(rows)
    changed: set[str] = set()
    deleted: set[str] = set()
    for op, n in ops:
        clock[0] += 1
        ts = f"2026-06-{1 + clock[0] // 1440:02d} {clock[0] // 60 % 24:02d}:{clock[0] % 60:02d}"
        ids = sorted(rows)
        if op == "register":
            sid = f"2026-07-{1 + n % 28:02d}-{1000 + clock[0]:04d}-{side}-agent"
            if sid not in rows:
                rows[sid] = it.Row(sid, f"{side}-agent", "未設定", "s", "k", "idle", "-", ts, ts)
                changed.add(sid)
        elif ids:
            sid = ids[n % len(ids)]
            r = rows[sid]
            if op == "update":
                rows[sid] = r.with_(topic=f"topic {side} {n}", status="active", updated_at=ts)
                changed.add(sid)
            elif op == "delete":
                del rows[sid]
                deleted.add(sid)
            elif op == "ref":
                rows[sid] = r.with_(referenced_by=it.join_id_list([*r.referencing_ids, A]))
                changed.add(sid)
            elif op == "unref" and r.referencing_ids:
                rows[sid] = r.with_(referenced_by=it.join_id_list(r.referencing_ids[1:]))
                changed.add(sid)
    return rows, changed, deleted


@settings(max_examples=60, deadline=None)
@given(OPS, OPS, st.integers(0, 6))
def test_random_interleavings_merge_without_loss(ops_a: list, ops_b: list, n_base: int) -> None:
    base_rows = {f"2026-06-01-{900 + i:04d}-{AGENT}": row(f"2026-06-01-{900 + i:04d}-{AGENT}") for i in range(n_base)}
    clock = [0]
    a_rows, a_changed, a_deleted = _apply(base_rows, ops_a, "ma", clock)
    b_rows, b_changed, b_deleted = _apply(base_rows, ops_b, "mb", clock)
    out = merge_board(board(*base_rows.values()), board(*a_rows.values()), board(*b_rows.values()), no_line_merge)
    merged = rows_of(out.text)
    for sid in set(a_rows) | set(b_rows):
        gone_a = sid in base_rows and sid not in a_rows and b_rows.get(sid) == base_rows[sid]
        gone_b = sid in base_rows and sid not in b_rows and a_rows.get(sid) == base_rows[sid]
        if gone_a or gone_b:
            assert sid not in merged
        else:
            assert sid in merged, f"row {sid} was lost"
    for sid in merged:
        assert sid in a_rows or sid in b_rows
    # a change made on only one side survives exactly
    for sid, r in a_rows.items():
        if sid in merged and b_rows.get(sid) == base_rows.get(sid):
            assert merged[sid] == r
    # merging is idempotent once both sides agree
    again = merge_board(out.text, out.text, out.text, no_line_merge)
    assert rows_of(again.text) == merged


# -- snapshots, pure ----------------------------------------------------------------------------


def snapshot(
    sid: str,
    *,
    topic: str = "T",
    upd: str = "2026-06-01 10:00",
    context: str = "ctx",
    decisions=(),
    next_actions=(),
    continues=(),
    resolved=(),
) -> str:
    def lst(items) -> str:
        return "\n".join(f"- {i}" for i in items) if items else "None"

    return (
        f"# Session: {sid}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Session ID | {sid} |\n"
        f"| Agent Name | {AGENT} |\n| Topic | {topic} |\n| Status | active |\n| Started At | 2026-06-01 09:30 |\n"
        f"| Updated At | {upd} |\n\n## Current Context\n{context}\n\n## Decisions\n{lst(decisions)}\n\n"
        f"## Files / Artifacts\nNone\n\n## Open Questions\nNone\n\n## Next Actions\n{lst(next_actions)}\n\n"
        f"## Continues From\n{lst(continues)}\n\n## Superseded / Resolved\n{lst(resolved)}\n"
    )


def test_snapshot_items_of_both_sides_survive_and_marks_win() -> None:
    base = snapshot(A, decisions=["use filelock"], next_actions=["write tests"])
    ours = snapshot(
        A,
        decisions=["use filelock", "journal every write"],
        next_actions=["[done] write tests"],
        upd="2026-06-01 11:00",
    )
    theirs = snapshot(
        A,
        topic="Merge driver",
        decisions=["use filelock", "rows keyed by Session ID"],
        next_actions=["write tests", "document git set-up"],
        upd="2026-06-01 12:00",
    )
    out = merge_snapshot_texts(base, ours, theirs)
    snap = parse_snapshot(out.text)
    assert snap.items("Decisions") == ["use filelock", "journal every write", "rows keyed by Session ID"]
    assert snap.items("Next Actions") == ["document git set-up"]
    assert any("write tests" in e and "done" in e for e in snap.items("Superseded / Resolved"))
    assert snap.metadata["Topic"] == "Merge driver"
    assert snap.metadata["Updated At"] == "2026-06-01 12:00"


def test_snapshot_release_on_one_side_stays_released() -> None:
    base = snapshot(A, continues=[B, C])
    ours = snapshot(A, continues=[B], upd="2026-06-01 11:00")  # released C
    theirs = snapshot(A, continues=[B, C, D], upd="2026-06-01 12:00")
    snap = parse_snapshot(merge_snapshot_texts(base, ours, theirs).text)
    assert snap.continues_from == [B, D]


def test_snapshots_of_two_sessions_are_unmergeable() -> None:
    with pytest.raises(Unmergeable):
        merge_snapshot_texts(snapshot(A), snapshot(A), snapshot(B))
    with pytest.raises(Unmergeable):
        merge_snapshot_texts(snapshot(A), "just text\n", snapshot(A))


# -- notes, pure --------------------------------------------------------------------------------


def note(
    *,
    keywords: str = "[pnpm]",
    updated: str = "2026-06-01T10:00",
    status: str = "active",
    body: str = "Use pnpm.\n",
    history: str = "",
    extra: str = "",
) -> str:
    return (
        "---\nid: lt-1\ntitle: Package manager\ncategory: project_environment_configuration\n"
        f"keywords: {keywords}\nproject: agentmem-vault\nimportance: 0.9\nscore: 5\nstatus: {status}\n"
        f'created: 2026-06-01T09:00\nupdated: {updated}\nsources: ["[[{A}]]"]\ntags: [agent-memory/long-term]\n{extra}'
        f"---\n{body}{history}"
    )


def test_note_lists_are_unioned_and_the_newer_update_wins_for_values() -> None:
    base = note()
    ours = note(keywords="[pnpm, npm]", updated="2026-06-02T10:00", status="deprecated")
    theirs = note(
        keywords="[pnpm, lockfile]",
        updated="2026-06-03T10:00",
        body="Use pnpm, never npm.\n",
        history="\n## History\n\n### 2026-06-03T10:00\nUse pnpm.\n",
        extra="reviewed_by: alice\n",
    )
    out = merge_note_texts(base, ours, theirs, simple_line_merge)
    assert out.clean
    from agentmem_vault.model.notes import parse_note

    n = parse_note(out.text)
    assert n.keywords == ["pnpm", "npm", "lockfile"]
    assert n.status == "deprecated"  # only ours changed it
    assert n.updated == "2026-06-03T10:00:00"  # read in the one format (docs/notes.md)
    assert n.content == "Use pnpm, never npm."
    assert [h.when for h in n.history] == ["2026-06-03T10:00"]
    assert n.extra.get("reviewed_by") == "alice"
    assert A in out.text


def test_note_body_changed_on_both_sides_leaves_markers() -> None:
    out = merge_note_texts(note(), note(body="Use pnpm 9.\n"), note(body="Use pnpm 8.\n"), simple_line_merge)
    assert not out.clean and "<<<<<<<" in out.text


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_drivers_line_merge_is_gits_own_merge_file() -> None:
    """What the driver hands the board's and a note's prose to: ``git merge-file`` on copies
    outside the vault, clean when the sides changed different lines, else git's markers."""
    from agentmem_vault.integrations.merge_driver import git_line_merge

    merge = git_line_merge("memory/long-term/x.md")
    base = "one\ntwo\nthree\nfour\nfive\n"
    assert merge(base, base.replace("one", "ONE"), base.replace("five", "FIVE")) == (
        "ONE\ntwo\nthree\nfour\nFIVE\n",
        True,
    )
    text, clean = merge(base, base.replace("two", "ours"), base.replace("two", "theirs"))
    assert (
        not clean
        and "<<<<<<< ours:memory/long-term/x.md\nours\n" in text
        and ">>>>>>> theirs:memory/long-term/x.md" in text
    )


# -- the driver with real git -----------------------------------------------------------------------


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


class Machine:
    """One clone of the vault's repository with its own user config (so its own machine id)."""

    def __init__(self, root: Path, name: str):
        self.root = root
        self.env = {
            **GIT_ENV,
            "AGENTMEM_CONFIG_DIR": str(root.parent / f"config-{name}"),
            "AGENTMEM_CACHE_DIR": str(root.parent / f"cache-{name}"),
        }

    def agentmem(self, *args: str, input: str | None = None, now: str = "2026-06-01T09:30", ok: bool = True):
        proc = run_cli(*args, vault=self.root, input=input, env={**self.env, "AGENTMEM_NOW": now})
        if ok:
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def commit(self, msg: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", msg, "--allow-empty")


@pytest.fixture
def two_machines(tmp_path: Path) -> tuple[Machine, Machine]:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    first = tmp_path / "筆電 vault"
    git(tmp_path, "clone", "-q", str(origin), str(first))
    m1 = Machine(first, "m1")
    m1.agentmem("init")
    m1.agentmem("install-merge-driver", "--machine-id", "lap")
    m1.commit("vault")
    git(first, "push", "-q", "origin", "HEAD:main")
    second = tmp_path / "desktop vault"
    git(tmp_path, "clone", "-q", "-b", "main", str(origin), str(second))
    m2 = Machine(second, "m2")
    m2.agentmem("install-merge-driver", "--machine-id", "desk")
    return m1, m2


def board_rows(root: Path) -> dict[str, it.Row]:
    return rows_of((root / "memory" / "index.md").read_text(encoding="utf-8"))


def test_two_clones_register_update_organize_archive_and_pull_without_loss(two_machines) -> None:
    m1, m2 = two_machines
    # Both machines: a session with a snapshot, registered in the same minute (same agent name).
    s1 = m1.agentmem(
        "register",
        "--manual",
        "--topic",
        "laptop work",
        "--json",
        input=snapshot("x", decisions=["laptop decision"]),
        now="2026-06-02T10:00",
    )
    s2 = m2.agentmem(
        "register",
        "--manual",
        "--topic",
        "desktop work",
        "--json",
        input=snapshot("x", decisions=["desktop decision"]),
        now="2026-06-02T10:00",
    )
    import json

    id1, id2 = json.loads(s1.stdout)["session_id"], json.loads(s2.stdout)["session_id"]
    assert id1 != id2 and id1.endswith("-lap") and id2.endswith("-desk")
    shared = m1.agentmem(
        "register",
        "--manual",
        "--topic",
        "shared",
        "--json",
        input=snapshot("x", next_actions=["write the driver"]),
        now="2026-06-02T10:05",
    )
    sid = json.loads(shared.stdout)["session_id"]
    idle1 = m1.agentmem("register", now="2026-06-02T10:06").stdout.split()[-1]
    m1.commit("m1: sessions")
    git(m1.root, "push", "-q", "origin", "HEAD:main")
    m2.commit("m2: sessions")  # as obsidian-git does: commit, then pull
    git(m2.root, "pull", "-q", "--no-rebase", "origin", "main")
    assert set(board_rows(m2.root)) >= {id1, id2, sid, idle1}
    git(m2.root, "push", "-q", "origin", "HEAD:main")
    git(m1.root, "pull", "-q", "--no-rebase", "origin", "main")

    # Then both change the shared session's snapshot, and m1 organizes (deletes its idle row) and archives.
    m1.agentmem(
        "update",
        sid,
        input=snapshot(sid, decisions=["decided on laptop"], next_actions=["[done] write the driver"]),
        now="2026-06-03T09:00",
    )
    m1.agentmem("organize", now="2026-06-03T09:01")
    m1.agentmem("archive", id1, now="2026-06-03T09:02")
    m2.agentmem(
        "update",
        sid,
        input=snapshot(sid, decisions=["decided on desktop"], next_actions=["write docs"]),
        now="2026-06-03T09:30",
    )
    idle2 = m2.agentmem("register", now="2026-06-03T09:31").stdout.split()[-1]
    m1.commit("m1: work")
    m2.commit("m2: work")
    git(m1.root, "push", "-q", "origin", "HEAD:main")
    pull = git(m2.root, "pull", "--no-rebase", "origin", "main", check=False)
    assert pull.returncode == 0, pull.stdout + pull.stderr

    rows = board_rows(m2.root)
    assert idle1 not in rows  # organize deleted it and m2 did not change it
    assert id1 not in rows and (m2.root / "memory" / "archive" / id1 / "session.md").is_file()
    assert {id2, sid, idle2} <= set(rows)
    snap = parse_snapshot((m2.root / "memory" / "sessions" / f"{sid}.md").read_text(encoding="utf-8"))
    assert {"decided on laptop", "decided on desktop"} <= set(snap.items("Decisions"))
    assert snap.items("Next Actions") == ["write docs"]
    for p in (m2.root / "memory").rglob("*.md"):
        assert "<<<<<<<" not in p.read_text(encoding="utf-8"), p
    doctor = m2.agentmem("doctor", "--json", ok=False)
    import json as _json

    report = _json.loads(doctor.stdout)
    assert doctor.returncode == 0 and report["ok"], doctor.stdout


def test_driver_falls_back_to_git_markers_on_a_broken_side_and_writes_only_ours(tmp_path: Path) -> None:
    base = tmp_path / "base"
    ours = tmp_path / "ours"
    theirs = tmp_path / "theirs"
    base.write_text(board(row(A), before="x\n"), encoding="utf-8")
    ours.write_text(board(row(A), before="ours line\n") + "| broken |\n", encoding="utf-8")
    theirs.write_text(board(row(A), before="theirs line\n"), encoding="utf-8")
    before = {p: p.read_bytes() for p in (base, theirs)}
    listing = sorted(os.listdir(tmp_path))
    proc = run_cli("merge-driver", "index", str(base), str(ours), str(theirs), "memory/index.md")
    assert proc.returncode == 1
    assert "cannot merge by key" in proc.stderr and "memory/index.md" in proc.stderr
    assert "<<<<<<<" in ours.read_text(encoding="utf-8")
    assert {p: p.read_bytes() for p in (base, theirs)} == before
    assert sorted(os.listdir(tmp_path)) == listing
    assert "Traceback" not in proc.stderr


def test_driver_on_non_utf8_input_falls_back_cleanly(tmp_path: Path) -> None:
    paths = [tmp_path / n for n in ("b", "o", "t")]
    for n, p in enumerate(paths):
        p.write_bytes(b"\xff\xfe binary \x00" + bytes([n]) + b"\n")
    proc = run_cli("merge-driver", "snapshot", *map(str, paths))
    assert proc.returncode != 0
    assert "not UTF-8" in proc.stderr and "kept ours unchanged" in proc.stderr and "Traceback" not in proc.stderr
    assert paths[1].read_bytes() == b"\xff\xfe binary \x00\x01\n"
    # identical sides need no merge at all
    paths[2].write_bytes(paths[1].read_bytes())
    assert run_cli("merge-driver", "snapshot", *map(str, paths)).returncode == 0


def test_install_is_idempotent_backs_up_and_dry_run_writes_nothing(tmp_path: Path, vault: Vault) -> None:
    git(vault.root, "init", "-q")
    attrs = vault.root / ".gitattributes"
    attrs.write_text("*.png binary\n", encoding="utf-8")
    dry = run_cli("install-merge-driver", "--dry-run", "--json", "--machine-id", "lap", vault=vault)
    assert dry.returncode == 0, dry.stderr
    assert attrs.read_text(encoding="utf-8") == "*.png binary\n"
    first = run_cli("install-merge-driver", "--json", "--machine-id", "lap", vault=vault)
    assert first.returncode == 0, first.stderr
    text = attrs.read_text(encoding="utf-8")
    assert text.startswith("*.png binary\n") and "memory/index.md merge=agentmem-index" in text
    assert git(vault.root, "check-attr", "merge", "memory/sessions/x.md").stdout.strip().endswith("agentmem-snapshot")
    assert list(vault.root.glob(".gitattributes.agentmem-backup-*"))
    second = run_cli("install-merge-driver", "--json", vault=vault)
    import json

    out = json.loads(second.stdout)
    assert not out["gitattributes_changed"] and not out["git_config_changed"] and not out["machine_id_changed"]
    assert attrs.read_text(encoding="utf-8") == text


def test_install_outside_a_repository_is_a_clear_refusal(vault: Vault) -> None:
    proc = run_cli("install-merge-driver", vault=vault)
    assert proc.returncode == 1 and "not inside a git repository" in proc.stderr and "Traceback" not in proc.stderr


def test_doctor_reports_a_git_vault_without_the_driver(vault: Vault) -> None:
    git(vault.root, "init", "-q")
    proc = run_cli("doctor", "--json", vault=vault)
    assert "merge_driver_missing" in proc.stdout
    assert run_cli("install-merge-driver", vault=vault).returncode == 0
    assert "merge_driver_missing" not in run_cli("doctor", "--json", vault=vault).stdout


def test_session_ids_stay_plain_without_a_machine_id(vault: Vault) -> None:
    proc = run_cli("register", vault=vault, env={"AGENTMEM_NOW": "2026-06-01T09:30"})
    assert proc.stdout.strip().endswith("2026-06-01-0930-cursor-main-agent")


def test_a_bad_machine_id_in_the_user_config_is_a_clear_error(vault: Vault, tmp_path: Path) -> None:
    cfg = Path(os.environ["AGENTMEM_CONFIG_DIR"])
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "config.yaml").write_text("machine_id: 'my laptop'\n", encoding="utf-8")
    proc = run_cli("register", vault=vault)
    assert proc.returncode == 1 and "machine_id" in proc.stderr and "Traceback" not in proc.stderr


def test_the_python_module_runs_the_driver() -> None:
    # The installer pins the interpreter when no console script is found; that form must work too.
    assert (
        subprocess.run(
            [sys.executable, "-m", "agentmem_vault", "merge-driver", "--help"], capture_output=True
        ).returncode
        == 0
    )
