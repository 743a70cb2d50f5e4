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

from agentmem_vault.vault import Vault
from agentmem_vault.recall import freshness
from agentmem_vault.recall.index import RecallIndex
from agentmem_vault.recall.rank import search

from conftest import run_cli
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
    """What Obsidian does: rewrite the file's bytes in place (same inode, folder untouched: its
    times are not even restored, which would itself raise an event in the folder above)."""
    folder = path.parent.stat()
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(note_text(_note(i, words)).encode("utf-8"))
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


def _cli_ids(vault: Vault, q: str) -> list[str]:
    """The same query from a separate, short-lived process (it checks every note itself)."""
    p = run_cli("memories", "search", q, "--json", "--all-projects", vault=vault, process=True)
    assert p.returncode == 0, p.stderr
    return [h["id"] for h in json.loads(p.stdout)]


def _watched(idx: RecallIndex) -> bool:
    """Sync until this process's watch vouches (it starts on the second check of a folder)."""
    return any(idx.sync().watched for _ in range(3))


needs_watch = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the in-process watch is Linux (inotify) only"
)


def test_an_edit_in_place_shows_in_the_next_query_of_another_process_without_a_daemon(
    vault: Vault, notes: list[Path]
) -> None:
    assert _cli_ids(vault, "zebracorn") == []
    _edit_in_place(notes[11], "zebracorn", 11)
    assert _cli_ids(vault, "zebracorn") == ["lt-000b"]
    _delete_keeping_folder_mtime(notes[11])
    assert _cli_ids(vault, "zebracorn") == []


@needs_watch
def test_a_long_lived_caller_skips_the_scan_yet_sees_every_change(vault: Vault, notes: list[Path]) -> None:
    if freshness.file_system_type(str(vault.longterm_dir)) not in freshness.LOCAL_FILE_SYSTEMS:
        pytest.skip("the test folder is not on a local file system: no watch by design")
    idx = RecallIndex(vault).open()
    try:
        assert _watched(idx)
        _edit_in_place(notes[4], "zebracorn", 4)  # the folder's mtime does not move
        assert _ids(vault, "zebracorn", idx) == ["lt-0004"]
        assert idx.sync().watched  # that query checked the notes; nothing changed since
        _delete_keeping_folder_mtime(notes[4])
        assert _ids(vault, "zebracorn", idx) == []
        _edit_in_place(notes[5], "wombatlily", 5)
        assert [h.path for h in search(vault, "wombatlily", semantic=None, index=idx)] == [str(notes[5])]
        assert _watched(idx)
        renamed = notes[5].with_name("renamed.md")
        notes[5].rename(renamed)
        assert [h.path for h in search(vault, "wombatlily", semantic=None, index=idx)] == [str(renamed)]
        sub = vault.longterm_dir / "sub" / "deeper"
        sub.mkdir(parents=True)
        (sub / "n.md").write_text(note_text(_note(77, "platypuswren")), encoding="utf-8")
        assert _ids(vault, "platypuswren", idx) == ["lt-004d"]
        assert _watched(idx)
        _edit_in_place(sub / "n.md", "quokkafish", 77)  # in a subfolder created after the watch began
        assert _ids(vault, "quokkafish", idx) == ["lt-004d"]
        assert _ids(vault, "platypuswren", idx) == []
        # What the scan never reads cannot change a result: no full check for an editor's swap file.
        assert _watched(idx)
        (vault.longterm_dir / ".note 1.md.swp").write_bytes(b"x")
        (vault.longterm_dir / "draft.txt").write_text("zebracorn", encoding="utf-8")
        assert idx.sync().watched
        # A new RecallIndex in the same process (the MCP server opens one per call) shares the watch.
        with RecallIndex(vault) as other:
            assert other.sync().watched
    finally:
        idx.close()


