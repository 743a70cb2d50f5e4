"""The MCP server driven through the official SDK's stdio client, in real subprocesses, on a
temporary vault: initialize, list, call every tool, read every resource, get the prompt; bad
input gives MCP error results with our codes and the server keeps serving; two server processes
writing one vault at the same time lose nothing."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver")

from mcp import Client, MCPError, StdioServerParameters

from agentmem_vault.vault import Vault
from agentmem_vault.locking import exclusive_lock
from agentmem_vault.board.table import parse_index

TOOLS = {
    "memory_whoami",
    "memory_register",
    "memory_update",
    "memory_continue",
    "memory_release",
    "memory_organize",
    "memory_archive",
    "memory_list",
    "memory_find",
    "memory_show",
    "memory_context",
    "memory_search",
    "memory_remember",
    "memory_deprecate",
}
READ_ONLY = {"memory_whoami", "memory_list", "memory_find", "memory_show", "memory_context", "memory_search"}
DESTRUCTIVE = {"memory_release", "memory_organize", "memory_archive", "memory_deprecate"}

SNAP = """# Session: x

## Current Context
Building the MCP server for agentmem.

## Decisions
- tools call one library function each

## Next Actions
- write the installer
"""


def server_params(vault: Vault, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    # The SDK passes only a safe default environment to the server: hand over our isolation.
    passed = {k: v for k, v in os.environ.items() if k.startswith("AGENTMEM_") or k in ("HOME", "USERPROFILE")}
    passed.update(env or {})
    return StdioServerParameters(
        command=sys.executable, args=["-m", "agentmem_vault", "mcp", "--vault", str(vault.root), *extra], env=passed
    )


def drive(
    vault: Vault, scenario: Callable[[Client], Awaitable[Any]], *extra: str, env: dict[str, str] | None = None
) -> Any:
    """Start a server process, run ``scenario`` against it with the initialize handshake (what
    Cursor, Claude Code, Codex and Claude Desktop do), and stop it."""
    out: list[Any] = []

    async def main() -> None:
        async with Client(server_params(vault, *extra, env=env), mode="legacy", read_timeout_seconds=120) as c:
            out.append(await scenario(c))

    anyio.run(main)
    return out[0]


async def call(c: Client, name: str, args: dict[str, Any] | None = None) -> dict:
    r = await c.call_tool(name, args or {})
    assert r.structured_content is not None, (name, r.content)
    if r.is_error:
        assert "error" in r.structured_content and r.content[0].text.startswith("error ["), r
    return {"error": r.is_error, **r.structured_content}


def board(vault: Vault) -> dict:
    return {r.session_id: r for r in parse_index(vault.index_path.read_text(encoding="utf-8")).row_list()}


def test_every_tool_resource_and_prompt(vault: Vault) -> None:
    async def scenario(c: Client) -> dict:
        got: dict[str, Any] = {"server": c.server_info.name}
        tools = {t.name: t for t in (await c.list_tools()).tools}
        got["tools"] = tools
        reg = await call(c, "memory_register", {"topic": "MCP 伺服器", "summary": "building it", "snapshot": SNAP})
        sid = reg["session_id"]
        src = (await call(c, "memory_register", {"topic": "earlier work"}))["session_id"]
        got["update"] = await call(
            c,
            "memory_update",
            {"session_id": sid, "snapshot": "## Decisions\n- resources too\n", "keywords": "mcp, tools"},
        )
        got["continue"] = await call(c, "memory_continue", {"source_id": src, "session_id": sid})
        got["show"] = await call(c, "memory_show", {"session_id": sid})
        got["list"] = await call(c, "memory_list", {"status": "active"})
        got["find"] = await call(c, "memory_find", {"query": "伺服器"})
        got["release"] = await call(c, "memory_release", {"source_id": src, "session_id": sid})
        got["organize"] = await call(c, "memory_organize", {"dry_run": True})
        got["archive_dry"] = await call(c, "memory_archive", {"session_id": src, "dry_run": True})
        got["remember"] = await call(
            c, "memory_remember", {"text": "Always use pnpm instead of npm in this repo.", "project": "demo"}
        )
        got["remember_again"] = await call(
            c, "memory_remember", {"text": "Always use pnpm instead of npm in this repo.", "project": "demo"}
        )
        got["search"] = await call(c, "memory_search", {"query": "pnpm", "project": "demo"})
        got["context"] = await c.call_tool("memory_context", {"task": "install packages with pnpm", "project": "demo"})
        mid = got["remember"]["actions"][0]["id"]
        got["memory_res"] = await c.read_resource(f"agentmem://memory/{mid}")
        got["deprecate"] = await call(c, "memory_deprecate", {"memory_id": mid, "reason": "we moved to bun"})
        got["archive"] = await call(c, "memory_archive", {"session_id": src})
        got["whoami"] = await call(c, "memory_whoami", {"conversation_id": "never-registered"})
        got["index_res"] = await c.read_resource("agentmem://index")
        got["session_res"] = await c.read_resource(f"agentmem://session/{sid}")
        got["templates"] = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        got["prompts"] = [p.name for p in (await c.list_prompts()).prompts]
        got["prompt"] = await c.get_prompt("memory-start", {"task": "install packages"})
        got["sid"], got["src"] = sid, src
        return got

    g = drive(vault, scenario)
    assert g["server"] == "agentmem"
    tools = g["tools"]
    assert set(tools) == TOOLS
    for name, t in tools.items():
        a = t.annotations
        assert a is not None and a.read_only_hint is (name in READ_ONLY), name
        if name not in READ_ONLY:
            assert a.destructive_hint is (name in DESTRUCTIVE), name
        assert len(t.description or "") > 60 and t.title, name  # written for a model: when to call it, what it changes
        assert t.output_schema and t.output_schema["type"] == "object", name
    for name in (
        "memory_whoami",
        "memory_register",
        "memory_update",
        "memory_continue",
        "memory_release",
        "memory_archive",
        "memory_show",
    ):
        assert tools[name].output_schema["required"] == ["session_id"], name
    assert set(tools["memory_update"].input_schema["properties"]) == {
        "session_id",
        "snapshot",
        "topic",
        "summary",
        "keywords",
        "dry_run",
    }
    assert tools["memory_update"].input_schema["required"] == ["session_id"]
    assert set(tools["memory_archive"].input_schema["properties"]) == {"session_id", "dry_run", "force"}
    assert {"text", "project"} <= set(tools["memory_remember"].input_schema["properties"])
    assert {"task", "limit", "budget", "project"} <= set(tools["memory_context"].input_schema["properties"])

    sid, src = g["sid"], g["src"]
    assert g["update"]["session_id"] == sid and g["update"]["row_after"]["keywords"] == "mcp, tools"
    assert g["continue"]["session_id"] == sid and g["continue"]["source"] == src
    assert "resources too" in g["show"]["snapshot"] and "tools call one library function each" in g["show"]["snapshot"]
    assert [r["session_id"] for r in g["list"]["rows"]] == [sid, src] or {
        r["session_id"] for r in g["list"]["rows"]
    } == {sid, src}
    assert g["find"]["hits"][0]["session_id"] == sid
    assert g["release"]["session_id"] == sid and g["release"]["row_changed"] is True
    assert g["organize"]["dry_run"] is True and g["organize"]["deleted"] == []
    assert g["archive_dry"]["dry_run"] is True and g["archive_dry"]["session_id"] == src
    assert g["remember"]["outcome"] == "create" and g["remember_again"]["outcome"] == "ignore"
    assert "pnpm" in g["search"]["hits"][0]["title"]
    ctx = g["context"]
    assert (
        not ctx.is_error and "pnpm" in ctx.content[0].text and ctx.structured_content["markdown"] == ctx.content[0].text
    )
    assert "pnpm" in g["memory_res"].contents[0].text
    assert g["deprecate"]["status"] == "deprecated"
    assert g["archive"]["action"] == "archived" and g["archive"]["session_id"] == src
    assert g["whoami"]["error"] and g["whoami"]["error"]["code"] == "session_not_found"
    assert sid in g["index_res"].contents[0].text and src not in g["index_res"].contents[0].text
    assert "resources too" in g["session_res"].contents[0].text
    assert set(g["templates"]) == {"agentmem://session/{session_id}", "agentmem://memory/{memory_id}"}
    assert g["prompts"] == ["memory-start"]
    assert "memory_register" in g["prompt"].messages[0].content.text

    # The state through the library, not only the answers.
    rows = board(vault)
    assert set(rows) == {sid} and rows[sid].keywords == "mcp, tools"
    assert (vault.archive_path(src) / "index.md").is_file()


def test_whoami_and_the_callers_project(vault: Vault, tmp_path: Path) -> None:
    from agentmem_vault.longterm.remember import remember
    from agentmem_vault.ops.conversations import record_pair
    from agentmem_vault.board.register import register_idle

    sid = register_idle(vault, "cursor-main-agent").session_id
    record_pair(vault, "conv-一", sid, agent="cursor")
    assert remember(vault, "Always run pnpm install with --frozen-lockfile in CI.", project="shop").outcome == "create"
    assert (
        remember(vault, "Always run pnpm dedupe before a release branch is cut.", project="billing").outcome == "create"
    )

    async def scenario(c: Client) -> dict:
        return {
            "whoami": await call(c, "memory_whoami", {"conversation_id": "conv-一"}),
            "context": await call(c, "memory_context", {"task": "pnpm in CI and releases"}),
            "other": await call(c, "memory_context", {"task": "pnpm in CI and releases", "project": "billing"}),
            # No session yet: continuing registers one (with the snapshot given) and returns its ID.
            "continue": await call(
                c, "memory_continue", {"source_id": sid, "snapshot": "## Current Context\nPicking up the pnpm work.\n"}
            ),
        }

    # Claude Code starts servers with CLAUDE_PROJECT_DIR: recall defaults to that project.
    g = drive(vault, scenario, env={"CLAUDE_PROJECT_DIR": str(tmp_path / "code" / "shop")})
    assert g["whoami"] == {
        "error": False,
        "session_id": sid,
        "conversation_id": "conv-一",
        "source": "conversation_id",
        "on_board": True,
    }
    assert "frozen-lockfile" in g["context"]["markdown"] and "dedupe" not in g["context"]["markdown"]
    assert "dedupe" in g["other"]["markdown"] and "frozen-lockfile" not in g["other"]["markdown"]
    new = g["continue"]["session_id"]
    assert g["continue"]["registered"] == new != sid and g["continue"]["source"] == sid
    snap = vault.session_path(new).read_text(encoding="utf-8")
    assert "Picking up the pnpm work." in snap and sid in snap.split("## Continues From", 1)[1]
    assert board(vault)[sid].referenced_by == new


def _tree(root: Path, skip: Path) -> set[Path]:
    return {p for p in root.rglob("*") if skip not in p.parents and p != skip}


def test_bad_input_gives_error_results_and_the_server_survives(vault: Vault, tmp_path: Path) -> None:
    vault.config_path.write_text("lock_timeout: 0.5\n", encoding="utf-8")
    before_outside = _tree(tmp_path, vault.root)
    index_before = vault.index_path.read_bytes()

    async def scenario(c: Client) -> dict:
        got: dict[str, Any] = {}
        for n, (tool, args) in enumerate(
            [
                ("memory_show", {"session_id": "2026-01-01-0000-nobody"}),
                ("memory_update", {"session_id": "2026-01-01-0000-nobody", "snapshot": SNAP}),
                ("memory_update", {"session_id": "../../escape", "snapshot": SNAP}),
                ("memory_archive", {"session_id": "../escape"}),
                ("memory_continue", {"source_id": "..", "session_id": "2026-01-01-0000-nobody"}),
                ("memory_release", {"source_id": "a/b", "session_id": "2026-01-01-0000-nobody"}),
                ("memory_register", {"snapshot": ""}),
                ("memory_register", {"snapshot": "   \n"}),
                ("memory_register", {"snapshot": "## Current Context\n" + "x" * 1_200_000}),
                ("memory_deprecate", {"memory_id": "../../etc/passwd", "reason": "r"}),
                ("memory_remember", {"text": ""}),
                ("memory_search", {"query": "  "}),
                ("memory_find", {"query": ""}),
            ]
        ):
            got[f"{n}:{tool}"] = await call(c, tool, args)
        # Arguments that fail the input schema are tool errors too (the SDK's validation).
        bad_type = await c.call_tool("memory_list", {"status": "closed"})
        got["schema"] = bad_type.is_error
        for uri in (
            "agentmem://session/..%2F..%2Fescape",
            "agentmem://memory/nothing-here",
            "agentmem://session/2026-01-01-0000-nobody",
        ):
            try:
                await c.read_resource(uri)
                got[uri] = "read"
            except MCPError as exc:  # the protocol error the server answered with
                got[uri] = str(exc)
        # A locked vault: another process holds the index lock.
        with exclusive_lock(vault.lock_path("index"), 10):
            got["locked"] = await call(c, "memory_register", {"topic": "while locked"})
        got["after"] = await call(c, "memory_register", {"topic": "after the lock"})
        # The recall index was brought up to date in the background at start (no recall call
        # was made above): the first memory_context of a session does not pay for it.
        from agentmem_vault.recall.location import db_path

        with anyio.fail_after(120):
            while not db_path(vault).is_file():
                await anyio.sleep(0.1)
        return got

    g = drive(vault, scenario)
    codes = {k: v["error"]["code"] for k, v in g.items() if isinstance(v, dict) and v.get("error")}
    assert codes["0:memory_show"] == "session_not_found"
    assert codes["1:memory_update"] == "session_not_found"
    assert codes["2:memory_update"] == codes["3:memory_archive"] == codes["4:memory_continue"] == "invalid_session_id"
    assert codes["5:memory_release"] == "invalid_session_id"
    # a blank snapshot is no content: the fallback registration, as {} and the CLI's (test_procedure_small)
    assert "6:memory_register" not in codes and "7:memory_register" not in codes
    assert codes["8:memory_register"] == "snapshot_malformed"
    assert "limit" in g["8:memory_register"]["error"]["message"]
    assert codes["9:memory_deprecate"] == "memory_not_found"
    assert codes["10:memory_remember"] == codes["11:memory_search"] == codes["12:memory_find"] == "usage"
    assert g["schema"] is True
    assert all(v != "read" for k, v in g.items() if k.startswith("agentmem://"))
    assert "[memory_not_found]" in g["agentmem://memory/nothing-here"]
    assert "[session_not_found]" in g["agentmem://session/2026-01-01-0000-nobody"]
    assert codes["locked"] == "lock_timeout"
    assert not g["after"]["error"]  # the same server process answers after every error
    rows = board(vault)
    assert [r.topic for r in rows.values()] == ["未設定", "未設定", "after the lock"]
    assert vault.index_path.read_bytes() != index_before
    # Nothing was written outside the vault (the lock lives in the cache dir outside tmp_path).
    assert _tree(tmp_path, vault.root) == before_outside


def test_two_server_processes_writing_one_vault_lose_nothing(vault: Vault) -> None:
    """Two clients, each with its own server process, and several calls in flight per client
    (the server runs them on worker threads): every registration, merge and memory survives."""
    n = 6
    results: dict[str, list[dict]] = {"a": [], "b": []}
    registered: dict[str, list[str]] = {"a": [], "b": []}
    a_done = anyio.Event()

    async def worker(name: str) -> None:
        async with Client(
            server_params(vault, "--agent", f"{name}-agent"), mode="legacy", read_timeout_seconds=300
        ) as c:

            async def register(i: int) -> None:
                r = await call(
                    c, "memory_register", {"topic": f"{name} {i}", "snapshot": f"## Decisions\n- {name} decision {i}\n"}
                )
                results[name].append(r)
                registered[name].append(r.get("session_id", ""))

            async def update(shared: str, i: int) -> None:
                results[name].append(
                    await call(
                        c, "memory_update", {"session_id": shared, "snapshot": f"## Next Actions\n- {name} step {i}\n"}
                    )
                )

            async def remember(i: int) -> None:
                port = 5000 + i + (100 if name == "b" else 0)
                results[name].append(
                    await call(
                        c, "memory_remember", {"text": f"Remember: the {name} service {i} listens on port {port}."}
                    )
                )

            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(register, i)
            if name == "a":
                a_done.set()
            await a_done.wait()
            shared = min(registered["a"])  # both servers merge into the same session at the same time
            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(update, shared, i)
                for i in range(3):
                    tg.start_soon(remember, i)

    async def main() -> None:
        with anyio.fail_after(900):
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker, "a")
                tg.start_soon(worker, "b")

    anyio.run(main)
    errors = [r for rs in results.values() for r in rs if r["error"]]
    assert not errors, errors
    all_ids = registered["a"] + registered["b"]
    assert len(set(all_ids)) == 2 * n
    rows = board(vault)
    assert set(all_ids) <= set(rows)
    shared = min(registered["a"])
    text = vault.session_path(shared).read_text(encoding="utf-8")
    for name in "ab":
        for i in range(n):
            assert f"{name} step {i}" in text
    assert "\n- a decision " in text  # its own registration snapshot is still there
    from agentmem_vault.longterm.notes import load_notes

    contents = " ".join(nt.content for nt in load_notes(vault))
    for port in (5000, 5001, 5002, 5100, 5101, 5102):
        assert str(port) in contents


def test_missing_extra_is_one_clear_line(tmp_path: Path) -> None:
    # A stand-in `mcp` package without MCPServer shadows the SDK for this process only.
    fake = tmp_path / "site"
    (fake / "mcp").mkdir(parents=True)
    (fake / "mcp" / "__init__.py").write_text("", encoding="utf-8")
    from conftest import run_cli

    r = run_cli("mcp", "--vault", str(tmp_path), env={"PYTHONPATH": str(fake)}, process=True)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        "error: the MCP server needs the optional extra: pip install 'agentmem-vault[mcp]' (the official `mcp` SDK, version 2 or later)"
    ]
    assert "Traceback" not in r.stderr


def test_package_name_does_not_shadow_the_sdk() -> None:
    import mcp

    import agentmem_vault.mcp.server as srv

    assert Path(mcp.__file__).parent.name == "mcp" and "agentmem_vault" not in mcp.__file__
    assert srv.MCPServer.__module__.startswith("mcp.server")


@pytest.mark.parametrize("name", ["agent-memory.mdc", "agents-snippet.md", "mcp-instructions.md"])
def test_instruction_texts_name_only_tools_that_exist(name: str) -> None:
    import re

    from agentmem_vault.integrations.rules import template_text

    named = set(re.findall(r"`(memory_[a-z]+)`", template_text(name)))
    assert named <= TOOLS
    if name != "mcp-instructions.md":
        assert named == TOOLS  # every tool is mentioned


def test_a_missing_vault_is_an_error_result_not_a_dead_server(tmp_path: Path) -> None:
    """In process (the SDK's in-memory transport): the server starts without a vault and says so
    on every call; it serves once the vault exists."""
    from agentmem_vault.mcp.server import build_server
    from agentmem_vault.ops.board import init_vault

    root = tmp_path / "not yet"
    server = build_server(str(root))
    got: dict[str, Any] = {}

    async def main() -> None:
        async with Client(server) as c:
            got["before"] = await call(c, "memory_list")
            root.mkdir()
            init_vault(Vault(root))
            got["after"] = await call(c, "memory_list")
            got["prompt"] = await c.get_prompt("memory-start", {"task": "anything"})

    anyio.run(main)
    assert got["before"]["error"]["code"] == "vault_not_found"
    assert got["after"] == {"error": False, "rows": [], "malformed": []}
    assert "memory_register" in got["prompt"].messages[0].content.text
