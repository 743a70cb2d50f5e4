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


def test_an_extracted_rule_reaches_the_next_chat_and_a_deprecated_one_leaves_at_once(
    vault: Vault, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # A first note builds the index; the second arrives in an index that exists (the case that failed).
    _cli(
        vault,
        "extract",
        "--file",
        str(_transcript(tmp_path, "a.txt", "Remember: never commit .env files, in every project.")),
    )
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
    _cli(
        vault,
        "extract",
        "--file",
        str(_transcript(tmp_path, "a.txt", "Remember: never commit .env files, in every project.")),
    )
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
    _cli(
        vault,
        "extract",
        "--file",
        str(_transcript(tmp_path, "a.txt", "Remember: never commit .env files, in every project.")),
    )
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
