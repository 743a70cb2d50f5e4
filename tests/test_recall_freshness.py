"""Recall results stay fresh without statting every note when a daemon vouches for the index
(recall/freshness.py), and an Obsidian edit (written in place: no folder mtime change) or a
deletion shows in the next query with and without a running daemon. Real files, a real daemon
subprocess; polling with generous deadlines, no fixed sleeps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_vault.config import Vault
from agentmem_vault.recall import freshness
from agentmem_vault.recall.index import RecallIndex
from agentmem_vault.recall.rank import search

from daemon_helpers import DaemonProc, wait_for
from recall_helpers import note_text


def _note(i: int, words: str) -> dict:
    return {
        "id": f"lt-{i:04x}",
        "title": f"note {i}",
        "keywords": ["k"],
        "usage_scenario": ["u"],
        "importance": 0.5,
        "updated": "2026-05-01T10:00",
        "content": f"plain body {i}. {words}",
    }


@pytest.fixture
def notes(vault: Vault) -> list[Path]:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(40):
        p = vault.longterm_dir / f"note {i}.md"
        p.write_text(note_text(_note(i, "ordinary words")), encoding="utf-8")
        out.append(p)
    return out


def _ids(vault: Vault, q: str, idx: RecallIndex | None = None) -> list[str]:
    return [h.id for h in search(vault, q, limit=5, semantic=None, index=idx, sync=True)]


def _edit_in_place(path: Path, words: str, i: int) -> None:
    """What Obsidian does: rewrite the file's bytes in place (same inode, folder untouched)."""
    folder = path.parent.stat()
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(note_text(_note(i, words)).encode("utf-8"))
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))
    assert path.parent.stat().st_mtime_ns == folder.st_mtime_ns


def _delete_keeping_folder_mtime(path: Path) -> None:
    folder = path.parent.stat()
    path.unlink()
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))


def test_edit_in_place_and_delete_show_in_the_next_query_without_a_daemon(vault: Vault, notes: list[Path]) -> None:
    assert not freshness.daemon_vouches(vault)
    assert _ids(vault, "zebracorn") == []
    idx = RecallIndex(vault).open()  # a long-lived caller (MCP server) keeps its index open
    try:
        assert _ids(vault, "quokkafish", idx) == []
        _edit_in_place(notes[7], "zebracorn quokkafish", 7)
        assert _ids(vault, "zebracorn quokkafish", idx) == ["lt-0007"]
        assert _ids(vault, "zebracorn") == ["lt-0007"]  # a fresh process-like caller too
        _delete_keeping_folder_mtime(notes[7])
        assert _ids(vault, "zebracorn", idx) == []
        assert _ids(vault, "zebracorn") == []
    finally:
        idx.close()


def test_daemon_vouches_and_keeps_the_index_fresh(vault: Vault, notes: list[Path]) -> None:
    _ids(vault, "warm")  # an index exists before the daemon starts, as usual
    with DaemonProc(vault, "--rescan", "600") as d:  # a long rescan: only events keep the index fresh
        ok, _ = wait_for(lambda: freshness.daemon_vouches(vault), 30)
        assert ok, d.stderr()
        idx = RecallIndex(vault).open()
        try:
            assert idx.sync().trusted  # no stat of every note while the daemon vouches
            _edit_in_place(notes[3], "zebracorn", 3)
            got, secs = wait_for(lambda: _ids(vault, "zebracorn", idx) == ["lt-0003"], 30)
            assert got, f"edit not reflected after {secs:.1f}s; log: {d.stderr()}"
            _delete_keeping_folder_mtime(notes[3])
            got, secs = wait_for(lambda: _ids(vault, "zebracorn", idx) == [], 30)
            assert got, f"deletion not reflected after {secs:.1f}s; log: {d.stderr()}"
            new = vault.longterm_dir / "sub" / "new.md"
            new.parent.mkdir()
            new.write_text(note_text(_note(99, "platypuswren")), encoding="utf-8")
            got, _ = wait_for(lambda: _ids(vault, "platypuswren", idx) == ["lt-0063"], 30)
            assert got, d.stderr()
            ok, _ = wait_for(lambda: freshness.daemon_vouches(vault), 30)
            assert ok
        finally:
            idx.close()
        d.stop()
    assert not freshness.daemon_vouches(vault)  # a stopped daemon vouches for nothing
    _edit_in_place(notes[5], "zebracorn", 5)
    assert _ids(vault, "zebracorn") == ["lt-0005"]  # checked by the query itself again


def test_a_polling_daemon_does_not_vouch(vault: Vault, notes: list[Path]) -> None:
    _ids(vault, "warm")
    with DaemonProc(vault, "--polling", "--rescan", "600"):
        _edit_in_place(notes[2], "zebracorn", 2)
        assert _ids(vault, "zebracorn") == ["lt-0002"]  # the query checks; no heartbeat to trust
        assert not freshness.daemon_vouches(vault)


def _write_beat(vault: Vault, **over: object) -> Path:
    path = freshness.heartbeat_path(vault)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"pid": os.getpid(), "host": freshness._host(), "state": "clean", "generation": 1, **over}
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def test_only_a_clean_recent_heartbeat_of_a_live_local_daemon_is_trusted(vault: Vault) -> None:
    _write_beat(vault)
    assert freshness.daemon_vouches(vault)
    _write_beat(vault, state="dirty")
    assert not freshness.daemon_vouches(vault)
    _write_beat(vault, host="another-machine")
    assert not freshness.daemon_vouches(vault)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _write_beat(vault, pid=int(dead.stdout))
    if os.name != "nt":
        assert not freshness.daemon_vouches(vault)
    path = _write_beat(vault)
    old = path.stat().st_mtime - freshness.MAX_AGE_SECONDS - 5
    os.utime(path, (old, old))
    assert not freshness.daemon_vouches(vault)
    path.write_text("{torn", encoding="utf-8")
    assert not freshness.daemon_vouches(vault)


def test_an_event_during_a_sync_keeps_the_heartbeat_dirty(vault: Vault) -> None:
    beat = freshness.Heartbeat(vault)
    gen = beat.generation
    assert beat.clean(gen) and freshness.daemon_vouches(vault)
    gen = beat.generation
    beat.dirty()  # observer thread: a note changed while the loop was syncing
    assert not freshness.daemon_vouches(vault)
    assert not beat.clean(gen)  # that sync started before the event: it vouches for nothing
    assert not freshness.daemon_vouches(vault)
    assert beat.clean(beat.generation)
    beat.remove()
    assert not freshness.daemon_vouches(vault)
