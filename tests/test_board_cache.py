"""The board summary (board/summary.py) always agrees with a full parse of memory/index.md.

Real files in a tmp vault: rows appended by our writers and by hand, rows edited in place, broken
rows, CRLF and BOM boards. After every step ``load`` (cache, tail parse or full parse, whichever
applies) must give what a full parse gives.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_vault.clock import parse_ts
from agentmem_vault.vault import Vault
from agentmem_vault.errors import IndexFormatError
from agentmem_vault.board import table as it
from agentmem_vault.board import summary as board_cache
from agentmem_vault.board.register import register_idle
from agentmem_vault.board.ids import taken_ids
from agentmem_vault.board.rules import active_order, pair_projects, ts_key
from agentmem_vault.board.store import BoardWriter


def make_vault(root: Path, rows: int = 0, *, newline: str = "\n", bom: bool = False) -> Vault:
    v = Vault(root)
    v.sessions_dir.mkdir(parents=True)
    v.archive_dir.mkdir(parents=True)
    text = it.new_index_text().replace("\n", newline)
    for i in range(rows):
        text += it.render_row(row(i, ("idle", "active", "stale")[i % 3])) + newline
    v.index_path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return v


def row(i: int, status: str = "active", updated: str | None = None) -> it.Row:
    sid = f"2026-05-{1 + i % 28:02d}-{i % 24:02d}{i % 60:02d}-agent-{i}"
    ts = updated or f"2026-05-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}"
    return it.Row(sid, "agent", f"topic {i}", f"summary {i}", "k", status, "-", ts, ts)


def full(v: Vault) -> tuple[it.IndexDoc, board_cache.BoardState | None]:
    data = v.index_path.read_bytes()
    doc = it.parse_index(data.decode("utf-8"))
    return doc, board_cache.from_doc(data, doc, _pairs(v))


def assert_agrees(v: Vault) -> board_cache.BoardState | None:
    """``load`` with the board's bytes, and then without them (the hook's way: read and checked
    against the summary), each agrees with a full parse."""
    data = v.index_path.read_bytes()
    doc, want = full(v)
    got = None
    for bytes_given in (data, None):
        got = board_cache.load(v, bytes_given)
        if want is None:
            assert got is None
            return None
        assert got is not None
        for attr in ("table_start", "writable", "appendable", "rows", "bom", "newline", "size", "ends_nl", "crc"):
            assert getattr(got, attr) == getattr(want, attr), attr
        if got.writable:
            order = active_order((r, -1) for r in doc.row_list())
            assert [sid for sid, _, _ in got.entries()] == [e[1] for e in order]
            assert all(got.row(sid, at) == doc.find(sid) for sid, at, _ in got.entries())
            assert (got.stamp, sorted(got.stamp_ids)) == (want.stamp, sorted(want.stamp_ids))
            for sid in doc.ids():
                assert got.has_row(sid) and got.row(sid) == doc.find(sid)
            assert not got.has_row("2026-01-01-0000-nobody")
            named = pair_projects(_pairs(v))  # every active session's project, as the pairs say now
            assert [p for _, _, p in got.entries()] == [named.get(e[1]) for e in order]
    return got


def _pairs(v: Vault) -> bytes:
    path = v.state_dir / "conversations.jsonl"
    return path.read_bytes() if path.exists() else b""


def cached(v: Vault) -> dict:
    """The summary file's facts, flat: its version, the board size it describes, the rest."""
    body = json.loads(board_cache.cache_path(v).read_text(encoding="utf-8"))
    return {"v": body["v"], "size": body["of"], **body["data"]}


def test_first_load_then_cache_hit_then_appended_tail(tmp_path: Path) -> None:
    v = make_vault(tmp_path / "v", 30)
    assert not board_cache.cache_path(v).exists()
    assert_agrees(v)
    assert cached(v)["size"] == v.index_path.stat().st_size
    assert_agrees(v)  # from the cache
    with open(v.index_path, "ab") as fh:  # another program appends two rows
        fh.write((it.render_row(row(100)) + "\n" + it.render_row(row(101, "idle")) + "\n").encode())
    st_ = assert_agrees(v)
    assert st_ is not None and st_.rows == 32 and st_.has_row(row(100).session_id)
    size = cached(v)["size"]
    assert size < v.index_path.stat().st_size  # two rows: parsed again next time rather than rewriting the summary
    with open(v.index_path, "ab") as fh:
        fh.write("".join(it.render_row(row(200 + i)) + "\n" for i in range(board_cache.SAVE_EVERY)).encode())
    assert_agrees(v)
    assert cached(v)["size"] == v.index_path.stat().st_size  # a long tail: the summary is rewritten


