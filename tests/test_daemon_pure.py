"""Pure parts of the daemon, fed synthetic inputs: debouncer, folder snapshot, reconcile planning."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem_vault.board import table as it
from agentmem_vault.daemon.debounce import Debouncer
from agentmem_vault.daemon.reconcile import AddRow, FoldConflict, SyncRow, fold_rows, plan
from agentmem_vault.daemon.scan import (
    Entry,
    FolderSnapshot,
    changed,
    classify,
    is_conflict_copy,
    read_entry,
    scan_memory,
)
from daemon_helpers import FakeClock, index_text, row, sid, snapshot_text

# -- debounce ----------------------------------------------------------------------------------


def test_debouncer_waits_for_quiet_per_path():
    clock = FakeClock()
    d = Debouncer(0.5, clock)
    d.touch("a")
    clock.advance(0.3)
    d.touch("a")  # burst: pushed back
    d.touch("b")
    assert d.pop_due() == []
    assert d.next_deadline() == pytest.approx(clock() + 0.5)
    clock.advance(0.49)
    assert d.pop_due() == []
    clock.advance(0.02)
    assert sorted(d.pop_due()) == ["a", "b"]
    assert d.pop_due() == [] and d.next_deadline() is None and len(d) == 0


def test_debouncer_orders_by_age_and_immediate():
    clock = FakeClock()
    d = Debouncer(1.0, clock)
    d.touch("late")
    clock.advance(0.5)
    d.touch("now", immediate=True)
    assert d.pop_due() == ["now"]
    clock.advance(0.6)
    d.touch("x")
    assert d.pop_due() == ["late"]
    assert "x" in d


def test_debouncer_rejects_negative_delay():
    with pytest.raises(ValueError):
        Debouncer(-1)


# -- scan ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel,kind",
    [
        ("index.md", "index"),
        ("index (1).md", "conflict"),
        ("index (Conflict 2026-05-01 12.00).md", "conflict"),
        ("index (Ann's conflicted copy 2026-05-01).md", "conflict"),
        ("index.sync-conflict-20260501-120000-ABC.md", "conflict"),
        ("sessions/2026-06-01-0930-a.md", "session"),
        ("sessions/.2026-06-01-0930-a.md.123.agentmem-tmp", None),
        (".agentmem/journal.jsonl", None),
        ("archive/x/index.md", None),
        ("long-term/note.md", None),
        ("notes.md", None),
        ("index.md~", None),
        ("sessions/sub/x.md", None),
        ("index (1).txt", None),
    ],
)
def test_classify(rel, kind):
    assert classify(rel) == kind


def test_conflict_names():
    assert is_conflict_copy("index (2).md") and not is_conflict_copy("index.md") and not is_conflict_copy("indexes.md")


class FakeFS:
    """An in-memory tree for the injected listdir/stat/read."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = dict(files)
        self.mtimes = {k: 1 for k in files}
        self.reads: list[str] = []

    def listdir(self, path: Path) -> list[str]:
        p = path.as_posix().rstrip("/")
        out = set()
        for k in self.files:
            parent, _, name = ("/m/" + k).rpartition("/")
            if parent == p:
                out.add(name)
            elif parent.startswith(p + "/"):
                out.add(parent[len(p) + 1 :].split("/")[0])
        return sorted(out)

    def stat(self, path: Path) -> "_st":
        k = Path(path).as_posix()[len("/m/") :]
        if k not in self.files:
            raise FileNotFoundError(k)
        return _st(len(self.files[k]), self.mtimes[k])

    def read(self, path: Path) -> bytes:
        k = Path(path).as_posix()[len("/m/") :]
        self.reads.append(k)
        return self.files[k]

    def write(self, k: str, data: bytes) -> None:
        self.files[k] = data
        self.mtimes[k] = self.mtimes.get(k, 0) + 1


class _st:
    def __init__(self, size: int, mtime: int) -> None:
        self.st_size = size
        self.st_mtime_ns = mtime


