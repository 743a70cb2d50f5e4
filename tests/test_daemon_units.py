"""Daemon pieces with real files but no threads: event filter, extraction queue, apply, one pass."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest
from watchdog.events import (
    DirMovedEvent,
    FileClosedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

from agentmem_vault.ops.board import load_index
from agentmem_vault.daemon import queue as xq
from agentmem_vault.daemon.apply import apply_plan, conflict_destination
from agentmem_vault.daemon.reconcile import plan
from agentmem_vault.daemon.scan import scan_memory
from agentmem_vault.daemon.service import Daemon
from agentmem_vault.daemon.watch import RESCAN, PathFilter
from agentmem_vault.board.store import BoardWriter
from daemon_helpers import FakeClock, index_text, row, sid, snapshot_text
from hooks_helpers import RULE

# -- event filter (synthetic watchdog events, no observer) -----------------------------------------


def test_path_filter_keeps_only_watched_paths(tmp_path):
    mem = tmp_path / "memory"
    got: list[str] = []
    f = PathFilter(mem, got.append)
    s = f"{mem}/sessions/{sid(1)}.md"
    for ev in [
        FileCreatedEvent(s),
        FileModifiedEvent(f"{mem}/index.md"),
        FileClosedEvent(s),
        FileMovedEvent(f"{mem}/.index.md.1.2.agentmem-tmp", f"{mem}/index.md"),  # an atomic replace
        FileMovedEvent(f"{mem}/sessions/a.tmp", f"{mem}/index (1).md"),
        FileDeletedEvent(f"{mem}/sessions/{sid(2)}.md"),
        FileModifiedEvent(f"{mem}/.agentmem/journal.jsonl"),
        FileModifiedEvent(f"{mem}/.agentmem/x.md"),
        FileModifiedEvent(f"{mem}/archive/{sid(3)}/index.md"),
        FileModifiedEvent(f"{mem}/long-term/n.md"),
        FileOpenedEvent(s),
        FileClosedNoWriteEvent(s),  # reads (the daemon's own) never count
        FileModifiedEvent(f"{tmp_path}/elsewhere/index.md"),
        FileModifiedEvent(f"{mem}/sessions/.hidden.md"),
        DirMovedEvent(f"{mem}/sessions", f"{mem}/sessions-old"),
    ]:
        f.dispatch(ev)
    assert got == [
        f"sessions/{sid(1)}.md",
        "index.md",
        f"sessions/{sid(1)}.md",
        "index.md",
        "index (1).md",
        f"sessions/{sid(2)}.md",
        RESCAN,
    ]


def test_path_filter_survives_a_failing_sink(tmp_path, caplog):
    def boom(rel: str) -> None:
        raise RuntimeError("sink broke")

    PathFilter(tmp_path, boom).dispatch(FileModifiedEvent(f"{tmp_path}/index.md"))
    assert "sink broke" in caplog.text


# -- extraction queue ------------------------------------------------------------------------------


def _hook_line(path: str, **kw) -> bytes:
    item = {
        "kind": "transcript",
        "path": path,
        "session_id": sid(1),
        "conversation_id": "c-1",
        "agent": "cursor-main-agent",
        "time": "2026-06-01T10:00:00",
        **kw,
    }
    return (json.dumps(item, ensure_ascii=False) + "\n").encode()


def test_queue_takes_hook_lines_waits_for_quiet_and_survives_restart(tmp_path):
    wall = FakeClock(5000.0)
    q = xq.ExtractionQueue(tmp_path, quiet_seconds=600, clock=wall)
    q.load()
    qp = tmp_path / xq.QUEUE_FILE
    qp.write_bytes(
        _hook_line("/t/一.jsonl")
        + b"not json\n"
        + b'{"kind": "session", "session_id": "../x"}\n'
        + b'{"kind": "transcript", "path": "/t/half'
    )  # a line still being written
    assert q.poll() == 1 and q.bad_lines == 2
    with open(qp, "ab") as fh:
        fh.write(b'.jsonl"}\n')
    assert q.poll() == 1 and q.poll() == 0
    q.note_snapshot(sid(2), "sha1")
    assert not q.note_snapshot(sid(2), "sha1")  # unchanged snapshot: not queued again
    assert q.due() == []
    wall.advance(599)
    q.note_snapshot(sid(2), "sha2")  # changed again: its quiet period starts over
    wall.advance(2)
    assert sorted(k for k, _ in q.due()) == ["transcript:/t/half.jsonl", "transcript:/t/一.jsonl"]
    q.save()
    q2 = xq.ExtractionQueue(tmp_path, quiet_seconds=600, clock=wall)
    q2.load()
    assert q2.poll() == 0 and len(q2.pending) == 3 and q2.seen == {sid(2): "sha2"}
    wall.advance(600)
    assert len(q2.due()) == 3
    q2.mark_done(f"session:{sid(2)}")
    assert q2.summary()["pending"] == 2 and q2.summary()["done"] == 1


def test_queue_retries_then_gives_up_and_rereads_a_truncated_file(tmp_path):
    wall = FakeClock()
    q = xq.ExtractionQueue(tmp_path, quiet_seconds=10, clock=wall, max_attempts=2)
    q.enqueue({"kind": "transcript", "path": "/t/a.jsonl"})
    wall.advance(10)
    key = q.due()[0][0]
    q.mark_failed(key, "model down")
    assert q.due() == []  # backs off
    wall.advance(10)
    q.mark_failed(key, "model down")
    assert q.pending == {} and key in q.failed and q.summary()["failed"] == 1
    (tmp_path / xq.QUEUE_FILE).write_bytes(_hook_line("/t/b.jsonl"))  # replaced by something shorter
    assert q.poll() == 1 and "transcript:/t/b.jsonl" in q.pending


def test_mark_done_keeps_an_item_touched_during_extraction(tmp_path):
    wall = FakeClock()
    q = xq.ExtractionQueue(tmp_path, quiet_seconds=1, clock=wall)
    q.note_snapshot(sid(1), "a")
    touched = q.pending[f"session:{sid(1)}"]["last_seen"]
    wall.advance(5)
    q.note_snapshot(sid(1), "b")
    q.mark_done(f"session:{sid(1)}", touched)
    assert f"session:{sid(1)}" in q.pending


def test_enqueue_rejects_bad_items(tmp_path):
    q = xq.ExtractionQueue(tmp_path, quiet_seconds=1)
    with pytest.raises(ValueError):
        q.enqueue({"kind": "session", "session_id": "../../etc"})


def test_missing_extraction_module_is_reported_not_raised(monkeypatch):
    monkeypatch.setitem(sys.modules, "agentmem_vault.longterm.extract", None)
    fn, why = xq.load_extractor(object())
    assert fn is None and "not available" in why


# -- apply through BoardWriter ---------------------------------------------------------------------


def test_fold_moves_copy_into_conflicts_and_never_overwrites(vault):
    vault.index_path.write_text(index_text([row(sid(1))]), encoding="utf-8")
    for n in range(2):
        copy = vault.memory / "index (1).md"
        copy.write_text(index_text([row(sid(1)), row(sid(10 + n), status="idle")]), encoding="utf-8")
        folder = scan_memory(vault.memory)
        with BoardWriter(vault, "daemon") as w:
            res = apply_plan(w, plan(folder, w.index_text()))
        assert res.errors == [] and not copy.exists()
        assert res.done[0]["moved_to"].startswith(".agentmem/conflicts/index (1)")
    moved = sorted(p.name for p in (vault.state_dir / "conflicts").iterdir())
    assert len(moved) == 2 and moved[0] != moved[1]
    assert set(load_index(vault).ids()) == {sid(1), sid(10), sid(11)}
    assert conflict_destination(vault.state_dir, "fresh.md").name == "fresh.md"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_apply_records_errors_and_goes_on(vault):
    vault.index_path.write_text(index_text([]), encoding="utf-8")
    (vault.sessions_dir / f"{sid(1)}.md").write_text(snapshot_text(sid(1)), encoding="utf-8")
    os.chmod(vault.index_path, stat.S_IRUSR)
    try:
        with BoardWriter(vault, "daemon") as w:
            res = apply_plan(w, plan(scan_memory(vault.memory), w.index_text()))
    finally:
        os.chmod(vault.index_path, stat.S_IRUSR | stat.S_IWUSR)
    assert res.done == [] and res.errors and res.errors[0]["code"] == "read_only"
    assert load_index(vault).ids() == []


# -- one daemon pass in-process (no observer thread) -----------------------------------------------


def _daemon(vault, **kw) -> Daemon:
    d = Daemon(vault, rescan_seconds=30, debounce_seconds=0, quiet_minutes=0, **kw)
    d.queue.load()
    d.passes.folder = scan_memory(vault.memory)
    return d


def test_own_writes_are_recognised_by_content_hash(vault):
    d = _daemon(vault, extractor_loader=lambda v: (None, "not yet"))
    (vault.sessions_dir / f"{sid(1)}.md").write_text(snapshot_text(sid(1)), encoding="utf-8")
    d.passes.handle_paths([f"sessions/{sid(1)}.md"])
    assert load_index(vault).ids() == [sid(1)]
    events = d.status.data["counters"]["events"]
    mtime = vault.index_path.stat().st_mtime_ns
    d.passes.handle_paths(["index.md"])  # the echo of our own write
    d.rescan()
    assert d.status.data["counters"]["events"] == events and vault.index_path.stat().st_mtime_ns == mtime
    # Someone else edits the index: that is an event, and the missing row comes back.
    vault.index_path.write_text(index_text([]), encoding="utf-8")
    d.passes.handle_paths(["index.md"])
    assert d.status.data["counters"]["events"] == events + 1 and load_index(vault).ids() == [sid(1)]
    # Extraction unavailable: the session stays queued and visible.
    d.extraction.tick()
    assert d.status.data["queue"]["pending"] == 1 and d.status.data["extractor"] == "not yet"


def test_a_failing_handler_is_logged_and_the_daemon_goes_on(vault, caplog):
    d = _daemon(vault)

    def broken(_):
        raise KeyError("boom")

    assert d.guard("events", broken, []) is None
    assert d.status.data["counters"]["errors"] == 1 and "boom" in d.status.errors[-1]["error"]


def test_due_items_are_handed_to_extraction(vault):
    calls: list[dict] = []

    def loader(v):
        def run(item):
            if item.get("path") == "/bad":
                raise RuntimeError("cannot read")
            calls.append(item)

        return run, None

    d = _daemon(vault, extractor_loader=loader)
    d.queue.note_snapshot(sid(1), "x")
    d.queue.enqueue({"kind": "transcript", "path": "/bad"})
    d.extraction.tick()
    d.extraction.worker.join(timeout=5)
    d.extraction.tick()
    assert [c["session_id"] for c in calls] == [sid(1)]
    q = d.status.data["queue"]
    assert q["done"] == 1 and q["pending"] == 1 and "cannot read" in q["items"][0]["error"]
    d.queue.save()
    state = json.loads((vault.state_dir / xq.STATE_FILE).read_text(encoding="utf-8"))
    assert list(state["pending"]) == ["transcript:/bad"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_a_failed_pass_is_retried_at_the_next_rescan(vault):
    d = _daemon(vault, extractor_loader=lambda v: (None, "not yet"))
    (vault.sessions_dir / f"{sid(1)}.md").write_text(snapshot_text(sid(1)), encoding="utf-8")
    os.chmod(vault.index_path, stat.S_IRUSR)
    try:
        d.passes.handle_paths([f"sessions/{sid(1)}.md"])
    finally:
        os.chmod(vault.index_path, stat.S_IRUSR | stat.S_IWUSR)
    assert load_index(vault).ids() == [] and d.passes.needs_pass and d.status.data["counters"]["errors"] == 1
    d.rescan()  # nothing new on disk, but the failed pass is done again
    assert load_index(vault).ids() == [sid(1)] and not d.passes.needs_pass


def test_queue_reads_what_the_session_end_hooks_write(vault):
    from agentmem_vault.ops.conversations import queue_transcript

    for _ in range(3):  # Cursor's stop hook fires after every turn: one item per path
        queue_transcript(
            vault, "/home/u/.cursor/轉錄 a.jsonl", agent="cursor", session_id=sid(1), conversation_id="c-1"
        )
    d = _daemon(vault, extractor_loader=lambda v: (None, "not yet"))
    d.queue.enqueue({"kind": "session", "session_id": sid(2)})  # under the same lock as the hooks
    assert sorted(d.queue.pending) == [f"session:{sid(2)}", "transcript:/home/u/.cursor/轉錄 a.jsonl"]


# -- the extraction queue file, extraction results and the logs ------------------------------------


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_finished_items_are_compacted_out_of_the_queue_file(tmp_path):
    wall = FakeClock()
    q = xq.ExtractionQueue(tmp_path, quiet_seconds=1, clock=wall, compact_bytes=1)
    for i in range(40):  # Cursor's stop hook: the same transcripts over and over
        q.enqueue({"kind": "transcript", "path": f"/t/{i % 4}.jsonl"})
    q.note_snapshot(sid(1), "a")
    wall.advance(2)
    for key, _ in q.due():
        if key != "transcript:/t/3.jsonl":
            q.mark_done(key)
    qp = tmp_path / xq.QUEUE_FILE
    before = qp.stat().st_size
    assert q.compact()
    assert [x["path"] for x in _lines(qp)] == ["/t/3.jsonl"] and qp.stat().st_size < before / 10
    assert not q.compact()  # nothing more to drop
    # A hook appends after the compaction: read once, nothing re-read.
    with open(qp, "ab") as fh:
        fh.write(b'{"kind": "transcript", "path": "/t/new.jsonl"}\n')
    assert q.poll() == 1 and sorted(q.pending) == ["transcript:/t/3.jsonl", "transcript:/t/new.jsonl"]
    q.save()
    again = xq.ExtractionQueue(tmp_path, quiet_seconds=1, clock=wall)
    again.load()
    assert again.poll() == 0 and sorted(again.pending) == sorted(q.pending)
    # The file alone (state deleted) still holds every unfinished item.
    (tmp_path / xq.STATE_FILE).unlink()
    fresh = xq.ExtractionQueue(tmp_path, quiet_seconds=1, clock=wall)
    fresh.load()
    fresh.poll()
    assert sorted(fresh.pending) == sorted(q.pending)


def test_small_queue_files_are_left_alone(tmp_path):
    q = xq.ExtractionQueue(tmp_path, quiet_seconds=0)
    q.enqueue({"kind": "transcript", "path": "/t/a.jsonl"})
    q.mark_done("transcript:/t/a.jsonl")
    assert not q.compact() and (tmp_path / xq.QUEUE_FILE).stat().st_size > 0


def test_notes_written_by_queued_extraction_reach_session_start(vault):
    from agentmem_vault.recall.index import RecallIndex
    from agentmem_vault.recall.session_start import session_start_context

    RecallIndex(vault).sync()  # an index exists, built before the note

    def loader(v):
        def run(item):
            v.longterm_dir.mkdir(parents=True, exist_ok=True)
            (v.longterm_dir / "回答語言.md").write_text(RULE, encoding="utf-8")

        return run, None

    d = _daemon(vault, extractor_loader=loader)
    assert "回答語言" not in session_start_context(vault)
    d.queue.note_snapshot(sid(1), "x")
    d.extraction.tick()
    d.extraction.worker.join(timeout=5)
    d.extraction.tick()
    assert d.status.data["queue"]["done"] == 1
    assert "以後回答一律用繁體中文" in session_start_context(vault)


def test_a_note_written_by_hand_reaches_session_start_after_a_rescan(vault):
    from agentmem_vault.recall.index import RecallIndex
    from agentmem_vault.recall.session_start import session_start_context

    RecallIndex(vault).sync()
    d = _daemon(vault, extractor_loader=lambda v: (None, "not yet"))
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "回答語言.md").write_text(RULE, encoding="utf-8")  # Obsidian, no event
    assert "回答語言" not in session_start_context(vault)
    d.rescan()
    assert "以後回答一律用繁體中文" in session_start_context(vault)


def test_finished_results_are_recorded_at_shutdown_too(vault):
    d = _daemon(vault, extractor_loader=lambda v: ((lambda item: None), None))
    d.queue.note_snapshot(sid(1), "x")
    d.extraction.tick()
    d.extraction.worker.join(timeout=5)
    d.shutdown()
    state = json.loads((vault.state_dir / xq.STATE_FILE).read_text(encoding="utf-8"))
    assert state["pending"] == {} and state["done_count"] == 1


def test_the_daemon_log_rotates(vault, monkeypatch):
    from agentmem_vault.daemon import paths, process

    monkeypatch.setattr(process, "LOG_MAX_BYTES", 2_000)
    monkeypatch.setattr(process.log, "propagate", process.log.propagate)  # restored for caplog users
    monkeypatch.setattr(process.log, "level", process.log.level)
    handlers = process.setup_logging(vault, to_stderr=False)
    try:
        for i in range(200):
            process.log.info("line %d %s", i, "x" * 40)
    finally:
        for h in handlers:
            process.log.removeHandler(h)
            h.close()
    lp = paths.log_path(vault)
    rotated = sorted(p.name for p in lp.parent.glob(lp.name + ".*"))
    assert rotated == [f"{lp.name}.{i}" for i in range(1, process.LOG_BACKUPS + 1)]
    assert all(p.stat().st_size <= 2_100 for p in lp.parent.glob(lp.name + "*"))
    assert "line 199" in lp.read_text(encoding="utf-8")


def test_a_conflict_copy_does_not_put_an_archived_session_back_on_the_board(vault):
    """Machine A archives a session while machine B still edits the old board: Google Drive leaves
    'index (1).md' with the archived row. Folding must not resurrect it (archive is final); the
    copy is still kept under .agentmem/conflicts/ and other rows are folded as usual."""
    from agentmem_vault.board import table as it
    from agentmem_vault.fs import read_text

    gone, other = sid(5), sid(6)
    vault.index_path.write_text(index_text([]), encoding="utf-8")
    (vault.archive_dir / gone).mkdir(parents=True)
    (vault.archive_dir / gone / "index.md").write_text("# Archived Session\n", encoding="utf-8")
    (vault.memory / "index (1).md").write_text(index_text([row(gone), row(other)]), encoding="utf-8")
    d = _daemon(vault, extractor_loader=lambda v: (None, "not yet"))
    d.passes.reconcile_pass()
    ids = it.parse_index(read_text(vault.index_path)).ids()
    assert ids == [other]
    assert not (vault.memory / "index (1).md").exists() and any((vault.state_dir / "conflicts").iterdir())
    assert any(r["kind"] == "conflict_archived_row" and r["session_id"] == gone for r in d.status.reports)
