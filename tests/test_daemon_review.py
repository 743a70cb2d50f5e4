"""Reviewer's regression tests for the daemon: queue compaction, recall index kept fresh after
extraction, the rotating log, and one code path for collecting extraction results."""

from __future__ import annotations

import json
import logging

from agentmem_vault.daemon import queue as xq
from agentmem_vault.daemon.scan import scan_memory
from agentmem_vault.daemon.service import Daemon

from daemon_helpers import FakeClock, sid


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
