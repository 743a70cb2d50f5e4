"""The daemon as users run it: a real child process on a temporary vault.

What is asserted is the daemon's contract (docs/daemon.md): a hand-written snapshot gets its row
(native events, or within a rescan when polling); the daemon's own writes cause no further writes;
SIGTERM/SIGINT stop it within 2 s. No fixed sleeps: each step waits on the daemon's files and its
status counters, with deadlines generous enough for a loaded 2-core runner.
"""

from __future__ import annotations

import json
import signal
import sys
import time

import pytest

from agentmem_vault.ops.board import load_index
from daemon_helpers import DaemonProc, index_text, read_status, row, sid, snapshot_text, wait_for

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals are POSIX; Windows uses the stop file")


def _row_of(vault, session_id):
    def pred():
        try:
            return load_index(vault).find(session_id)
        except Exception:  # mid-write reads are retried
            return None

    return pred


def _counters(vault) -> dict:
    return read_status(vault).get("counters", {})


def _daemon_actions(vault) -> list[str]:
    lines = vault.journal_path.read_text(encoding="utf-8").splitlines() if vault.journal_path.exists() else []
    return [j["action"] for j in map(json.loads, lines) if j["command"] == "daemon"]


def _no_echo_loop(vault, d, markers: list[str]) -> None:
    """Write one marker snapshot after another, each once the previous has its row: a barrier.
    When the last marker's pass is counted, the echoes of every earlier write by the daemon have
    been handled (events reach the loop in order); an echo taken for an outside change would count
    as an event and run a pass of its own, and a loop would write again."""
    before, actions = _counters(vault), _daemon_actions(vault)
    for m in markers:
        (vault.sessions_dir / f"{m}.md").write_text(snapshot_text(m, topic=f"marker {m[-25:]}"), encoding="utf-8")
        got, secs = wait_for(_row_of(vault, m), 30.0)
        assert got is not None, f"no row for {m} after {secs:.1f}s; {d.stderr()}"
    n = len(markers)
    after, _ = wait_for(
        lambda: (lambda c: c if c.get("passes", 0) >= before["passes"] + n else None)(_counters(vault)), 30.0
    )
    assert after is not None, d.stderr()
    assert (after["events"] - before["events"], after["passes"] - before["passes"]) == (n, n), (before, after)
    assert _daemon_actions(vault)[len(actions) :] == ["append_row"] * n


def test_native_row_conflict_fold_no_loop_and_sigterm(vault):
    base = [row(sid(i), updated="2026-06-01 10:00", topic=f"ours {i}", status="idle") for i in range(4)]
    vault.index_path.write_text(index_text(base), encoding="utf-8")
    with DaemonProc(vault, "--rescan", "30") as d:  # a long rescan: only native events can be this fast
        # 1. A snapshot written by hand gets its row within 3 s.
        s = sid(100)
        (vault.sessions_dir / f"{s}.md").write_text(snapshot_text(s, topic="手寫的 snapshot"), encoding="utf-8")
        got, secs = wait_for(_row_of(vault, s), 30.0)
        assert got is not None, f"no row after {secs:.2f}s; log: {d.stderr()}"
        assert got.topic == "手寫的 snapshot" and got.status == "active"

        # 2. A conflict copy with 3 extra rows and 2 newer rows is folded in; nothing is lost.
        theirs = [
            base[0].with_(topic="newer 0", updated_at="2026-06-01 11:00"),
            base[1].with_(topic="newer 1", updated_at="2026-06-01 11:05"),
            row(sid(200), status="idle"),
            row(sid(201), status="idle"),
            row(sid(202), status="idle"),
        ]
        copy = vault.memory / "index (1).md"
        copy.write_text(index_text(theirs), encoding="utf-8")
        moved = vault.state_dir / "conflicts" / "index (1).md"
        ok, secs = wait_for(lambda: not copy.exists() and moved.exists(), 30.0)
        assert ok, d.stderr()
        doc = load_index(vault)
        assert not doc.bad and len(doc.rows) == 4 + 1 + 3
        assert doc.get(sid(0)).topic == "newer 0" and doc.get(sid(1)).topic == "newer 1"
        assert doc.get(sid(2)) == base[2] and doc.get(sid(3)) == base[3]
        assert moved.read_text(encoding="utf-8") == index_text(theirs)

        # 3. No loops: the daemon's own writes (the fold, the rows) are not taken for changes.
        ok, _ = wait_for(lambda: _counters(vault).get("conflicts_folded") == 1, 30.0)
        assert ok, d.stderr()
        _no_echo_loop(vault, d, [sid(101), sid(102)])
        assert read_status(vault)["errors"] == []

        # 4. SIGTERM stops it within 2 s, cleanly.
        secs = d.stop(signal.SIGTERM)
        assert secs < 2.0 and d.proc.returncode == 0, d.stderr()
    assert not (vault.state_dir / "daemon.pid").exists()
    assert read_status(vault)["state"] == "stopped"
    log = (vault.state_dir / "daemon.log").read_text(encoding="utf-8")
    assert "fold_conflict" in log and "daemon stopped" in log
    journal = [json.loads(line) for line in vault.journal_path.read_text(encoding="utf-8").splitlines()]
    assert {"append_row", "fold_conflict", "move_file"} <= {j["action"] for j in journal if j["command"] == "daemon"}


