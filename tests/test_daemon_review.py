"""Regression tests for the daemon: queue compaction, recall index kept fresh after
extraction, the rotating log, and one code path for collecting extraction results."""

from __future__ import annotations

import json

from agentmem_vault.daemon import queue as xq

from daemon_helpers import FakeClock, sid
from review_helpers import RULE
from test_daemon_units import _daemon


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


def test_the_hooks_log_rotates(tmp_path, monkeypatch):
    from agentmem_vault.hooks import run as hooks

    monkeypatch.setattr(hooks, "LOG_MAX_BYTES", 500)
    (tmp_path / "memory").mkdir()
    for i in range(40):
        assert hooks.log_line(tmp_path, "cursor-session-start", "bad_payload", f"message {i} " + "y" * 30)
    log = tmp_path / "memory" / ".agentmem" / "hooks.log"
    old = log.with_name("hooks.log.1")
    assert old.is_file() and log.stat().st_size <= 600 and old.stat().st_size <= 600
    assert "message 39" in log.read_text(encoding="utf-8")


def test_a_conflict_copy_does_not_put_an_archived_session_back_on_the_board(vault):
    """Machine A archives a session while machine B still edits the old board: Google Drive leaves
    'index (1).md' with the archived row. Folding must not resurrect it (archive is final); the
    copy is still kept under .agentmem/conflicts/ and other rows are folded as usual."""
    from agentmem_vault.board import table as it
    from agentmem_vault.fs import read_text

    from daemon_helpers import index_text, row

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


def test_doctor_fix_does_not_put_an_archived_session_back_on_the_board(vault):
    from agentmem_vault.board import table as it
    from agentmem_vault.ops.doctor import repair
    from agentmem_vault.fs import read_text

    from daemon_helpers import index_text, row

    gone, other = sid(5), sid(6)
    vault.index_path.write_text(index_text([]), encoding="utf-8")
    (vault.archive_dir / gone).mkdir(parents=True)
    (vault.memory / "index (1).md").write_text(index_text([row(gone), row(other)]), encoding="utf-8")
    rep = repair(vault)
    assert it.parse_index(read_text(vault.index_path)).ids() == [other]
    assert any("archived since" in f.message and gone in f.message for f in rep.findings)
