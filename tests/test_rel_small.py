"""Reliability: the smaller holes (docs/reliability.md): read-only vaults as root, sessions/ as a
file, transcript paths a session-end hook may queue."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from hooks_helpers import answer, cursor_end, hooks_log, run_hook

from agentmem_vault.vault import Vault
from agentmem_vault.ops.conversations import extract_queue_path

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@posix
def test_init_in_a_read_only_folder_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o555)
    try:
        p = run_cli("init", vault=Vault(root))
        assert p.returncode != 0 and "read-only" in p.stderr and "Traceback" not in p.stderr
        assert _tree(root) == []
    finally:
        root.chmod(0o755)


def _chmod_tree(root: Path, writable: bool) -> None:
    for p in [root, *root.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755 if writable else 0o555)
        else:
            p.chmod(0o644 if writable else 0o444)


@posix
@pytest.mark.parametrize("how", ["whole_vault", "memory_without_state"])
def test_register_in_a_read_only_vault_creates_nothing(vault: Vault, how: str) -> None:
    if how == "memory_without_state":
        shutil.rmtree(vault.state_dir)
        vault.memory.chmod(0o555)  # .agentmem/ would have to be created inside it
    else:
        _chmod_tree(vault.memory, writable=False)
    before = _tree(vault.root)
    index = vault.index_path.read_bytes()
    try:
        for args in (("register",), ("register", "--manual", "--topic", "t")):
            p = run_cli(*args, vault=vault, env=NOW, input=b"")
            assert p.returncode != 0 and "read-only" in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert _tree(vault.root) == before
        assert vault.index_path.read_bytes() == index
    finally:
        _chmod_tree(vault.memory, writable=True)


def test_sessions_as_a_file_is_reported_and_refused(vault: Vault) -> None:
    shutil.rmtree(vault.sessions_dir)
    vault.sessions_dir.write_text("not a folder", encoding="utf-8")
    d = run_cli("doctor", "--json", vault=vault)
    assert "Traceback" not in d.stderr
    kinds = [f["message"] for f in json.loads(d.stdout)["findings"]]
    assert any("memory/sessions is a file" in m for m in kinds), kinds
    p = run_cli("register", "--manual", "--topic", "t", vault=vault, env=NOW, input=b"")
    assert p.returncode != 0 and "Traceback" not in p.stderr and "sessions" in p.stderr
    assert vault.sessions_dir.read_text(encoding="utf-8") == "not a folder"
    fix = run_cli("doctor", "--fix", vault=vault)
    assert "Traceback" not in fix.stderr and vault.sessions_dir.is_file()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


@pytest.mark.parametrize(
    "bad",
    [
        "../../../etc/shadow",
        "/etc/shadow",
        "/dev/zero",
        "relative/t.jsonl",
        "{home}/.cursor/projects/p/agent-transcripts/../../../../../etc/passwd",
        "{home}/.claude/projects/p/t.jsonl",  # Claude's folder is not Cursor's
        "{home}/.cursor/projects/p/agent-transcripts/fifo.jsonl",
    ],
)
def test_session_end_queues_only_the_agents_transcripts(vault: Vault, outside: Path, bad: str) -> None:
    home = Path.home()
    fifo = home / ".cursor" / "projects" / "p" / "agent-transcripts" / "fifo.jsonl"
    fifo.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform != "win32" and not fifo.exists():
        os.mkfifo(fifo)
    proc = run_hook("cursor-session-end", cursor_end(vault.root, "c-9", bad.format(home=home)), cwd=outside)
    assert proc.returncode == 0 and answer(proc) == {}
    assert not extract_queue_path(vault).exists()
    assert "not queued" in hooks_log(vault)[0]


def test_session_end_accepts_the_agents_own_folder_and_configured_dirs(
    vault: Vault, outside: Path, tmp_path: Path
) -> None:
    own = Path.home() / ".cursor" / "projects" / "p" / "agent-transcripts" / "c" / "c.jsonl"
    own.parent.mkdir(parents=True)
    own.write_text("{}\n", encoding="utf-8")
    extra = tmp_path / "my transcripts"
    extra.mkdir()
    (extra / "t.jsonl").write_text("{}\n", encoding="utf-8")
    vault.config_path.write_text(f"transcript_dirs: [{json.dumps(str(extra))}]\n", encoding="utf-8")
    for path in (own, extra / "t.jsonl"):
        proc = run_hook("cursor-session-end", cursor_end(vault.root, "c-9", str(path)), cwd=outside)
        assert proc.returncode == 0 and answer(proc) == {}
    q = [json.loads(x)["path"] for x in extract_queue_path(vault).read_text(encoding="utf-8").splitlines()]
    assert q == [str(own), str(extra / "t.jsonl")]
    assert stat.S_ISREG(own.stat().st_mode)