def test_a_registration_leaves_the_summary_file_as_it_was(tmp_path: Path) -> None:
    """A new chat appends one row; rewriting the summary for it (every active row of a big board)
    cost the hook more than the row: the next load parses the appended rows instead."""
    v = make_vault(tmp_path / "v", 30)
    assert_agrees(v)
    before = board_cache.cache_path(v).read_bytes()
    for minute in range(3):
        register_idle(v, "agent", when=datetime(2026, 6, 1, 9, minute))
        assert board_cache.cache_path(v).read_bytes() == before
        st_ = assert_agrees(v)
        assert st_ is not None and st_.rows == 31 + minute


def test_in_place_edit_of_same_size_is_noticed(tmp_path: Path) -> None:
    v = make_vault(tmp_path / "v", 12)
    assert_agrees(v)
    data = v.index_path.read_bytes()
    old = row(4)  # active
    # same length ('active' -> 'idle' + two characters more in the topic): size alone cannot tell
    edited = data.replace(
        it.render_row(old).encode(), it.render_row(old.with_(status="idle", topic="topic 4xx")).encode()
    )
    assert len(edited) == len(data) and edited != data
    v.index_path.write_bytes(edited)
    st_ = assert_agrees(v)
    assert st_ is not None and old.session_id not in [sid for sid, _, _ in st_.entries()]


def test_broken_row_makes_it_unwritable_and_register_refuses_as_before(tmp_path: Path) -> None:
    v = make_vault(tmp_path / "v", 5)
    assert_agrees(v)
    with open(v.index_path, "ab") as fh:
        fh.write(b"| not | a | row |\n")
    st_ = assert_agrees(v)
    assert st_ is not None and not st_.writable
    before = v.index_path.read_bytes()
    with pytest.raises(IndexFormatError):
        register_idle(v, "cursor-main-agent", when=datetime(2026, 6, 1, 9, 30))
    assert v.index_path.read_bytes() == before


@pytest.mark.parametrize("newline,bom", [("\n", False), ("\r\n", False), ("\n", True), ("\r\n", True)])
def test_fast_register_writes_exactly_what_the_full_path_writes(tmp_path: Path, newline: str, bom: bool) -> None:
    v = make_vault(tmp_path / "v", 7, newline=newline, bom=bom)
    when = datetime(2026, 5, 2, 1, 1)  # the minute of row 1: base ID free, but check the suffix rules too
    (v.sessions_dir / "2026-05-02-0101-cursor-main-agent.md").write_text("x", encoding="utf-8")
    (v.archive_dir / "2026-05-02-0101-cursor-main-agent-2").mkdir()
    text = v.index_path.read_bytes().decode("utf-8")
    doc = it.parse_index(text)
    from agentmem_vault.model.ids import base_session_id, next_free_id

    want_id = next_free_id(
        base_session_id(when, "cursor-main-agent"), taken_ids(v, doc) | {"2026-05-02-0101-cursor-main-agent-3"}
    )
    assert_agrees(v)  # summary in place: the fast path is taken
    reg = register_idle(v, "cursor-main-agent", when=when, also_taken={"2026-05-02-0101-cursor-main-agent-3"})
    assert reg.session_id == want_id == "2026-05-02-0101-cursor-main-agent-4"
    want_text = it.edit_table(doc, {}, [reg.row])
    assert v.index_path.read_bytes() == want_text.encode("utf-8")
    assert_agrees(v)


def test_board_without_final_newline(tmp_path: Path) -> None:
    v = make_vault(tmp_path / "v", 3)
    v.index_path.write_bytes(v.index_path.read_bytes().rstrip(b"\n"))
    assert_agrees(v)
    reg = register_idle(v, "cursor-main-agent", when=datetime(2026, 6, 1, 9, 30))
    doc, _ = full(v)
    assert doc.find(reg.session_id) == reg.row and not doc.bad and len(doc.ids()) == 4
    assert_agrees(v)


