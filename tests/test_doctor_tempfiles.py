"""doctor and the temporary files of interrupted writes (``.<name>.<pid>.<n>.agentmem-tmp``):
reported wherever they are in memory/; ``--fix`` removes only the stale ones, under the vault lock,
with a backup; the daemon's scan never takes them for vault files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.daemon.scan import classify, scan_memory
from agentmem_vault.ops.doctor import diagnose, repair
from agentmem_vault.ops.doctor.state import STALE_TEMP_SECONDS, TEMP_KIND
from agentmem_vault.errors import LockTimeout
from agentmem_vault.fs import TMP_SUFFIX, atomic_write_text
from agentmem_vault.writer import VaultWriter

from lifecycle_helpers import row, write_index, write_snapshot

A = "2026-05-01-0900-cursor-main-agent"
OLD = time.time() - 3 * 3600


def _tmp(folder: Path, target: str, data: bytes = b"half a wri", mtime: float | None = OLD, pid: int = 4242) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f".{target}.{pid}.{123456789}{TMP_SUFFIX}"
    p.write_bytes(data)
    if mtime is not None:
        os.utime(p, (mtime, mtime))
    return p


def _healthy(vault: Vault) -> None:
    write_index(vault, [row(A)])
    write_snapshot(vault, A)


def _temps(report) -> list:
    return [f for f in report.findings if f.kind == TEMP_KIND]


def test_temporaries_anywhere_in_memory_are_reported(vault: Vault, cli) -> None:
    _healthy(vault)
    made = [
        _tmp(vault.memory, "index.md"),
        _tmp(vault.sessions_dir, f"{A}.md", "快照寫到一半".encode("utf-8")[:7]),  # cut inside a character
        _tmp(vault.longterm_dir, "Redis 分布式锁.md"),
        _tmp(vault.archive_dir / "2026-02-01-0000-cursor-main-agent", "session.md"),
        _tmp(vault.state_dir / "recall", "index.sqlite3", b"SQLite format 3\x00" + b"\x00" * 100),
    ]
    rep = diagnose(vault)
    assert sorted(f.path for f in _temps(rep)) == sorted(str(p.relative_to(vault.root).as_posix()) for p in made)
    assert all(f.severity == "warning" and f.fix for f in _temps(rep))
    assert "interrupted write of index.md" in " ".join(f.message for f in _temps(rep))
    proc = cli("doctor", "--json", vault=vault)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # warnings: the vault itself is fine
    out = json.loads(proc.stdout)
    assert out["ok"] is False and sum(f["kind"] == TEMP_KIND for f in out["fixable"]) == 5
    human = cli("doctor", vault=vault).stdout
    assert ".index.md.4242.123456789.agentmem-tmp" in human and "--fix will remove it" in human


def test_fix_removes_stale_ones_with_a_backup_and_keeps_young_ones(vault: Vault, cli) -> None:
    _healthy(vault)
    stale = _tmp(vault.sessions_dir, f"{A}.md", b"# Session: half")
    young = _tmp(vault.memory, "index.md", b"| new row", mtime=time.time() - 30)
    future = _tmp(vault.memory, "index.md", b"from a fast clock", mtime=time.time() + 3600, pid=7)
    # look-alikes that are not agentmem's temporaries stay whatever their age
    others = [
        vault.memory / "notes.agentmem-tmp",
        vault.memory / ".index.md.x.1.agentmem-tmp",
        vault.sessions_dir / "a.tmp",
    ]
    for p in others:
        p.write_text("keep me", encoding="utf-8")
        os.utime(p, (OLD, OLD))
    (vault.memory / f".dir.1.2{TMP_SUFFIX}").mkdir()
    index_before = vault.index_path.read_bytes()

    proc = cli("doctor", "--fix", "--json", vault=vault)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert [f["path"] for f in out["fixed"]] == [f"memory/sessions/.{A}.md.4242.123456789{TMP_SUFFIX}"]
    assert not stale.exists() and young.exists() and future.exists()
    assert all(p.exists() for p in others) and (vault.memory / f".dir.1.2{TMP_SUFFIX}").is_dir()
    assert vault.index_path.read_bytes() == index_before  # nothing else was touched
    # the backup holds the removed bytes under the same path
    backup = vault.root / out["backup"]
    assert (backup / "sessions" / stale.name).read_bytes() == b"# Session: half"
    # journaled by size and hash
    journal = [json.loads(x) for x in vault.journal_path.read_text(encoding="utf-8").splitlines()]
    entry = next(e for e in journal if e["action"] == "remove_temp_file")
    assert entry["bytes"] == len(b"# Session: half") and entry["command"] == "doctor"
    # the young ones are reported, not offered for removal
    left = {f["path"]: f for f in out["left_for_person"] if f["kind"] == TEMP_KIND}
    assert set(left) == {str(young.relative_to(vault.root).as_posix()), str(future.relative_to(vault.root).as_posix())}
    assert "write in progress" in left[str(young.relative_to(vault.root).as_posix())]["message"]
    assert "in the future" in left[str(future.relative_to(vault.root).as_posix())]["message"]

    # the backup copy is not itself reported as a leftover, and a second run has nothing to remove
    again = repair(vault)
    assert sorted(f.path for f in _temps(again)) == sorted(
        str(p.relative_to(vault.root).as_posix()) for p in (young, future)
    )
    assert again.backup is None


def test_the_age_limit_is_a_few_minutes(vault: Vault) -> None:
    _healthy(vault)
    now = time.time()
    p = _tmp(vault.memory, "index.md", mtime=now - STALE_TEMP_SECONDS + 20)
    assert 60 <= STALE_TEMP_SECONDS <= 15 * 60
    rep = repair(vault, now=now)
    assert p.exists() and not _temps(rep)[0].fixed and _temps(rep)[0].fix is None
    rep = repair(vault, now=now + 30)
    assert not p.exists() and _temps(rep)[0].fixed


def test_temporaries_are_removed_even_when_the_index_cannot_be_edited(vault: Vault) -> None:
    vault.index_path.write_bytes(b"\xff\xfe not utf-8")
    p = _tmp(vault.memory, "index.md", b"| A | the new text |")
    rep = repair(vault)
    assert [f.kind for f in rep.findings] == ["index_unreadable", TEMP_KIND]
    assert not p.exists() and rep.findings[1].fixed
    assert vault.index_path.read_bytes() == b"\xff\xfe not utf-8"


def test_index_fixes_and_temp_removal_in_one_run(vault: Vault) -> None:
    write_index(vault, [row(A, "closed")])
    write_snapshot(vault, A)
    p = _tmp(vault.memory, "index.md")
    rep = repair(vault)
    assert {f.kind for f in rep.findings if f.fixed} == {"bad_status", TEMP_KIND}
    assert not p.exists()
    backup = vault.root / rep.backup
    assert (backup / "index.md").exists() and (backup / p.name).read_bytes() == b"half a wri"


def test_a_temporary_that_cannot_be_removed_stays_reported(vault: Vault) -> None:
    _healthy(vault)
    p = _tmp(vault.longterm_dir, "note.md")
    vault.longterm_dir.chmod(0o555)
    try:
        rep = repair(vault)
    finally:
        vault.longterm_dir.chmod(0o755)
    f = _temps(rep)[0]
    assert p.exists() and not f.fixed and "by hand" in (f.hint or "")


def test_fix_waits_for_the_vault_lock_and_removes_nothing_without_it(vault: Vault, tmp_path: Path) -> None:
    _healthy(vault)
    vault.config_path.write_text("lock_timeout: 0.5\n", encoding="utf-8")
    p = _tmp(vault.memory, "index.md")
    ready = tmp_path / "ready"
    code = (
        "import sys, time, pathlib\nfrom agentmem_vault.vault import Vault\nfrom agentmem_vault.writer import VaultWriter\n"
        "with VaultWriter(Vault(pathlib.Path(sys.argv[1])), 'test-holder'):\n"
        "    pathlib.Path(sys.argv[2]).write_text('x')\n    time.sleep(30)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(vault.root), str(ready)])
    try:
        deadline = time.monotonic() + 20
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists()
        with pytest.raises(LockTimeout):
            repair(vault)
        assert p.exists()
    finally:
        holder.terminate()
        holder.wait(timeout=10)
    assert repair(vault).findings[0].fixed and not p.exists()


def test_remove_temp_file_refuses_other_files(vault: Vault) -> None:
    from agentmem_vault.errors import WriteFailed

    with VaultWriter(vault, "test") as w:
        with pytest.raises(WriteFailed):
            w.remove_temp_file(vault.index_path)
        with pytest.raises(WriteFailed):
            w.remove_temp_file(vault.root / f".x.1.2{TMP_SUFFIX}")  # outside memory/
        assert w.remove_temp_file(vault.memory / f".gone.1.2{TMP_SUFFIX}") is False
    assert vault.index_path.exists()


# -- the daemon ------------------------------------------------------------------------------------


def test_daemon_scan_ignores_temporaries(vault: Vault) -> None:
    _healthy(vault)
    temps = [
        _tmp(vault.memory, "index.md", b"| half"),
        _tmp(vault.sessions_dir, f"{A}.md", b"# Session"),
        _tmp(vault.memory, "index (1).md"),
        _tmp(vault.sessions_dir, f"{A}.md", pid=9),
    ]
    snap = scan_memory(vault.memory)
    assert set(snap.entries) == {"index.md", f"sessions/{A}.md"}
    for p in temps:
        assert classify(p.relative_to(vault.memory).as_posix()) is None
    # an atomic write in progress right now is not seen either
    atomic_write_text(
        vault.sessions_dir / f"{A}.md", vault.sessions_dir.joinpath(f"{A}.md").read_text(encoding="utf-8")
    )
    assert set(scan_memory(vault.memory).entries) == {"index.md", f"sessions/{A}.md"}
