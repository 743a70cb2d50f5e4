"""Reliability: model calls have a bounded total time per source (docs/reliability.md). The real
anthropic client talks to a local socket server that accepts connections and never answers."""

from __future__ import annotations

import json
from pathlib import Path


from agentmem_vault.vault import Vault

from conftest import run_cli as _run_cli
from longterm_helpers import StalledServer


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


def test_silent_server_extract_stops_at_the_deadline_and_retries_next_run(vault: Vault, tmp_path: Path) -> None:
    chat = tmp_path / "chat.md"
    chat.write_text("User: From now on use pnpm instead of npm in this repo.\n\nAssistant: OK.\n", encoding="utf-8")
    vault.config_path.write_text(
        "llm_source_deadline: 3\nllm_timeout: 120\nmax_retries: 4\nllm_progress_seconds: 0.5\n", encoding="utf-8"
    )
    with StalledServer() as srv:
        env = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": srv.url}
        # without a deadline this would take 120 s x 5 attempts: the subprocess timeout catches a hang
        p = run_cli("extract", "--file", str(chat), "--json", vault=vault, env=env, timeout=100)
        assert "Traceback" not in p.stderr
        out = json.loads(p.stdout)
        assert any("deadline" in e["error"] and "retried next run" in e["error"] for e in out["errors"]), out["errors"]
        assert "waiting for the model on file:chat.md" in p.stderr
        assert srv.accepted >= 1
        again = run_cli("extract", "--file", str(chat), "--json", vault=vault, env=env, timeout=100)
        again_out = json.loads(again.stdout)
        assert [s["status"] for s in again_out["sources"]] == ["processed"]  # not recorded as done: retried