def test_writers_keep_the_summary_current(tmp_path: Path) -> None:
    v = make_vault(tmp_path / "v", 20)
    assert_agrees(v)
    sid = row(3).session_id
    with BoardWriter(v, "test") as w:
        w.update_row(sid, lambda r: r.with_(status="active", updated_at="2026-12-31 23:59"))
    c = cached(v)
    assert c["size"] == v.index_path.stat().st_size  # refreshed by the writer, no parse left for the hook
    assert c["active"][0].split(",")[0] == sid
    with BoardWriter(v, "test") as w:
        w.remove_row(sid)
    assert cached(v)["size"] == v.index_path.stat().st_size
    assert_agrees(v)


def test_unreadable_cache_and_read_only_state_folder(tmp_path: Path) -> None:
    v = make_vault(tmp_path / "v", 4)
    v.state_dir.mkdir(parents=True)
    board_cache.cache_path(v).write_text("{not json", encoding="utf-8")
    assert_agrees(v)
    board_cache.cache_path(v).write_text(json.dumps({"v": 1, "size": "x"}), encoding="utf-8")
    assert_agrees(v)
    _change_pairs(v, "pair", row(1).session_id, 1)  # an active session of project proj-b
    board_cache.cache_path(v).unlink()
    assert_agrees(v)
    body = json.loads(board_cache.cache_path(v).read_text(encoding="utf-8"))
    ids, ats, projects = body["data"]["active"]
    assert ids and len(ids.split(",")) == len(projects.split(","))
    for active in ([ids, ats + ",7", projects], [ids, ats, projects.replace("0", "9")]):  # an offset too many;
        bad = {**body, "data": {**body["data"], "active": active}}  # a project that is not there
        board_cache.cache_path(v).write_text(json.dumps(bad), encoding="utf-8")
        assert_agrees(v)
    board_cache.cache_path(v).unlink()
    v.state_dir.chmod(0o555)
    try:
        assert_agrees(v)  # answers from a full parse; writes nothing into a read-only folder
        assert not board_cache.cache_path(v).exists()
    finally:
        v.state_dir.chmod(0o755)


def test_ts_key_orders_like_parse_ts() -> None:
    values = [
        "2026-05-01 10:00",
        "2026-05-01 09:59",
        "2026-05-01T10:00:30",
        "2026-05-01 10:00:00",
        "2026-05-01",
        "garbage",
        "",
        "-",
        "2026-02-30 10:00",
        "2026-13-01 10:00",
        "2025-12-31 23:59",
        "2026-05-01T10:01+00:00",
    ]
    for a in values:
        for b in values:
            pa, pb = parse_ts(a) or datetime.min, parse_ts(b) or datetime.min
            ka, kb = ts_key(a), ts_key(b)
            assert (pa < pb) == (ka < kb) and (pa == pb) == (ka == kb), (a, b)


PAIR_OPS = ["pair", "pair_edit", "pair_cut", "pair_torn", "pair_gone"]


