"""Regression tests for the hook path: the recall part of sessionStart reads the prebuilt
index without importing the index builder, and still shows the rule notes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentmem_vault.vault import Vault

from hooks_helpers import cursor_start, hook_env, id_from
from review_helpers import RULE
from test_hooks_imports import PROBE


BUILDER = {"agentmem_vault.recall.index", "agentmem_vault.model.notes", "agentmem_vault.model.textnorm"}


def _run(tmp_path: Path, vault: Vault, conv: str) -> tuple[set[str], dict]:
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), "hook", "cursor-session-start"],
        input=json.dumps(cursor_start(vault.root, conv=conv)).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=hook_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(out.read_text(encoding="utf-8"))), json.loads(proc.stdout)


def test_session_start_recall_does_not_import_the_index_builder(vault: Vault, tmp_path: Path) -> None:
    from agentmem_vault.recall.index import RecallIndex

    mods, ans = _run(tmp_path, vault, "no-index")
    assert id_from(ans) and "sqlite3" not in mods and not (mods & BUILDER), mods & BUILDER
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "回答語言.md").write_text(RULE, encoding="utf-8")
    RecallIndex(vault).sync()
    mods, ans = _run(tmp_path, vault, "with-index")
    assert "以後回答一律用繁體中文" in ans["additional_context"]
    assert not (mods & BUILDER), mods & BUILDER


def test_windows_stdin_reader_returns_a_complete_payload_without_waiting_for_eof(monkeypatch) -> None:
    """Windows has no select() on pipes, so stdin is read in a thread. An agent that sends its JSON
    and keeps the pipe open (Claude Code may) must still get its Session ID, not '{}' after 3 s."""
    import io
    import os
    import time

    from agentmem_vault.hooks import run as hooks

    payload = json.dumps({"session_id": "c-1", "hook_event_name": "SessionStart", "cwd": "/v/我的"}).encode()
    r, w = os.pipe()
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(r, "rb")), encoding="utf-8")
    try:
        os.write(w, payload)  # and the write end stays open
        monkeypatch.setattr(sys, "platform", "win32")
        monkeypatch.setattr(sys, "stdin", stdin)
        t0 = time.monotonic()
        got = hooks.read_stdin(timeout=60.0)
        elapsed = time.monotonic() - t0
    finally:
        os.close(w)
    monkeypatch.undo()
    stdin.close()
    assert got == payload and elapsed < 50  # returned on the whole object, not at the timeout