@needs_watch
def test_a_renamed_subfolder_and_a_second_path_to_the_folder_stay_watched(vault: Vault, notes: list[Path]) -> None:
    """A folder moved inside the tree keeps its inotify watch under the new name, and two vault
    paths to the same folder (a symlinked vault) share one watch: an edit is seen through both."""
    sub = vault.longterm_dir / "old"
    sub.mkdir()
    (sub / "n.md").write_text(note_text(_note(88, "ordinary")), encoding="utf-8")
    alias = vault.root.parent / "alias"
    alias.symlink_to(vault.root, target_is_directory=True)
    other = Vault(alias)
    a, b = RecallIndex(vault).open(), RecallIndex(other, path=vault.state_dir / "recall" / "alias.sqlite3").open()
    try:
        if not _watched(a):
            pytest.skip("no watch on this file system")
        assert _watched(b)
        (sub).rename(vault.longterm_dir / "new")
        moved = vault.longterm_dir / "new" / "n.md"
        assert [h.path for h in search(vault, "plain body 88", limit=1, semantic=None, index=a)] == [str(moved)]
        assert _watched(a) and _watched(b)
        _edit_in_place(moved, "zebracorn", 88)
        assert _ids(vault, "zebracorn", a) == ["lt-0058"]
        assert _ids(other, "zebracorn", b) == ["lt-0058"]
        assert _watched(a) and _watched(b)
        _edit_in_place(moved, "quokkafish", 88)
        assert _ids(other, "quokkafish", b) == ["lt-0058"]
        assert _ids(vault, "quokkafish", a) == ["lt-0058"]
        # Moved out of the tree: gone from results, and its later edits no longer cost a full check.
        (vault.longterm_dir / "new").rename(vault.root / "gone")
        assert _ids(vault, "quokkafish", a) == []
        assert _watched(a) and _watched(b)
        _edit_in_place(vault.root / "gone" / "n.md", "wombatlily", 88)
        assert a.sync().watched and b.sync().watched
        # A new folder under a name that was watched before is watched itself.
        (vault.longterm_dir / "new").mkdir()
        (vault.longterm_dir / "new" / "m.md").write_text(note_text(_note(89, "ordinary")), encoding="utf-8")
        assert _ids(vault, "plain body 89", a)[:1] == ["lt-0059"]
        assert _watched(a)
        _edit_in_place(vault.longterm_dir / "new" / "m.md", "platypuswren", 89)
        assert _ids(vault, "platypuswren", a) == ["lt-0059"]
    finally:
        a.close()
        b.close()


@needs_watch
def test_another_process_writing_the_index_ends_the_vouching(vault: Vault, notes: list[Path]) -> None:
    idx = RecallIndex(vault).open()
    try:
        if not _watched(idx):
            pytest.skip("no watch on this file system")
        # Another process's write transaction (what every sync that changes the index does).
        code = (
            "import sys,pathlib;from agentmem_vault.config import Vault;from agentmem_vault.recall.index import RecallIndex;"
            "i=RecallIndex(Vault(pathlib.Path(sys.argv[1]))).open();i.conn.execute('BEGIN IMMEDIATE');"
            "i._save_stamps(i.conn);i.conn.execute('COMMIT')"
        )
        subprocess.run([sys.executable, "-c", code, str(vault.root)], check=True)
        assert not idx.sync().watched  # a new sync token: this process checks the notes again
        assert idx.sync().watched
        # Another process rebuilds the index file (swapped in under this open index), then a note
        # is edited in place: the next query still shows the edit.
        assert run_cli("reindex", vault=vault, process=True).returncode == 0
        _edit_in_place(notes[6], "zebracorn", 6)
        assert _ids(vault, "zebracorn", idx) == ["lt-0006"]
        assert _ids(vault, "zebracorn") == ["lt-0006"]
    finally:
        idx.close()


@needs_watch
def test_a_note_changed_through_another_path_is_never_vouched_for(vault: Vault, notes: list[Path]) -> None:
    """A symlinked or hard-linked note edited through its other path raises no event in
    long-term/: the process checks every note then."""
    outside = vault.root / "elsewhere"  # inside the vault: the symlink rule allows the link
    outside.mkdir()
    target = outside / "linked.md"
    target.write_text(note_text(_note(201, "ordinary")), encoding="utf-8")
    (vault.longterm_dir / "linked.md").symlink_to(target)
    hard = outside / "hard.md"
    hard.write_text(note_text(_note(202, "ordinary")), encoding="utf-8")
    os.link(hard, vault.longterm_dir / "hard.md")
    idx = RecallIndex(vault).open()
    try:
        assert not _watched(idx)
        _edit_in_place(target, "zebracorn", 201)
        assert _ids(vault, "zebracorn", idx) == ["lt-00c9"]
        _edit_in_place(hard, "quokkafish", 202)
        assert _ids(vault, "quokkafish", idx) == ["lt-00ca"]
    finally:
        idx.close()


def test_file_system_type_reads_the_longest_mount_point(tmp_path: Path) -> None:
    info = (
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "40 22 0:35 / /mnt/my\\040share rw,relatime shared:9 - cifs //nas/share rw\n"
        "41 22 0:36 / /mnt/my\\040share/local rw - tmpfs tmpfs rw\n"
        "42 22 0:37 / /mnt/my rw - nfs4 nas:/x rw\n"
    )
    assert freshness.file_system_type("/home/u/vault", info) == "ext4"
    assert freshness.file_system_type("/mnt/my share/vault/memory", info) == "cifs"
    assert freshness.file_system_type("/mnt/my share/local/v", info) == "tmpfs"
    assert freshness.file_system_type("/mnt/my", info) == "nfs4"
    assert freshness.file_system_type("/mnt/mysql", info) == "ext4"  # a prefix of the name is not a parent
    assert "cifs" not in freshness.LOCAL_FILE_SYSTEMS and "nfs4" not in freshness.LOCAL_FILE_SYSTEMS


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