def _change_pairs(v: Vault, op: str, sid: str, n: int) -> None:
    """A conversations.jsonl change: a pair appended (as record_pair writes it, or by hand), a
    project renamed in place (same size), the file cut short, a torn last line, the file deleted."""
    path = v.state_dir / "conversations.jsonl"
    data = _pairs(v)
    project = ("proj-a", "proj-b", "東京", "")[n % 4]
    entry = {"time": "t", "conversation_id": f"c{n}", "session_id": sid, "agent": "cursor", "source": None}
    if project:
        entry["project"] = project
    if op == "pair":
        spaced = n % 5 != 0  # json.dumps' own spelling, or a hand-written line without the spaces
        line = json.dumps(entry, ensure_ascii=False, separators=None if spaced else (",", ":"))
        path.write_bytes(data + line.encode() + b"\n")
    elif op == "pair_edit":
        path.write_bytes(data.replace(b"proj-a", b"proj-c", 1))
    elif op == "pair_cut":
        path.write_bytes(data[: len(data) * (n % 3) // 3])
    elif op == "pair_torn":
        path.write_bytes(data + json.dumps(entry).encode()[: 10 + n % 60])
    elif op == "pair_gone":
        path.unlink(missing_ok=True)


def test_the_projects_of_active_sessions_follow_conversations_jsonl(tmp_path: Path) -> None:
    """Pairs appended (by the hook, by hand), a project renamed in place, the file cut short, a
    torn line, the file gone: the summary's projects are those the pairs name after each."""
    v = make_vault(tmp_path / "v", 30)
    v.state_dir.mkdir(parents=True, exist_ok=True)
    assert_agrees(v)
    active = [r.session_id for r in full(v)[0].row_list() if r.status == "active"]
    steps = [("pair", 1), ("pair", 2), ("pair", 4), ("pair", 5), ("pair_edit", 0), ("pair", 6), ("pair_torn", 3)]
    steps += [("pair", 9), ("pair_cut", 2), ("pair", 13), ("pair_gone", 0), ("pair", 17)]
    for k, (op, n) in enumerate(steps):
        _change_pairs(v, op, active[k % len(active)], n)
        st_ = assert_agrees(v)
        again = assert_agrees(v)  # and again from the saved summary
        assert st_ is not None and again is not None and list(st_.entries()) == list(again.entries())
    new = row(500, "active", "2026-12-01 10:00")  # its chat's pair first, then its row appended by hand
    _change_pairs(v, "pair", new.session_id, 1)
    board_cache.cache_path(v).unlink()
    assert_agrees(v)  # the summary, rewritten, describes that pair
    with open(v.index_path, "ab") as fh:
        fh.write((it.render_row(new) + "\n").encode())
    st_ = assert_agrees(v)
    assert st_ is not None and st_.active[0].split(",")[0] == new.session_id  # the most recent
    assert next(st_.entries())[2] == "proj-b"
    many = "".join(json.dumps({"session_id": sid, "project": "p"}) + "\n" for sid in active) * 8
    with open(v.state_dir / "conversations.jsonl", "a", encoding="utf-8") as fh:
        fh.write(many)  # a long tail of pairs: read once, then the summary is rewritten
    assert_agrees(v)
    assert json.loads(board_cache.cache_path(v).read_text(encoding="utf-8"))["data"]["pairs"][0] == len(_pairs(v))


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["register", "hand_append", "update", "remove", "hand_edit", "bad_line", "fix", "load", *PAIR_OPS]
        ),
        st.integers(0, 10_000),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, crlf=st.booleans())
def test_any_sequence_of_changes_agrees_with_a_full_parse(tmp_path: Path, ops: list, crlf: bool) -> None:
    """Changes to the board and to conversations.jsonl, by our writers and by hand: after each,
    the summary agrees with a full parse of both (the projects of the active sessions included)."""
    import shutil

    root = tmp_path / "p"
    shutil.rmtree(root, ignore_errors=True)
    v = make_vault(root, 6, newline="\r\n" if crlf else "\n")
    v.state_dir.mkdir(parents=True, exist_ok=True)
    for k, (op, n) in enumerate(ops):
        doc, _ = full(v)
        ids = doc.ids()
        try:
            if op == "register":
                register_idle(v, "agent", when=datetime(2026, 6, 1 + n % 28, n % 24, n % 60))
            elif op == "hand_append":
                with open(v.index_path, "ab") as fh:
                    fh.write(
                        (
                            it.render_row(row(1000 + k, ("idle", "active")[n % 2], f"2026-07-0{1 + n % 9} 10:00"))
                            + "\n"
                        ).encode()
                    )
            elif op == "update" and ids:
                with BoardWriter(v, "t") as w:
                    w.update_row(
                        ids[n % len(ids)],
                        lambda r, n=n: r.with_(status="active", updated_at=f"2026-08-{1 + n % 28:02d} 10:00"),
                    )
            elif op == "remove" and ids:
                with BoardWriter(v, "t") as w:
                    w.remove_row(ids[n % len(ids)])
            elif op == "hand_edit":
                data = v.index_path.read_bytes()
                v.index_path.write_bytes(data.replace(b"| active |", b"| stale |", 1))
            elif op == "bad_line":
                with open(v.index_path, "ab") as fh:
                    fh.write(b"| broken | row |\n")
            elif op == "fix":
                data = v.index_path.read_bytes()
                v.index_path.write_bytes(data.replace(b"| broken | row |\n", b""))
            elif op in PAIR_OPS:  # mostly about an active session: the ones whose project the summary keeps
                active = [r.session_id for r in doc.row_list() if r.status == "active"] or ids or ["2026-01-01-0000-x"]
                _change_pairs(v, op, active[n % len(active)] if n % 4 else ids[n % len(ids)] if ids else active[0], n)
        except IndexFormatError:
            assert full(v)[0].bad  # refused only because of a broken row
        assert_agrees(v)