def test_scan_reads_only_changed_files():
    a, b = sid(1), sid(2)
    fs = FakeFS(
        {
            "index.md": index_text([]).encode(),
            f"sessions/{a}.md": snapshot_text(a).encode(),
            f"sessions/{b}.md": snapshot_text(b).encode(),
            "archive/x/index.md": b"x",
            ".agentmem/j": b"{}",
        }
    )
    kw = dict(listdir=fs.listdir, stat=fs.stat, read=fs.read)
    s1 = scan_memory(Path("/m"), **kw)
    assert sorted(s1.entries) == ["index.md", f"sessions/{a}.md", f"sessions/{b}.md"]
    assert s1.sessions()[a].meta_dict["Topic"] == "主題"
    fs.reads.clear()
    s2 = scan_memory(Path("/m"), s1, **kw)
    assert fs.reads == [] and changed(s1, s2) == set()
    fs.write(f"sessions/{a}.md", snapshot_text(a, topic="new").encode())
    del fs.files[f"sessions/{b}.md"]
    s3 = scan_memory(Path("/m"), s2, **kw)
    assert fs.reads == [f"sessions/{a}.md"]
    assert changed(s2, s3) == {f"sessions/{a}.md", f"sessions/{b}.md"}


def test_read_entry_reports_non_utf8(tmp_path):
    p = tmp_path / "x.md"
    p.write_bytes(b"\xff\xfe garbage")
    e = read_entry(p, "session", p.stat())
    assert e.error and "UTF-8" in e.error and e.sha


def test_session_fields_only_from_metadata_section(tmp_path):
    s = sid(3)
    text = snapshot_text(s, topic="real") + "\n## Extra\n| Field | Value |\n|---|---|\n| Topic | decoy |\n"
    p = tmp_path / "s.md"
    p.write_text("\ufeff" + text.replace("\n", "\r\n"), encoding="utf-8")
    e = read_entry(p, "session", p.stat())
    assert e.meta_dict["Topic"] == "real" and e.summary == "Working on the daemon."


# -- reconcile -----------------------------------------------------------------------------------


def _folder(sessions: dict[str, str] | None = None, conflicts: dict[str, str] | None = None) -> FolderSnapshot:
    sessions, conflicts = sessions or {}, conflicts or {}
    from agentmem_vault.daemon.scan import session_fields, sha_of

    entries = {}
    for s, text in sessions.items():
        meta, summary = session_fields(text)
        entries[f"sessions/{s}.md"] = Entry(1, len(text), sha_of(text.encode()), tuple(meta.items()), summary)
    for name, text in conflicts.items():
        entries[name] = Entry(1, len(text), sha_of(text.encode()), text=text)
    return FolderSnapshot(entries)


def _apply_text(text: str, actions) -> str:
    """Apply a plan to text purely (mirror of apply.py) to check idempotence."""
    for a in actions:
        if isinstance(a, FoldConflict):
            assert a.base_text == text
            text = a.new_text
        elif isinstance(a, AddRow):
            text = it.edit_table(it.parse_index(text), {}, [a.row])
        elif isinstance(a, SyncRow):
            doc = it.parse_index(text)
            text = it.edit_table(doc, {it.line_of(doc, a.before.session_id): a.after})
    return text


def test_session_without_row_gets_a_row_in_step_with_it():
    # the added row takes the snapshot's Status (was: always active, so an idle snapshot's new row
    # disagreed with it until the next pass; docs/board.md "Row and snapshot in step")
    s = sid(10)
    p = plan(_folder({s: snapshot_text(s, topic="新主題", status="idle", updated="2026-06-01T10:05")}), index_text([]))
    assert len(p.actions) == 1 and isinstance(p.actions[0], AddRow)
    r = p.actions[0].row
    assert (r.session_id, r.topic, r.status, r.started_at, r.updated_at, r.referenced_by) == (
        s,
        "新主題",
        "idle",
        "2026-06-01 09:30",
        "2026-06-01 10:05",
        "-",
    )
    assert r.summary == "Working on the daemon." and r.agent_name == "cursor-main-agent"


def test_added_row_falls_back_to_id_when_metadata_is_missing():
    s = "2026-06-01-0931-claude-code-2"
    p = plan(_folder({s: "# Session\n\nno metadata here\n"}), index_text([]))
    r = p.actions[0].row
    assert (r.agent_name, r.started_at, r.updated_at, r.topic) == (
        "claude-code",
        "2026-06-01 09:31",
        "2026-06-01 09:31",
        "未設定",
    )


