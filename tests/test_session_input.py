"""Where the incoming snapshot comes from: --snapshot FILE / - / piped stdin, including a closed
stdin, a never-closed silent pipe (agents and CI runners), non-UTF-8 bytes and BOM + CRLF."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault
from agentmem_vault.errors import SnapshotFormatError, UsageError
from agentmem_vault.board.register import register_idle
from agentmem_vault.model.snapshot import parse_snapshot
from agentmem_vault.cli.snapshot_input import read_snapshot_source

from conftest import run_cli

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="closes fd 0 with a POSIX shell")


def _idle(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AGENTMEM_NOW", NOW["AGENTMEM_NOW"])
    return register_idle(vault, "cursor-main-agent").session_id


def _cmd(vault: Vault, *args: str) -> list[str]:
    return [sys.executable, "-m", "agentmem_vault", "--vault", str(vault.root), *args]


def _memory_bytes(v: Vault) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in v.memory.rglob("*") if p.is_file() and ".agentmem" not in p.parts}


@posix_only
@pytest.mark.parametrize("args", [("update", "{sid}", "--snapshot", "-"), ("register", "--manual", "--snapshot", "-")])
def test_snapshot_dash_with_closed_stdin_is_a_clear_error(vault: Vault, monkeypatch: pytest.MonkeyPatch, args) -> None:
    sid = _idle(vault, monkeypatch)
    before = _memory_bytes(vault)
    argv = [a.format(sid=sid) for a in args]
    # `<&-` closes fd 0: Python then has sys.stdin = None (was an AttributeError traceback).
    p = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *_cmd(vault, *argv, "--json")], capture_output=True, timeout=30
    )
    assert p.returncode == 1, p.stderr
    assert b"Traceback" not in p.stderr
    assert json.loads(p.stdout)["error"]["code"] == "snapshot_malformed"
    assert _memory_bytes(vault) == before


@pytest.mark.parametrize("via_stdin", [False, True])
def test_register_manual_non_utf8_snapshot_is_refused_without_traceback(vault: Vault, via_stdin: bool) -> None:
    before = _memory_bytes(vault)
    junk = b"# Session: x\n## Decisions\n- \xff\xfe broken\n"
    if via_stdin:
        p = run_cli("register", "--manual", "--snapshot", "-", "--json", vault=vault, input=junk, env=NOW)
    else:
        f = vault.root / "junk.md"
        f.write_bytes(junk)
        p = run_cli("register", "--manual", "--snapshot", str(f), "--json", vault=vault, env=NOW)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "snapshot_malformed" and "UTF-8" in err["message"]
    assert "Your Memory Session ID" not in p.stdout
    assert _memory_bytes(vault) == before


def test_register_manual_snapshot_file_with_bom_and_crlf(vault: Vault) -> None:
    f = vault.root / "snap.md"
    f.write_bytes(
        "\ufeff## Metadata\r\n| Field | Value |\r\n|---|---|\r\n| Topic | 記憶系統 |\r\n\r\n"
        "## Decisions\r\n- 用 SQLite\r\n".encode("utf-8")
    )
    p = run_cli("register", "--manual", "--snapshot", str(f), "--json", vault=vault, env=NOW)
    assert p.returncode == 0, p.stderr
    sid = json.loads(p.stdout)["session_id"]
    text = vault.session_path(sid).read_text(encoding="utf-8")
    assert "\r" not in text and not text.startswith("\ufeff")
    assert parse_snapshot(text).items("Decisions") == ["用 SQLite"]
    assert it.parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid).topic == "記憶系統"


def test_update_with_a_silent_never_closed_stdin_pipe_does_not_hang(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = _idle(vault, monkeypatch)
    vault.session_path(sid).write_text(f"# Session: {sid}\n\n## Decisions\n- A\n", encoding="utf-8")
    env = {**os.environ, **NOW}
    start = time.monotonic()
    p = subprocess.Popen(
        _cmd(vault, "update", sid), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        p.wait(timeout=20)  # stdin stays open and silent, as under many agent/CI runners
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("agentmem update hung on an open, silent stdin pipe")
    err = p.stderr.read()
    p.stdin.close()
    p.stdout.close()
    p.stderr.close()
    assert p.returncode == 0, err
    assert b"--snapshot -" in err  # the warning says how to wait for a slow producer
    assert time.monotonic() - start < 15
    assert it.parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid).status == "active"


def test_update_with_dev_null_stdin_uses_existing_snapshot(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = _idle(vault, monkeypatch)
    vault.session_path(sid).write_text(f"# Session: {sid}\n\n## Decisions\n- A\n", encoding="utf-8")
    p = subprocess.run(
        _cmd(vault, "update", sid, "--json"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**os.environ, **NOW},
        timeout=30,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["row_after"]["status"] == "active"


# -- the library function with real pipes -------------------------------------------------------


def test_silent_pipe_gives_none_after_the_wait_and_warns() -> None:
    r, w = os.pipe()
    warned: list[str] = []
    try:
        with os.fdopen(r, "rb", closefd=False) as stream:
            t0 = time.monotonic()
            assert read_snapshot_source(None, stdin=stream, wait=0.2, warn=warned.append) is None
            assert time.monotonic() - t0 < 2
    finally:
        os.close(w)  # ends the abandoned reader thread
        time.sleep(0.05)
        os.close(r)
    assert warned and "--snapshot -" in warned[0]


def test_slow_producer_within_the_wait_is_read_to_the_end() -> None:
    r, w = os.pipe()

    def produce() -> None:
        time.sleep(0.1)
        os.write(w, "\ufeff## Decisions\r\n".encode("utf-8"))
        time.sleep(0.1)
        os.write(w, "- 決定 A\r\n".encode("utf-8"))
        os.close(w)

    t = threading.Thread(target=produce)
    t.start()
    with os.fdopen(r, "rb") as stream:
        text = read_snapshot_source(None, stdin=stream, wait=5)
    t.join()
    assert text == "## Decisions\r\n- 決定 A\r\n"  # BOM dropped; CRLF left to the parser


def test_explicit_dash_and_file_errors() -> None:
    r, w = os.pipe()
    os.close(w)
    with os.fdopen(r, "rb") as stream, pytest.raises(SnapshotFormatError, match="empty"):
        read_snapshot_source("-", stdin=stream)
    with pytest.raises(UsageError, match="cannot read"):
        read_snapshot_source("/nonexistent/snap.md")
    assert read_snapshot_source(None, implicit_stdin=False) is None
