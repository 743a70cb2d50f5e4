"""Registration, safe writes and read commands, through the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentmem_vault.board import table as it
from agentmem_vault.ops.board import init_vault
from agentmem_vault.vault import Vault
from agentmem_vault.config import resolve_vault
from agentmem_vault.errors import VaultNotFound
from agentmem_vault.locking import exclusive_lock
from agentmem_vault.board.rules import DEFAULT_SUMMARY
from agentmem_vault.board.register import register_idle

from conftest import run_cli

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}


def rows(v: Vault) -> list[it.Row]:
    return it.parse_index(v.index_path.read_text(encoding="utf-8")).row_list()


def test_register_prints_id_after_verified_write(vault: Vault) -> None:
    p = run_cli("register", vault=vault, env=NOW)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "Your Memory Session ID is: 2026-06-01-0930-cursor-main-agent"
    (r,) = rows(vault)
    assert r == it.Row(
        "2026-06-01-0930-cursor-main-agent",
        "cursor-main-agent",
        "未設定",
        DEFAULT_SUMMARY,
        "sessionStart, cursor-agent",
        "idle",
        "-",
        "2026-06-01 09:30",
        "2026-06-01 09:30",
    )
    assert not any(vault.sessions_dir.iterdir())  # sessionStart writes no snapshot
    p2 = run_cli("register", "--json", "--agent", "codex-agent", vault=vault, env=NOW)
    assert json.loads(p2.stdout)["session_id"] == "2026-06-01-0930-codex-agent"
    p3 = run_cli("register", "--json", vault=vault, env=NOW)
    assert json.loads(p3.stdout)["session_id"] == "2026-06-01-0930-cursor-main-agent-2"
    journal = [json.loads(line) for line in vault.journal_path.read_text(encoding="utf-8").splitlines()]
    assert [j["session_id"] for j in journal if j["action"] == "append_row"][
        -1
    ] == "2026-06-01-0930-cursor-main-agent-2"


def test_collision_suffix_counts_sessions_and_archive(vault: Vault) -> None:
    (vault.sessions_dir / "2026-06-01-0930-cursor-main-agent.md").write_text("x", encoding="utf-8")
    (vault.archive_dir / "2026-06-01-0930-cursor-main-agent-2").mkdir()
    p = run_cli("register", "--json", vault=vault, env=NOW)
    assert json.loads(p.stdout)["session_id"] == "2026-06-01-0930-cursor-main-agent-3"


def test_sixteen_processes_register_concurrently(tmp_path: Path) -> None:
    v = Vault(tmp_path / "雲端 vault")
    v.root.mkdir()
    init_vault(v)
    original = (
        "# Board\n\nnotes above the table\n\n"
        + it.header_lines()
        + "".join(
            it.render_row(
                it.Row(
                    f"2026-05-0{i}-1200-old-agent",
                    "old-agent",
                    f"舊主題 {i} \\| pipe",
                    "s",
                    "k",
                    "active",
                    "-",
                    "x",
                    "y",
                )
            )
            + "\n"
            for i in range(1, 4)
        )
    )
    v.index_path.write_text(original, encoding="utf-8")
    # 400 registrations queue on one lock: wait generously (a loaded 2-core CI machine is slow)
    v.config_path.write_text("lock_timeout: 600\n", encoding="utf-8")
    script = textwrap.dedent(
        """
        import sys
        from agentmem_vault.vault import Vault
        from agentmem_vault.board.register import register_idle
        v = Vault(__import__('pathlib').Path(sys.argv[1]))
        for _ in range(25):
            print(register_idle(v, 'cursor-main-agent').session_id, flush=True)
        """
    )
    env = {**os.environ, **NOW}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(v.root)], stdout=subprocess.PIPE, env=env)
        for _ in range(16)
    ]
    printed: list[str] = []
    for p in procs:
        out, _ = p.communicate(timeout=900)
        assert p.returncode == 0
        printed += out.decode().split()
    text = v.index_path.read_text(encoding="utf-8")
    doc = it.parse_index(text)
    assert not doc.bad
    new_ids = [r.session_id for r in doc.row_list()][3:]
    assert len(new_ids) == 400 and len(set(new_ids)) == 400
    assert sorted(printed) == sorted(new_ids)
    assert text.startswith(original)  # no byte of the original file changed


def test_killed_rewrite_leaves_old_or_new_file(vault: Vault) -> None:
    base = it.new_index_text() + "".join(
        it.render_row(
            it.Row(
                f"2026-05-{1 + i // 1440:02d}-{i // 60 % 24:02d}{i % 60:02d}-agent",
                "agent",
                "主題" * 20,
                "摘要" * 40,
                "k",
                "active",
                "-",
                "x",
                "y",
            )
        )
        + "\n"
        for i in range(1500)
    )
    vault.index_path.write_text(base, encoding="utf-8")
    script = textwrap.dedent(
        """
        import sys, itertools
        from agentmem_vault.vault import Vault
        from agentmem_vault.board.store import BoardWriter
        v = Vault(__import__('pathlib').Path(sys.argv[1]))
        for n in itertools.count():
            with BoardWriter(v, 'update') as w:
                w.update_row('2026-05-01-0000-agent', lambda r: r.with_(topic=f'topic {n}'))
        """
    )

    def journaled() -> int:
        return len(vault.journal_path.read_bytes().splitlines()) if vault.journal_path.exists() else 0

    # Killed after 0, 1, 2, 3, 5 more updates than before it started: somewhere in the next one.
    for writes in (0, 1, 2, 3, 5):
        start = journaled()
        p = subprocess.Popen([sys.executable, "-c", script, str(vault.root)])
        deadline = time.monotonic() + 120
        while journaled() < start + writes and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert p.poll() is None, "the writer died by itself"
        p.send_signal(signal.SIGKILL)
        p.wait()
        doc = it.parse_index(vault.index_path.read_text(encoding="utf-8"))
        assert not doc.bad and len(doc.row_list()) == 1500
        assert doc.row_list()[1:] == it.parse_index(base).row_list()[1:]


def _snapshot(v: Vault) -> dict[str, bytes]:
    return {
        str(p.relative_to(v.root)): p.read_bytes()
        for p in v.memory.rglob("*")
        if p.is_file() and ".agentmem" not in p.parts
    }


@pytest.mark.parametrize(
    "content, needle",
    [
        ("| ID | Who |\n|---|---|\n| a | b |\n", "unexpected table header"),
        (it.header_lines() + "| 2026-05-25-1318-a | a | t |\n", "3 cells"),
        (
            it.header_lines()
            + "| 2026-05-25-1318-a | a | t | s | k | idle | - | x | y |\nstray\n| 2026-05-25-1319-b | a | t | s | k | idle | - | x | y |\n",
            "break in the table",
        ),
        (it.header_lines() + "\x00\x01\x02 junk", "binary"),
    ],
)
def test_malformed_index_refused_unchanged(vault: Vault, content: str, needle: str) -> None:
    vault.index_path.write_text(content, encoding="utf-8")
    before = _snapshot(vault)
    p = run_cli("register", vault=vault, env=NOW)
    assert p.returncode == 1 and needle in p.stderr and "Session ID is" not in p.stdout
    assert _snapshot(vault) == before


def test_invalid_utf8_refused(vault: Vault) -> None:
    vault.index_path.write_bytes(it.header_lines().encode() + b"\xff\xfe\xfa garbage\n")
    before = _snapshot(vault)
    p = run_cli("register", "--json", vault=vault, env=NOW)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["code"] == "index_malformed"
    assert _snapshot(vault) == before


def test_unknown_and_escaping_ids(vault: Vault) -> None:
    run_cli("register", vault=vault, env=NOW)
    before = _snapshot(vault)
    for bad in ("../x", "..\\x", "2026-06-01-0930-../../etc", "2026-06-01-0930-A"):
        p = run_cli("show", bad, vault=vault)
        assert p.returncode == 1 and "invalid Session ID" in p.stderr
    p = run_cli("show", "2026-01-01-0000-nobody", "--json", vault=vault)
    assert p.returncode == 1 and json.loads(p.stdout)["error"]["code"] == "session_not_found"
    assert _snapshot(vault) == before


def test_read_only_index_refused(vault: Vault) -> None:
    run_cli("register", vault=vault, env=NOW)
    mode = vault.index_path.stat().st_mode
    vault.index_path.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        before = _snapshot(vault)
        p = run_cli("register", vault=vault, env={"AGENTMEM_NOW": "2026-06-01T09:31"})
        assert p.returncode == 1 and "read-only" in p.stderr and "Session ID is" not in p.stdout
        assert _snapshot(vault) == before
    finally:
        vault.index_path.chmod(mode)


def test_lock_held_past_timeout(vault: Vault) -> None:
    vault.config_path.write_text("lock_timeout: 0.5\n", encoding="utf-8")
    holder = textwrap.dedent(
        """
        import sys, time, filelock
        with filelock.FileLock(sys.argv[1]):
            print('held', flush=True)
            time.sleep(30)
        """
    )
    h = subprocess.Popen([sys.executable, "-c", holder, str(vault.lock_path())], stdout=subprocess.PIPE)
    try:
        assert h.stdout.readline().strip() == b"held"  # filelock and our lock exclude each other
        before = _snapshot(vault)
        t = time.monotonic()
        p = run_cli("register", vault=vault, env=NOW)
        assert p.returncode == 1 and "could not lock" in p.stderr
        assert time.monotonic() - t < 10
        assert _snapshot(vault) == before
    finally:
        h.kill()
        h.wait()


def test_missing_vault_names_the_four_ways(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "list"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={k: v for k, v in os.environ.items() if k != "AGENTMEM_VAULT"},
    )
    assert p.returncode == 1
    for way in ("--vault", "AGENTMEM_VAULT", "config.yaml", "memory/index.md"):
        assert way in p.stderr


def test_vault_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    for d in (a, b, c):
        (d / ".obsidian").mkdir(parents=True)
    cfg = Path(os.environ["AGENTMEM_CONFIG_DIR"])
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "config.yaml").write_text(f"vault: {c}\n", encoding="utf-8")
    monkeypatch.setenv("AGENTMEM_VAULT", str(b))
    assert resolve_vault(str(a)).root == a
    assert resolve_vault(None).root == b
    monkeypatch.delenv("AGENTMEM_VAULT")
    assert resolve_vault(None).root == c
    (cfg / "config.yaml").write_text("{}\n", encoding="utf-8")
    deep = a / "x" / "y"
    deep.mkdir(parents=True)
    assert resolve_vault(None, cwd=deep).root == a
    with pytest.raises(VaultNotFound):
        resolve_vault(None, cwd=Path("/"))


def test_init_idempotent_and_list_show_find(vault: Vault) -> None:
    assert run_cli("init", "--json", vault=vault).returncode == 0
    assert json.loads(run_cli("init", "--json", vault=vault).stdout)["created"] == []
    reg = register_idle(vault, "cursor-main-agent")
    with __import__("agentmem_vault.board.store", fromlist=["BoardWriter"]).BoardWriter(vault, "t") as w:
        w.append_row(
            it.Row(
                "2026-05-01-1000-cursor-main-agent",
                "cursor-main-agent",
                "註冊流程重構",
                "整理 sessionStart 註冊",
                "hook, 註冊",
                "active",
                "-",
                "2026-05-01 10:00",
                "2026-05-02 10:00",
            )
        )
    out = json.loads(run_cli("list", "--json", "--status", "active", vault=vault).stdout)
    assert [r["session_id"] for r in out["rows"]] == ["2026-05-01-1000-cursor-main-agent"]
    hits = json.loads(run_cli("find", "注册", "--json", vault=vault).stdout)["hits"]  # Simplified finds Traditional
    assert hits[0]["session_id"] == "2026-05-01-1000-cursor-main-agent"
    shown = json.loads(run_cli("show", reg.session_id, "--json", vault=vault).stdout)
    assert shown["row"]["status"] == "idle" and shown["snapshot"] is None


def test_exclusive_lock_is_reentrant(tmp_path: Path) -> None:
    p = tmp_path / "l.lock"
    with exclusive_lock(p, 1):
        with exclusive_lock(p, 1):
            pass


def test_transaction_rolls_back_every_file(vault: Vault) -> None:
    from agentmem_vault.board.store import BoardWriter

    reg = register_idle(vault, "cursor-main-agent")
    before = _snapshot(vault)
    with pytest.raises(RuntimeError):
        with BoardWriter(vault, "t") as w, w.transaction():
            w.write_file(vault.session_path(reg.session_id), "# Session\n")
            w.update_row(reg.session_id, lambda r: r.with_(status="active"))
            w.write_file(vault.archive_dir / reg.session_id / "index.md", "x")
            raise RuntimeError("boom")
    assert _snapshot(vault) == before
    assert not (vault.archive_dir / reg.session_id).exists()


def test_rollback_keeps_folders_it_did_not_create(vault: Vault) -> None:
    from agentmem_vault.board.store import BoardWriter

    for d in list(vault.archive_dir.iterdir()):
        d.rmdir()
    with pytest.raises(RuntimeError):
        with BoardWriter(vault, "t") as w, w.transaction():
            w.write_file(vault.archive_dir / "2026-01-01-0000-a" / "deep" / "index.md", "x")
            raise RuntimeError("boom")
    assert vault.archive_dir.is_dir() and not any(vault.archive_dir.iterdir())


def test_read_only_parent_blocks_new_folders(vault: Vault) -> None:
    from agentmem_vault.errors import WriteFailed
    from agentmem_vault.fs import atomic_write_text

    vault.archive_dir.chmod(0o555)
    try:
        with pytest.raises(WriteFailed, match="read-only"):
            atomic_write_text(vault.archive_dir / "2026-01-01-0000-a" / "index.md", "x")
    finally:
        vault.archive_dir.chmod(0o755)
    assert not any(vault.archive_dir.iterdir())


def test_unusable_lock_folder_is_a_clear_error(vault: Vault, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    before = _snapshot(vault)
    p = run_cli("register", "--json", vault=vault, env={**NOW, "AGENTMEM_CACHE_DIR": str(blocker / "cache")})
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "Session ID is" not in p.stdout
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "lock_unavailable" and "AGENTMEM_CACHE_DIR" in err["message"]
    assert _snapshot(vault) == before


def test_lock_file_busy_on_open_is_waited_for_like_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # On Windows, opening (and truncating) a lock file that another process has locked or is
    # deleting (filelock removes it on release) fails with EACCES: that means "busy", not a crash.
    import errno

    from agentmem_vault import locking
    from agentmem_vault.errors import LockTimeout

    real_open = os.open
    calls = {"n": 0}

    def flaky_open(path, flags, mode=0o777):
        calls["n"] += 1
        if calls["n"] <= 3:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, mode)

    monkeypatch.setattr(locking, "_open_busy", lambda exc: isinstance(exc, PermissionError))
    monkeypatch.setattr(locking.os, "open", flaky_open)
    with exclusive_lock(tmp_path / "a.lock", timeout=5):
        pass
    assert calls["n"] == 4

    monkeypatch.setattr(locking.os, "open", lambda *a: (_ for _ in ()).throw(PermissionError(errno.EACCES, "busy")))
    with pytest.raises(LockTimeout):
        with exclusive_lock(tmp_path / "b.lock", timeout=0.2):
            pass


def test_windows_read_only_attribute_on_a_folder_does_not_block_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Windows ignores FILE_ATTRIBUTE_READONLY on folders (Explorer sets it on customised folders;
    # os.access treats such folders as writable), but os.stat reports them without write bits.
    from agentmem_vault import fs
    from agentmem_vault.errors import WriteFailed

    d = tmp_path / "folder"
    d.mkdir()
    f = d / "file.md"
    f.write_text("x", encoding="utf-8")
    d.chmod(0o555)
    f.chmod(0o444)
    try:
        with pytest.raises(WriteFailed):
            fs.ensure_writable(d)  # POSIX: a read-only folder means "do not touch"
        monkeypatch.setattr(fs, "_WINDOWS", True)
        fs.ensure_writable(d)
        with pytest.raises(WriteFailed):
            fs.ensure_writable(f)  # a read-only file is read-only on Windows too
    finally:
        d.chmod(0o755)
        f.chmod(0o644)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX argv carries raw bytes")
def test_manual_registration_with_line_separator_and_undecodable_argument(vault: Vault) -> None:
    # A line break of any kind in a one-line field is refused before writing (issue 22: the same
    # rule for register --manual and update; board/rules.py).
    board = vault.index_path.read_bytes()
    p = run_cli("register", "--manual", "--topic", "網頁\u2028貼上", "--json", vault=vault, env=NOW)
    assert p.returncode == 2, p.stderr
    assert json.loads(p.stdout)["error"]["code"] == "field_not_one_line"
    assert vault.index_path.read_bytes() == board
    assert run_cli("register", vault=vault, env=NOW).returncode == 0  # the index stayed writable
    before = _snapshot(vault)
    cmd = [
        sys.executable.encode(),
        b"-m",
        b"agentmem_vault",
        b"--vault",
        os.fsencode(vault.root),
        b"register",
        b"--manual",
        b"--summary",
        b"bad \x85 byte",
        b"--json",
    ]
    q = subprocess.run(cmd, capture_output=True, env={**os.environ, **NOW}, timeout=60)
    assert q.returncode == 2, q.stderr
    assert b"Traceback" not in q.stderr and b"Session ID is" not in q.stdout
    assert json.loads(q.stdout)["error"]["code"] == "usage"
    assert _snapshot(vault) == before


@pytest.mark.parametrize("damage", ["memory_is_a_file", "index_is_a_folder", "config_is_a_folder"])
@pytest.mark.parametrize("command", [("init",), ("register",), ("list",), ("register", "--manual")])
def test_odd_file_system_states_are_clear_errors(tmp_path: Path, damage: str, command: tuple[str, ...]) -> None:
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    if damage == "memory_is_a_file":
        (root / "memory").write_text("not a folder", encoding="utf-8")
    elif damage == "index_is_a_folder":
        (root / "memory" / "index.md").mkdir(parents=True)
    else:
        (root / "memory" / ".agentmem" / "config.yaml").mkdir(parents=True)
    p = run_cli(*command, "--json", vault=root, env=NOW)
    assert "Traceback" not in p.stderr, p.stderr
    if command == ("list",) and damage == "config_is_a_folder":
        assert p.returncode == 0  # reading the board needs no settings
        return
    assert p.returncode == 1, (p.stdout, p.stderr)
    err = json.loads(p.stdout)["error"]
    assert err["message"] and "Session ID is" not in p.stdout