def test_the_daemon_brings_the_summary_up_to_date_after_a_hand_edit(tmp_path: Path) -> None:
    import zlib

    from daemon_helpers import DaemonProc, wait_for

    v = make_vault(tmp_path / "v", 10)
    assert_agrees(v)
    with DaemonProc(v, "--rescan", "600") as d:
        data = v.index_path.read_bytes().replace(b"| active |", b"| stale  |", 1)  # Obsidian: in place
        with open(v.index_path, "r+b") as fh:
            fh.write(data)

        def current() -> bool:
            try:
                c = cached(v)
            except (OSError, ValueError, KeyError):
                return False
            return c.get("size") == len(data) and c.get("crc") == zlib.crc32(data)

        ok, _ = wait_for(current, 30)
        assert ok, d.stderr()
    assert_agrees(v)


def test_a_write_between_the_summary_and_the_append_is_refused(tmp_path: Path) -> None:
    from agentmem_vault.errors import VerifyFailed

    v = make_vault(tmp_path / "v", 6)
    assert_agrees(v)
    state = board_cache.load(v)
    assert state is not None
    with open(v.index_path, "ab") as fh:  # another program appends after the summary was loaded
        fh.write((it.render_row(row(50)) + "\n").encode())
    before = v.index_path.read_bytes()
    with BoardWriter(v, "test") as w, pytest.raises(VerifyFailed, match="changed before"):
        w.append_row(it.Row("2026-06-01-0930-x", "x", "t", "s", "k", "idle", "-", "a", "b"), state=state)
    assert v.index_path.read_bytes() == before  # nothing appended
    assert_agrees(v)


def test_summary_of_an_earlier_version_is_ignored(tmp_path: Path) -> None:
    v = make_vault(tmp_path / "v", 5)
    assert_agrees(v)
    c = cached(v)
    c["v"] = 1
    board_cache.cache_path(v).write_text(json.dumps(c), encoding="utf-8")
    assert_agrees(v)
    assert cached(v)["v"] == board_cache.VERSION


@pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")
def test_the_append_read_back_fails_as_every_read_does(tmp_path: Path) -> None:
    """The append's read-back (only the appended bytes) refuses an unreadable board the way every
    other read does: an AgentmemError naming the file, never a bare OSError (a traceback)."""
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.fs import read_bytes, read_from

    v = make_vault(tmp_path / "v", 2)
    loop = v.memory / "loop.md"
    loop.symlink_to("loop.md")  # opening it fails with ELOOP: an OSError other than "not found"
    with pytest.raises(AgentmemError, match="cannot read"):
        read_bytes(loop)
    with pytest.raises(AgentmemError, match="cannot read"):
        read_from(loop, 0)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names fsynced descriptors through /proc")
def test_the_row_is_fsynced_and_a_removal_fsyncs_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/reliability.md "What a power cut may cost": a new row is on the disk before its ID is
    handed out, on the fast path too; the ID of a row removed later is in the ledger, on the disk,
    before the table without it is written."""
    from agentmem_vault import fs

    v = make_vault(tmp_path / "v", 5)
    assert_agrees(v)
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(fs.os, "fsync", spy)
    sid = register_idle(v, "cursor-main-agent", when=datetime(2026, 6, 1, 9, 30)).session_id
    assert "index.md" in synced
    synced.clear()
    with BoardWriter(v, "test") as w:
        w.remove_row(sid)
    assert synced.index("issued-ids.txt") < len(synced) - 1  # the ledger first, then the new table
    assert sid in v.issued_ids_path.read_text(encoding="utf-8").split()


def test_a_summary_that_is_a_link_is_replaced_not_written_through(tmp_path: Path) -> None:
    """The summary is replaced (temp file + rename), never written through a link: a
    board-cache.json linked to the board itself must not turn the board into JSON
    (docs/reliability.md: links)."""
    v = make_vault(tmp_path / "v", 4)
    board = v.index_path.read_bytes()
    v.state_dir.mkdir(parents=True, exist_ok=True)
    board_cache.cache_path(v).symlink_to(Path("..") / "index.md")
    assert_agrees(v)
    assert v.index_path.read_bytes() == board
    assert not board_cache.cache_path(v).is_symlink() and cached(v)["v"] == board_cache.VERSION