def test_newer_snapshot_syncs_topic_status_updated_only():
    s = sid(11)
    old = row(s, topic="old", status="stale", updated="2026-06-01 09:00", refs="2026-06-01-0000-x", summary="keep me")
    p = plan(
        _folder({s: snapshot_text(s, topic="new", status="active", updated="2026-06-01 10:00")}), index_text([old])
    )
    assert p.actions == [SyncRow(old, old.with_(topic="new", status="active", updated_at="2026-06-01 10:00"))]


@pytest.mark.parametrize(
    ("updated", "want"),
    [("2026-06-01 09:45", "2026-06-01 09:45"), ("2026-06-01 09:00", "2026-06-01 09:00"), ("", "2026-06-01 09:45")],
)
def test_snapshot_not_newer_still_brings_the_row_in_step(updated, want):
    # Row and snapshot agree after every sync, toward the snapshot's Metadata, by doctor --fix's
    # rule (docs/board.md): a same-time or older snapshot with another Topic/Status no longer
    # leaves the board out of step; an unreadable Updated At leaves the row's time.
    s = sid(12)
    old = row(s, status="idle", updated="2026-06-01 09:45")
    p = plan(_folder({s: snapshot_text(s, topic="other", status="active", updated=updated)}), index_text([old]))
    assert p.actions == [SyncRow(old, old.with_(topic="other", status="active", updated_at=want))]


def test_snapshot_in_step_changes_nothing():
    s = sid(12)
    old = row(s, topic="same", updated="2026-06-01 09:45")
    p = plan(_folder({s: snapshot_text(s, topic="same", updated="2026-06-01 09:45")}), index_text([old]))
    assert p.actions == []


def test_unknown_snapshot_status_keeps_row_status():
    s = sid(13)
    old = row(s, status="stale", updated="2026-06-01 09:00")
    p = plan(_folder({s: snapshot_text(s, status="closed", updated="2026-06-01 10:00")}), index_text([old]))
    assert p.actions[0].after.status == "stale"


def test_deleted_snapshot_is_reported_never_deleted():
    s, t = sid(14), sid(15)
    text = index_text([row(s), row(t, status="idle")])
    p = plan(_folder({}), text, previous_sessions={s})
    assert p.actions == [] and [r.kind for r in p.reports] == ["snapshot_deleted"] and p.reports[0].session_id == s
    first = plan(_folder({}), text, previous_sessions=None)
    assert [r.kind for r in first.reports] == ["snapshot_missing"]  # the active one; idle rows need no file


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.replace("| Topic |", "| Thema |"),
        lambda t: t + "| broken | row |\n",
        lambda t: t + it.render_row(row(sid(20))) + "\n",  # duplicate ID
        lambda t: t + "\nstray text\n" + it.render_row(row(sid(21))) + "\n",
    ],
)
def test_damaged_table_is_reported_and_nothing_planned(damage):
    s = sid(20)
    text = damage(index_text([row(s)]))
    p = plan(_folder({sid(22): snapshot_text(sid(22))}, {"index (1).md": index_text([row(sid(23))])}), text)
    assert p.actions == [] and [r.kind for r in p.reports] == ["index_damaged"]
    again = plan(_folder(), text)
    assert again.reports[0].key == p.reports[0].key  # same damage, same key: reported once


def test_missing_index_is_reported_not_created():
    p = plan(_folder({sid(1): snapshot_text(sid(1))}), None)
    assert p.actions == [] and p.reports[0].kind == "index_missing"


