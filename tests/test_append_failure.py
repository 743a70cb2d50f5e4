"""Reliability: a failed append leaves the file at its exact old bytes (docs/reliability.md)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from agentmem_vault import fs
from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, WriteFailed

WHEN = datetime(2026, 6, 1, 9, 30)


def _enospc_after(limit: int):
    """os.write that writes at most ``limit`` bytes in all, cut inside whatever it gets, then ENOSPC."""
    real = os.write
    left = [limit]

    def fake(fd: int, data) -> int:
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = real(fd, bytes(data[: left[0]]))
        left[0] -= n
        return n

    return fake


@pytest.mark.parametrize("limit", [0, 1, 5, 17, 40])
def test_append_bytes_restores_old_bytes_on_enospc(tmp_path: Path, monkeypatch, limit: int) -> None:
    p = tmp_path / "f.md"
    p.write_bytes("| 舊 |\n".encode())
    before = p.read_bytes()
    monkeypatch.setattr(fs, "_os_write", _enospc_after(limit))
    with pytest.raises(WriteFailed) as ei:
        fs.append_bytes(p, "| 新的一行，中文 |\n".encode() * 3)
    assert "No space" in str(ei.value)
    assert p.read_bytes() == before


def test_register_with_full_disk_keeps_the_board_and_the_next_register_works(vault: Vault, monkeypatch) -> None:
    from agentmem_vault.board.register import register_idle

    register_idle(vault, "a", when=WHEN)
    before = vault.index_path.read_bytes()
    journal_before = vault.journal_path.read_bytes()
    monkeypatch.setattr(fs, "_os_write", _enospc_after(0))
    # the journal append fails first: nothing else is touched
    with pytest.raises(AgentmemError):
        register_idle(vault, "a", when=WHEN)
    assert vault.index_path.read_bytes() == before
    assert vault.journal_path.read_bytes() == journal_before
    monkeypatch.undo()
    # cut inside the row itself: journal entry lands, the row append is undone
    real = os.write

    def fail_on_index(fd: int, data) -> int:
        if "中" in bytes(data).decode("utf-8", "ignore") or b"| 2026" in bytes(data):
            real(fd, bytes(data[:7]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(fs, "_os_write", fail_on_index)
    with pytest.raises(AgentmemError):
        register_idle(vault, "a", when=WHEN)
    assert vault.index_path.read_bytes() == before
    monkeypatch.undo()
    sid = register_idle(vault, "a", when=WHEN).session_id
    assert (
        vault.index_path.read_bytes()
        .decode("utf-8")
        .endswith(
            f"| {sid} | a | 未設定 | sessionStart 自動註冊，尚未整理主題。 | sessionStart, cursor-agent | idle | - | 2026-06-01 09:30 | 2026-06-01 09:30 |\n"
        )
    )


def _can_mount_tmpfs() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs root on Linux to mount a tiny tmpfs")
def test_tiny_tmpfs_full_disk_register_and_hook(tmp_path: Path) -> None:
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mnt)], capture_output=True, check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tmpfs: {r.stderr.decode(errors='replace').strip()}")
    try:
        v = Vault(mnt / "v")
        v.root.mkdir()
        assert run_cli("init", vault=v).returncode == 0
        env = {"AGENTMEM_NOW": "2026-06-01T09:30"}
        ok = run_cli("register", "--json", vault=v, env=env)
        assert ok.returncode == 0, ok.stderr
        # tmpfs allocates whole pages: leave 10 bytes in the index's last page (so the next row is cut
        # mid-row, inside a CJK character) and ~1 KB in the journal's (so its entry still fits).
        text = v.index_path.read_text(encoding="utf-8")
        head, table = text.split("| Session ID", 1)
        pad = 4096 - 10 - len((head + "| Session ID" + table).encode()) - 2
        v.index_path.write_text(head + "p" * pad + "\n\n| Session ID" + table, encoding="utf-8")
        assert v.index_path.stat().st_size % 4096 == 4086
        jsize = v.journal_path.stat().st_size
        filler_len = (4096 + 1000 - jsize % 4096 - len('{"action": "pad", "x": ""}\n')) % 4096
        with v.journal_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"action": "pad", "x": "y" * filler_len}) + "\n")
        # fill the disk
        filler = mnt / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for size in (4096, 512, 64, 8, 1):
                while True:
                    try:
                        os.write(fd, b"x" * size)
                    except OSError:
                        break
        finally:
            os.close(fd)
        boards = []
        for _ in range(3):
            before = v.index_path.read_bytes()
            p = run_cli("register", vault=v, env=env)
            assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
            assert v.index_path.read_bytes() == before
            before.decode("utf-8")
            boards.append(before)
            h = subprocess.run(
                [sys.executable, "-m", "agentmem_vault", "hook", "cursor-session-start", "--vault", str(v.root)],
                input=json.dumps({"conversation_id": str(uuid.uuid4()), "hook_event_name": "sessionStart"}).encode(),
                capture_output=True,
                env={**os.environ, **env},
                timeout=120,
                check=False,
            )
            # No Session ID; the chat is told in one line what is wrong.
            assert h.returncode == 0 and "Session ID" not in h.stdout.decode()
            assert "No space left" in json.loads(h.stdout)["additional_context"]
            assert v.index_path.read_bytes() == before
        filler.unlink()
        again = run_cli("register", "--json", vault=v, env=env)
        assert again.returncode == 0, again.stderr
        assert run_cli("list", vault=v).returncode == 0
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
