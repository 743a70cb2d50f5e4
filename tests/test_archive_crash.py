"""Reliability: an archive killed at any step is undone by the next writer (``doctor --fix``, or
``archive`` again, which then archives anew) (docs/reliability.md, "Crash safety"). Real
subprocesses: the transaction's crash hook (``AGENTMEM_CRASH_AT=txn:N``) exits the process as a
SIGKILL would once N files were written; another test SIGKILLs it inside each step (once the
journal shows each next entry), waiting on the journal, not a clock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.board import table as it

from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}


def _build(root: Path) -> tuple[Vault, str, str]:
    """A vault where T continues from S (S's Referenced By lists T); archiving T releases S."""
    from agentmem_vault.ops.board import init_vault

    v = Vault(root)
    root.mkdir(parents=True)
    init_vault(v)
    snap = "# Session: x\\n\\n## Current Context\\n- working on {t}\\n"
    s = json.loads(run_cli("register", "--manual", "--topic", "source", "--json", vault=v, env=NOW, input=b"").stdout)[
        "session_id"
    ]
    t = json.loads(
        run_cli(
            "register", "--manual", "--topic", "target", "--agent", "other-agent", "--json", vault=v, env=NOW, input=b""
        ).stdout
    )["session_id"]
    p = run_cli("continue", s, "--session", t, vault=v, env=NOW)
    assert p.returncode == 0, p.stderr
    del snap
    return v, s, t


def _state(v: Vault) -> dict[str, bytes]:
    out = {}
    for p in sorted(v.memory.rglob("*")):
        rel = p.relative_to(v.memory).as_posix()
        if rel.startswith(".agentmem") or p.is_dir() or p.name.endswith(".agentmem-tmp"):
            continue
        out[rel] = p.read_bytes()
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("arch")
    v, s, t = _build(base / "before")
    before = _state(v)
    after_v = Vault(base / "after")
    shutil.copytree(v.root, after_v.root)
    p = run_cli("archive", t, vault=after_v, env=NOW)
    assert p.returncode == 0, p.stderr
    return {"vault": v, "s": s, "t": t, "before": before, "after": _state(after_v)}


def _copy(built: dict, tmp_path: Path) -> Vault:
    v = Vault(tmp_path / "v")
    shutil.copytree(built["vault"].root, v.root)
    return v


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("resolver", ["archive", "doctor"])
def test_archive_killed_at_each_step_is_undone_by_the_next_writer(
    built: dict, tmp_path: Path, step: int, resolver: str
) -> None:
    v = _copy(built, tmp_path)
    t = built["t"]
    killed = run_cli("archive", t, vault=v, env={**NOW, "AGENTMEM_CRASH_AT": f"txn:{step}"})
    assert killed.returncode == 137, killed.stderr
    assert "killed halfway" in run_cli("doctor", vault=v, env=NOW).stdout
    if resolver == "archive":
        p = run_cli("archive", t, vault=v, env=NOW)
    else:
        p = run_cli("doctor", "--fix", vault=v, env=NOW)
        assert "killed halfway" in p.stdout and "put back" in p.stdout, p.stdout
    assert "Traceback" not in p.stderr
    assert p.returncode == 0, p.stderr
    # undone first; the user asked to archive again: archived anew
    assert _state(v) == (built["after"] if resolver == "archive" else built["before"]), (step, p.stdout)
    again = run_cli("doctor", vault=v, env=NOW)
    assert "killed halfway" not in again.stdout


def _journal_lines(v: Vault) -> int:
    return len(v.journal_path.read_bytes().splitlines()) if v.journal_path.exists() else 0


def test_archive_sigkilled_at_random_moments(built: dict, tmp_path: Path) -> None:
    """SIGKILL after every number of journal entries an archive writes (so inside each next step,
    at whatever moment of it the kill lands), and once not at all: old or new files, never a mix."""
    outcomes = {"before": 0, "after": 0}
    whole = Vault(tmp_path / "whole")  # how many journal entries a whole archive writes
    shutil.copytree(built["vault"].root, whole.root)
    start = _journal_lines(whole)
    assert run_cli("archive", built["t"], vault=whole, env=NOW).returncode == 0
    entries = _journal_lines(whole) - start
    for k in range(entries + 2):  # entries + 1: the journal never gets there, the run finishes
        v = Vault(tmp_path / f"v{k}")
        shutil.copytree(built["vault"].root, v.root)
        start = _journal_lines(v)
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentmem_vault", "--vault", str(v.root), "archive", built["t"]],
            env={**os.environ, **NOW},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60  # no fixed sleep: the journal says when
        while _journal_lines(v) < start + k and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        fix = run_cli("doctor", "--fix", vault=v, env=NOW)
        assert "Traceback" not in fix.stderr
        state = _state(v)
        assert state in (built["before"], built["after"]), (k, fix.stdout)
        outcomes["before" if state == built["before"] else "after"] += 1
    assert outcomes["before"] and outcomes["after"], outcomes


def test_in_process_failure_rolls_back_through_the_transaction(built: dict, tmp_path: Path, monkeypatch) -> None:
    from agentmem_vault.board.store import BoardWriter
    from agentmem_vault.errors import AgentmemError, WriteFailed
    from agentmem_vault.ops.archive import archive
    from agentmem_vault.writer import pending_undo

    v = _copy(built, tmp_path)
    real = BoardWriter.remove_row

    def boom(self, sid, **kw):
        raise WriteFailed("disk went away")

    monkeypatch.setattr(BoardWriter, "remove_row", boom)
    with pytest.raises(AgentmemError, match="left exactly as before"):
        archive(v, built["t"])
    monkeypatch.setattr(BoardWriter, "remove_row", real)
    assert _state(v) == built["before"]
    assert pending_undo(v) == []
    entries = [json.loads(x) for x in v.journal_path.read_text(encoding="utf-8").splitlines()]
    assert [e["action"] for e in entries if e["action"] == "rollback"] == ["rollback"]
    assert it.parse_index(v.index_path.read_text(encoding="utf-8")).find(built["t"]) is not None