def test_conflict_copy_with_3_extra_and_2_newer_rows_is_folded():
    base = [row(sid(i), updated="2026-06-01 10:00", topic=f"ours {i}") for i in range(5)]
    ours = index_text(base, preamble="# Memory Index\n\nNotes kept verbatim.\n\n")
    theirs_rows = [
        base[0].with_(topic="theirs newer 0", updated_at="2026-06-01 11:00"),
        base[1].with_(topic="theirs newer 1", updated_at="2026-06-01T11:30", referenced_by="2026-06-01-0000-zz"),
        base[2].with_(topic="theirs older 2", updated_at="2026-06-01 09:00", referenced_by="2026-06-01-0001-yy"),
        row(sid(100), topic="extra a"),
        row(sid(101), topic="extra b"),
        row(sid(102), topic="extra c"),
    ]  # base[3], base[4] missing from the copy: must not be deleted
    p = plan(_folder(conflicts={"index (1).md": index_text(theirs_rows)}), ours)
    assert len(p.actions) == 1 and isinstance(p.actions[0], FoldConflict)
    fold = p.actions[0]
    assert fold.move and set(fold.added) == {sid(100), sid(101), sid(102)}
    assert set(fold.updated) == {sid(0), sid(1), sid(2)}
    doc = it.parse_index(fold.new_text)
    assert len(doc.rows) == 8 and not doc.bad
    assert doc.get(sid(0)).topic == "theirs newer 0" and doc.get(sid(1)).topic == "theirs newer 1"
    assert doc.get(sid(2)).topic == "ours 2" and doc.get(sid(2)).referenced_by == "2026-06-01-0001-yy"  # refs united
    assert doc.get(sid(3)) == base[3] and doc.get(sid(4)) == base[4]
    assert fold.new_text.startswith("# Memory Index\n\nNotes kept verbatim.\n\n")
    # Folding the same copy again changes nothing.
    assert fold_rows(fold.new_text, it.parse_index(index_text(theirs_rows)).row_list())[1:] == ([], [])


def test_conflict_copy_with_bad_rows_is_folded_but_left_in_place():
    copy = index_text([row(sid(30), status="idle")]) + "| broken |\n"
    p = plan(_folder(conflicts={"index.sync-conflict-20260601-x.md": copy}), index_text([]))
    assert p.actions[0].added == (sid(30),) and p.actions[0].move is False
    assert [r.kind for r in p.reports] == ["conflict_partial"]


def test_unreadable_conflict_copy_is_reported():
    p = plan(_folder(conflicts={"index (2).md": "| a | b |\n|---|---|\n| x | y |\n"}), index_text([]))
    assert p.actions == [] and p.reports[0].kind == "conflict_unreadable"


def test_fold_then_add_plans_against_the_folded_table():
    s = sid(40)
    p = plan(
        _folder(
            {s: snapshot_text(s, updated="2026-06-01 12:00")},
            {"index (1).md": index_text([row(s, updated="2026-06-01 10:00")])},
        ),
        index_text([]),
    )
    assert [type(a) for a in p.actions] == [FoldConflict, SyncRow]
    final = _apply_text(index_text([]), p.actions)
    assert it.parse_index(final).get(s).updated_at == "2026-06-01 12:00"


def test_bad_session_file_names_and_id_mismatch_are_reported():
    good = sid(50)
    p = plan(_folder({"Notes": "x", good: snapshot_text("2026-01-01-0000-other")}), index_text([]))
    kinds = sorted(r.kind for r in p.reports)
    assert kinds == ["session_file_name", "session_id_mismatch"]
    assert [a.row.session_id for a in p.actions] == [good]


_cell = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    topics=st.lists(_cell, min_size=1, max_size=4),
    statuses=st.lists(st.sampled_from(["active", "idle", "stale", "closed", ""]), min_size=4, max_size=4),
    minutes=st.lists(st.integers(0, 59), min_size=4, max_size=4),
    have_row=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_plan_is_idempotent_and_keeps_every_row(topics, statuses, minutes, have_row):
    """Applying a plan and planning again gives nothing to do; no row is ever lost; output parses."""
    sessions, rows = {}, []
    for i, topic in enumerate(topics):
        s = sid(60 + i)
        sessions[s] = snapshot_text(
            s,
            topic=topic.replace("\n", " ").replace("|", "/"),
            status=statuses[i],
            updated=f"2026-06-01 10:{minutes[i]:02d}",
        )
        if have_row[i]:
            rows.append(row(s, updated="2026-06-01 10:30"))
    rows.append(row(sid(200), status="idle"))
    text = index_text(rows)
    folder = _folder(sessions)
    p = plan(folder, text)
    final = _apply_text(text, p.actions)
    doc = it.parse_index(final)
    assert not doc.bad
    assert set(doc.ids()) == set(sessions) | {r.session_id for r in rows}
    assert plan(folder, final).actions == []
