"""Fresh after every write (docs/recall.md, "Freshness"): a note written or removed by a command
reaches the very next sessionStart and query in another process, without a daemon and without a
full reindex. Every step is its own process: the CLI, the hook fed real JSON, the MCP server
driven by the SDK's real client."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.recall.location import db_path, rules_path
from hooks_helpers import answer, claude_start, run_hook

pytest.importorskip("mcp.server.mcpserver")
from mcp import Client, StdioServerParameters  # noqa: E402

RULE = "Remember: always run ruff format before every commit, in every project."


def _cli(vault: Vault, *args: str, cwd: Path | None = None) -> dict:
    from conftest import run_process

    proc = run_process(["--vault", str(vault.root), "--json", *args], cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def _start_context(vault: Vault, folder: Path, conv: str) -> str:
    proc = run_hook(
        "claude-session-start", claude_start(folder, sid=conv), cwd=folder, args=["--vault", str(vault.root)]
    )
    assert proc.returncode == 0
    return answer(proc)["hookSpecificOutput"]["additionalContext"]


def _mcp(vault: Vault, calls: list[tuple[str, dict]], cwd: Path) -> list[Any]:
    passed = {k: v for k, v in os.environ.items() if k.startswith("AGENTMEM_") or k in ("HOME", "USERPROFILE")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentmem_vault", "mcp", "--vault", str(vault.root)], env=passed, cwd=cwd
    )
    out: list[Any] = []

    async def main() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=120) as c:
            for name, args in calls:
                out.append(await c.call_tool(name, args))

    anyio.run(main)
    return out


def _transcript(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(f"user: {text}\nassistant: Noted.\n", encoding="utf-8")
    return p


def _extract_env_rule(vault: Vault, tmp_path: Path) -> None:
    """A first rule, extracted from a transcript of its own (it builds the index)."""
    _cli(
        vault,
        "extract",
        "--file",
        str(_transcript(tmp_path, "a.txt", "Remember: never commit .env files, in every project.")),
    )


def test_an_extracted_rule_reaches_the_next_chat_and_a_deprecated_one_leaves_at_once(
    vault: Vault, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # A first note builds the index; the second arrives in an index that exists (the case that failed).
    _extract_env_rule(vault, tmp_path)
    assert "Never commit .env" in _start_context(vault, work, "chat-0")

    res = _cli(vault, "extract", "--file", str(_transcript(tmp_path, "b.txt", RULE)))
    (created,) = [a for a in res["actions"] if a["action"] == "create"]
    start = _start_context(vault, work, "chat-1")
    assert "Always run ruff format before every commit" in start and created["id"] in start
    (ctx,) = _mcp(vault, [("memory_context", {"task": "what to do before a commit"})], work)
    assert not ctx.is_error and created["id"] in ctx.structured_content["markdown"]

    _cli(vault, "memories", "deprecate", created["id"], "--reason", "we format in CI now")
    start = _start_context(vault, work, "chat-2")
    assert created["id"] not in start and "ruff format" not in start
    assert "Never commit .env" in start  # the other rule stays
    (ctx,) = _mcp(vault, [("memory_context", {"task": "what to do before a commit"})], work)
    assert not ctx.is_error and created["id"] not in ctx.structured_content["markdown"]


def test_a_rule_remembered_over_mcp_and_a_moved_one(vault: Vault, tmp_path: Path) -> None:
    shop, other = tmp_path / "shop", tmp_path / "other"
    shop.mkdir()
    other.mkdir()
    _extract_env_rule(vault, tmp_path)
    (rem,) = _mcp(
        vault, [("memory_remember", {"text": "Always answer in Traditional Chinese, in every project."})], shop
    )
    assert rem.structured_content["outcome"] == "create", rem.structured_content
    mid = rem.structured_content["actions"][0]["id"]
    assert mid in _start_context(vault, other, "chat-1")

    _cli(vault, "memories", "move", mid, "--project", "shop")
    assert mid in _start_context(vault, shop, "chat-2")
    assert mid not in _start_context(vault, other, "chat-3")


def test_only_the_rows_written_are_read_again(vault: Vault, tmp_path: Path) -> None:
    """No full reindex: a note edited behind our back (no command wrote it) keeps its indexed row
    until a query syncs, while the note a command wrote is current at once."""
    _extract_env_rule(vault, tmp_path)
    (note,) = list(vault.longterm_dir.glob("*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("Never commit", "NEVER EVER commit"), encoding="utf-8")
    _cli(vault, "extract", "--file", str(_transcript(tmp_path, "b.txt", RULE)))
    conn = sqlite3.connect(db_path(vault))
    try:
        rows = dict(conn.execute("SELECT path, content FROM notes").fetchall())
    finally:
        conn.close()
    assert len(rows) == 2
    assert "Never commit" in rows[note.name] and "NEVER EVER" not in rows[note.name]
    rules = json.loads(rules_path(vault).read_text(encoding="utf-8"))["data"]
    assert any("ruff format" in r[5] for r in rules)


# -- writes that are not a note command: doctor's redaction, the undo of a killed operation ---------


def test_a_rule_doctor_fix_redacts_is_in_the_next_chat_redacted_and_no_copy_keeps_the_secret(
    vault: Vault, tmp_path: Path
) -> None:
    """A hand-written rule holding a key: once a query has indexed it, `doctor --fix` redacts the
    note, and the next sessionStart shows the rule (redacted) at once; nothing under memory/, the
    recall index and its rule summary included, keeps the key."""
    from redaction_helpers import SECRETS

    text, value = SECRETS["aws-key"]
    work = tmp_path / "work"
    work.mkdir()
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "deploy.md").write_text(
        "---\nid: lt-dep001\ntitle: Deploy with the CI key only\ncategory: development_practice_specification\n"
        f"scope: global\nimportance: 0.95\nstatus: active\nupdated: 2026-05-01T10:00\n---\nDeploy with {text} from CI.\n",
        encoding="utf-8",
    )
    _cli(vault, "context", "deploy")  # a query indexes the note as it is, key and all
    assert value in _start_context(vault, work, "chat-0")
    fixed = _cli(vault, "doctor", "--fix")
    assert any(f["kind"] == "secret_stored" and f.get("fixed") for f in fixed["findings"]), fixed
    start = _start_context(vault, work, "chat-1")
    assert "Deploy with the CI key only" in start and "[REDACTED:aws-key]" in start and value not in start
    # The index stores the key as a folded token whose first letters it may share with the term
    # before it: its tail, in any case, is what must not be anywhere (an old page included).
    tail = value[4:].lower().encode()
    leaks = [str(p) for p in vault.memory.rglob("*") if p.is_file() and tail in p.read_bytes().lower()]
    assert leaks == []


def test_the_undo_of_a_killed_extract_keeps_the_rule_in_the_next_chat(vault: Vault, tmp_path: Path) -> None:
    """An extract killed after it rewrote a rule (before it could update the index) is undone by the
    next writer, here the sessionStart hook's registration: the note is put back byte for byte,
    and that very chat, and every next one, still gets the rule (not left out as changed)."""
    from conftest import run_process

    work = tmp_path / "work"
    work.mkdir()
    _extract_env_rule(vault, tmp_path)
    (note,) = list(vault.longterm_dir.glob("*.md"))
    before = note.read_bytes()
    wider = _transcript(
        tmp_path, "b.txt", "Remember: never commit .env files or .env.local files, in every project, use .env.example."
    )
    killed = run_process(
        ["--vault", str(vault.root), "extract", "--file", str(wider)], env={"AGENTMEM_CRASH_AT": "txn:1"}
    )
    assert killed.returncode == 137 and note.read_bytes() != before, killed.stderr
    start = _start_context(vault, work, "chat-1")  # its registration undoes the killed extract
    assert note.read_bytes() == before
    assert "Never commit .env" in start and ".env.local" not in start
    assert "Never commit .env" in _start_context(vault, work, "chat-2")
