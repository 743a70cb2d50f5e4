"""The derived recall index: incremental, never required for correctness, never stale."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.recall.index import RecallIndex, db_path, reindex
from agentmem_vault.recall.rank import search
from recall_helpers import write_note

NOW = "2026-06-01T09:30"


def _note(key: str, title: str, content: str, **kw) -> dict:
    d = {
        "key": key,
        "id": f"lt-{key}",
        "title": title,
        "content": content,
        "keywords": [],
        "usage_scenario": [],
        "updated": "2026-05-20T10:00",
        "importance": 0.5,
    }
    d.update(kw)
    return d


@pytest.fixture
def lt(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTMEM_NOW", NOW)
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    write_note(vault.longterm_dir, _note("a1", "用户注册必须校验短信验证码", "POST /api/register 前调用 sms.verify。"))
    write_note(vault.longterm_dir, _note("b2", "Redis 分布式锁", "SET NX PX 并用 Lua 比对 token 释放。"))
    write_note(vault.longterm_dir, _note("c3", "金額用整數分儲存", "嚴禁 float。"))
    return vault.longterm_dir


def _ids(vault: Vault, q: str, **kw) -> list[str]:
    return [h.id for h in search(vault, q, **kw)]


def _bump(p: Path, text: str) -> None:
    """Rewrite in place (as Obsidian does) and make sure the stamp differs even on coarse clocks."""
    before = p.stat().st_mtime_ns
    p.write_text(text, encoding="utf-8")
    if p.stat().st_mtime_ns == before:
        os.utime(p, ns=(before + 1_000_000, before + 1_000_000))


def test_edit_in_obsidian_is_reflected_in_the_next_query(vault: Vault, lt: Path) -> None:
    assert _ids(vault, "Redis 分布式锁") == ["lt-b2"]
    p = lt / "Redis 分布式锁.md"
    _bump(p, p.read_text(encoding="utf-8").replace("SET NX PX", "改用 etcd lease 续租"))
    assert _ids(vault, "etcd lease") == ["lt-b2"]
    assert _ids(vault, "SET NX PX") == []  # the old text never surfaces


def test_same_size_edit_within_the_same_second_is_still_seen(vault: Vault, lt: Path) -> None:
    search(vault, "x")
    p = lt / "金額用整數分儲存.md"
    text = p.read_text(encoding="utf-8")
    st = p.stat()
    p.write_text(text.replace("float", "FLOAT"), encoding="utf-8")  # same size
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    hit = search(vault, "金額")[0]
    assert "FLOAT" in hit.content


def test_deleted_note_never_surfaces(vault: Vault, lt: Path) -> None:
    assert _ids(vault, "短信验证码") == ["lt-a1"]
    (lt / "用户注册必须校验短信验证码.md").unlink()
    assert _ids(vault, "短信验证码") == []
    # also when another process had the index open and cached
    idx = RecallIndex(vault).open()
    try:
        idx.sync()
        write_note(lt, _note("d4", "新筆記 短信", "短信"))
        assert [h.id for h in search(vault, "短信", index=idx)] == ["lt-d4"]
    finally:
        idx.close()


def test_rename_and_new_subfolder(vault: Vault, lt: Path) -> None:
    search(vault, "x")
    (lt / "Redis 分布式锁.md").rename(lt / "redis-lock.md")
    sub = lt / "子資料夾"
    sub.mkdir()
    write_note(sub, _note("e5", "嵌套笔记 Kafka 分区", "分区数"))
    (lt / ".trash").mkdir()
    write_note(lt / ".trash", _note("zz", "Kafka 分区 deleted", "x"))
    hits = search(vault, "Kafka 分区")
    assert [h.id for h in hits] == ["lt-e5"] and hits[0].rel_path == "子資料夾/嵌套笔记 Kafka 分区.md"
    assert [h.rel_path for h in search(vault, "分布式锁")] == ["redis-lock.md"]


def test_incremental_sync_counts(vault: Vault, lt: Path) -> None:
    idx = RecallIndex(vault).open()
    try:
        assert idx.sync().changed is False  # open() built it
        p = lt / "Redis 分布式锁.md"
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 5_000_000))  # touched, same bytes
        st = idx.sync()
        assert (st.touched, st.updated, st.added, st.removed) == (1, 0, 0, 0)
        _bump(p, p.read_text(encoding="utf-8") + "\nmore\n")
        write_note(lt, _note("f6", "new", "new"))
        (lt / "金額用整數分儲存.md").unlink()
        st = idx.sync()
        assert (st.updated, st.added, st.removed, st.total) == (1, 1, 1, 3)
    finally:
        idx.close()


@pytest.mark.parametrize("damage", ["garbage", "truncate", "other_schema", "empty"])
def test_corrupt_or_foreign_index_is_rebuilt(vault: Vault, lt: Path, damage: str) -> None:
    search(vault, "x")
    db = db_path(vault)
    if damage == "garbage":
        db.write_bytes(b"this is not sqlite" * 100)
    elif damage == "truncate":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3])
    elif damage == "other_schema":
        db.unlink()
        c = sqlite3.connect(db)
        c.execute("CREATE TABLE notes(x)")
        c.execute("PRAGMA user_version = 1")
        c.commit()
        c.close()
    else:
        db.write_bytes(b"")
    assert _ids(vault, "Redis 分布式锁") == ["lt-b2"]
    assert _ids(vault, "金额") == ["lt-c3"]


def test_missing_state_folder_and_reindex(vault: Vault, lt: Path) -> None:
    import shutil

    search(vault, "x")
    shutil.rmtree(vault.state_dir / "recall")
    assert _ids(vault, "金额") == ["lt-c3"]
    st = reindex(vault)
    assert st.rebuilt and st.total == 3 and not st.in_memory and db_path(vault).is_file()
    # no temp files left (rules.json is the rule summary for the sessionStart hook)
    assert sorted(p.name for p in db_path(vault).parent.iterdir()) == sorted([db_path(vault).name, "rules.json"])


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
def test_read_only_state_folder_falls_back_to_memory(vault: Vault, lt: Path) -> None:
    vault.state_dir.mkdir(exist_ok=True)
    mode = vault.state_dir.stat().st_mode
    os.chmod(vault.state_dir, stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(vault.state_dir, os.W_OK):  # root ignores permissions: nothing to test
            pytest.skip("running with permission override")
        assert _ids(vault, "金额") == ["lt-c3"]
        assert reindex(vault).in_memory
    finally:
        os.chmod(vault.state_dir, mode)


def test_unreadable_and_broken_notes_do_not_break_the_index(vault: Vault, lt: Path) -> None:
    (lt / "broken.md").write_text("---\ntitle: [oops\n---\n壞掉的 frontmatter 但內容有用 Kafka\n", encoding="utf-8")
    (lt / "latin1.md").write_bytes("---\ntitle: caf\xe9\n---\nKafka latin1".encode("latin-1"))
    st = reindex(vault)
    assert st.total == 5 and {e["path"] for e in st.errors} == {"broken.md", "latin1.md"}
    assert {h.rel_path for h in search(vault, "Kafka")} == {"broken.md", "latin1.md"}


def test_concurrent_queries_from_processes_while_notes_change(vault: Vault, lt: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys;from pathlib import Path;from agentmem_vault.config import Vault;"
        "from agentmem_vault.recall.rank import search\n"
        "v=Vault(Path(sys.argv[1]))\nfor i in range(15): search(v, 'Redis 分布式锁 短信')\nprint('ok')"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(vault.root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    for i in range(15):
        write_note(lt, _note(f"n{i}", f"並發筆記 {i}", "短信"))
        time.sleep(0.01)
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()
        assert out.strip() == b"ok"
    assert len(search(vault, "並發筆記", limit=50)) == 15


def test_a_rebuild_swapped_in_between_connect_and_stat_is_still_seen(vault: Vault, lt: Path) -> None:
    """Another process swaps a rebuilt index in after this one connected to the old file but
    before it noted which file it opened: its next write (a note changed) hits the moved file,
    which SQLite refuses as a read-only database; the sync reopens the file that is there now."""
    reindex(vault)
    idx = RecallIndex(vault)
    real_connect = idx._connect

    def connect_then_swap(path: str) -> sqlite3.Connection:
        conn = real_connect(path)
        RecallIndex(vault).rebuild()  # the other process's rebuild, replacing the file
        return conn

    idx._connect = connect_then_swap  # type: ignore[method-assign]
    idx.open()
    idx._connect = real_connect  # type: ignore[method-assign]
    write_note(lt, _note("swap1", "換檔後的筆記", "短信"))
    idx.sync()
    idx.close()
    assert _ids(vault, "換檔後的筆記") == ["lt-swap1"]