def test_polling_row_within_one_rescan_survives_bad_files_and_sigint(vault):
    rescan = 1.0
    with DaemonProc(vault, "--polling", "--rescan", str(rescan)) as d:
        # A file the daemon cannot read is reported and does not stop it.
        (vault.sessions_dir / f"{sid(1)}.md").write_bytes(b"\xff\xfe\x00 not text")
        s = sid(2)
        t0 = time.monotonic()
        (vault.sessions_dir / f"{s}.md").write_text(snapshot_text(s), encoding="utf-8")
        got, _ = wait_for(_row_of(vault, s), 30.0)
        latency = time.monotonic() - t0
        # Picked up by polling (no timing assert: a loaded 2-core runner can delay any process).
        assert got is not None, f"{latency:.2f}s; {d.stderr()}"
        assert load_index(vault).find(sid(1)) is None
        # Quiet afterwards: three markers, each seen by a later poll, cost one pass each; the
        # unreadable file is not reported again at every rescan.
        ok, _ = wait_for(lambda: _counters(vault).get("rows_added") == 1, 30.0)
        assert ok, d.stderr()
        _no_echo_loop(vault, d, [sid(3), sid(4), sid(5)])
        reports = read_status(vault)["reports"]
        assert [r["kind"] for r in reports] == ["session_unreadable"]  # reported once, not every rescan
        assert d.stop(signal.SIGINT) < 2.0 and d.proc.returncode == 0


def test_start_status_stop_and_damaged_index(vault, cli):
    r = cli("daemon", "status", "--json", vault=vault)
    assert r.returncode == 3 and json.loads(r.stdout)["running"] is False
    r = cli("daemon", "start", "--rescan", "0.5", "--json", vault=vault)
    assert r.returncode == 0, r.stderr
    pid = json.loads(r.stdout)["pid"]
    try:
        again = cli("daemon", "start", vault=vault)
        assert again.returncode == 1 and "already running" in again.stderr
        run = cli("daemon", "run", vault=vault)
        assert run.returncode == 1 and "already running" in run.stderr

        # A hook records a finished transcript: the queue shows it (no extractor yet, or quiet period).
        line = {
            "kind": "transcript",
            "path": "/tmp/轉錄 1.jsonl",
            "session_id": sid(1),
            "conversation_id": "c1",
            "agent": "cursor-main-agent",
            "time": "2026-06-01T10:00:00",
        }
        with open(vault.state_dir / "extract-queue.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        st, _ = wait_for(
            lambda: (lambda s: s if s["queue_length"] == 1 else None)(
                json.loads(cli("daemon", "status", "--json", vault=vault).stdout)
            ),
            30.0,
            0.2,
        )
        assert st and st["running"] and st["pid"] == pid and st["uptime_seconds"] >= 0
        assert st["queue"]["items"][0]["key"] == "transcript:/tmp/轉錄 1.jsonl"

        # A hand-damaged table is reported once and never rewritten, even with a snapshot to add.
        damaged = index_text([row(sid(5))]) + "| broken row |\n"
        vault.index_path.write_text(damaged, encoding="utf-8")
        (vault.sessions_dir / f"{sid(6)}.md").write_text(snapshot_text(sid(6)), encoding="utf-8")
        ok, _ = wait_for(lambda: any(r["kind"] == "index_damaged" for r in read_status(vault).get("reports", [])), 30.0)
        assert ok
        # The snapshot changes again: one more pass over the damaged table, which still writes nothing.
        passes = _counters(vault)["passes"]
        (vault.sessions_dir / f"{sid(6)}.md").write_text(snapshot_text(sid(6), topic="edited"), encoding="utf-8")
        ok, _ = wait_for(lambda: _counters(vault)["passes"] > passes, 30.0)
        assert ok
        assert vault.index_path.read_text(encoding="utf-8") == damaged
        assert [r["kind"] for r in read_status(vault)["reports"]].count("index_damaged") == 1
        # Repaired by hand: the pending snapshot gets its row.
        vault.index_path.write_text(index_text([row(sid(5))]), encoding="utf-8")
        got, _ = wait_for(_row_of(vault, sid(6)), 30.0)
        assert got is not None

        human = cli("daemon", "status", vault=vault)
        assert human.returncode == 0, human.stderr  # running: systemd's 0
        assert (
            f"running (pid {pid}" in human.stdout and "extraction queue: 2 pending" in human.stdout
        )  # the transcript + the new snapshot
    finally:
        r = cli("daemon", "stop", "--json", vault=vault)
    assert r.returncode == 0 and json.loads(r.stdout)["stopped"] is True, r.stdout + r.stderr
    assert json.loads(cli("daemon", "status", "--json", vault=vault).stdout)["running"] is False
    r = cli("daemon", "stop", vault=vault)
    assert r.returncode == 0 and "no daemon" in r.stdout


def test_a_quiet_session_is_handed_to_long_term_extraction(vault):
    with open(vault.config_path, "a", encoding="utf-8") as fh:
        fh.write("quiet_minutes: 0.02\n")  # 1.2 s instead of 10 minutes
    with DaemonProc(vault) as d:
        s = sid(300)
        (vault.sessions_dir / f"{s}.md").write_text(
            snapshot_text(
                s, context="- Remember: every API endpoint in this project is named in snake_case, never camelCase."
            ),
            encoding="utf-8",
        )
        notes, secs = wait_for(lambda: [p for p in vault.longterm_dir.glob("*.md")], 60.0, 0.1)
        assert notes, f"no long-term note after {secs:.1f}s; {d.stderr()}"
        assert f"[[{s}]]" in notes[0].read_text(encoding="utf-8")
        st, _ = wait_for(
            lambda: (lambda s: s if s.get("queue", {}).get("done") == 1 else None)(read_status(vault)), 30.0
        )
        assert st and st["queue"]["pending"] == 0 and st["extractor"] == "available", read_status(vault)
        assert d.stop() < 2.0
