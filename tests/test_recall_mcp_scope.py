"""The MCP server answers for the chat's project only (docs/mcp.md, "Which project"): the server
installed the way `setup` installs it for Cursor, started by the SDK's real client, with the
client's roots (`list_roots_callback`), with the workspace folder Cursor fills in, and through
the working-folder fallback; unknown projects and invalid arguments are errors with codes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.recall.index import reindex
from recall_helpers import write_filler_notes, write_note

pytest.importorskip("mcp.server.mcpserver")
from mcp import Client, StdioServerParameters, types  # noqa: E402

TASK = "how should the billing webhook retries be configured"
NOTES = {
    "shop": {
        "id": "lt-a00001",
        "title": "Billing webhook retries in shop",
        "keywords": ["billing", "webhook", "retries"],
        "content": "Shop retries a billing webhook three times with exponential backoff.",
        "project": "shop",
    },
    "legacy": {
        "id": "lt-b00002",
        "title": "Billing webhook retries in legacy",
        "keywords": ["billing", "webhook", "retries"],
        "content": "Legacy never retries a billing webhook; it is fire-and-forget.",
        "project": "legacy",
    },
    "global": {
        "id": "lt-c00003",
        "title": "Billing webhook retries are logged",
        "keywords": ["billing", "webhook", "retries"],
        "content": "Every billing webhook retry is logged with its attempt number, in every project.",
    },
}


@pytest.fixture
def world(vault: Vault, tmp_path: Path) -> dict[str, Any]:
    for n in NOTES.values():
        write_note(vault.longterm_dir, n)
    write_filler_notes(vault.longterm_dir)
    reindex(vault)
    home = tmp_path / "home"
    shop, legacy = tmp_path / "code" / "shop", tmp_path / "code" / "legacy"
    for d in (home, shop, legacy):
        d.mkdir(parents=True)
    from agentmem_vault.integrations.mcp_install import apply_mcp_install, plan_mcp_install

    apply_mcp_install(plan_mcp_install("cursor", vault=vault.root, home=home))  # what `setup` writes for Cursor
    entry = json.loads((home / ".cursor" / "mcp.json").read_text(encoding="utf-8"))["mcpServers"]["agentmem"]
    return {"vault": vault, "entry": entry, "shop": shop, "legacy": legacy, "home": home}


def _run(
    world: dict,
    calls: list[tuple[str, dict]],
    *,
    roots: list[Path] | None = None,
    cwd: Path,
    workspace: Path | None = None,
) -> list[Any]:
    """Start the installed server as Cursor would (``${workspaceFolder}`` replaced by ``workspace``,
    or left as it is when Cursor has no folder to put there) and make the calls."""
    entry = world["entry"]
    args = [str(workspace) if a == "${workspaceFolder}" and workspace else a for a in entry["args"]]
    env = {k: v for k, v in os.environ.items() if k.startswith("AGENTMEM_")}
    env["HOME"] = str(world["home"])
    params = StdioServerParameters(command=entry["command"], args=args, env=env, cwd=str(cwd))

    async def list_roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=p.as_uri(), name=p.name) for p in roots or []])

    out: list[Any] = []

    async def main() -> None:
        kw = {"list_roots_callback": list_roots} if roots is not None else {}
        async with Client(params, mode="legacy", read_timeout_seconds=120, **kw) as c:
            for name, a in calls:
                out.append(await c.call_tool(name, a))

    anyio.run(main)
    return out


def _ids(result: Any) -> set[str]:
    assert not result.is_error, result.content
    return {i for i in ("lt-a00001", "lt-b00002", "lt-c00003") if i in json.dumps(result.structured_content)}


def test_the_installed_cursor_server_answers_for_the_clients_root_only(world: dict) -> None:
    assert "${workspaceFolder}" in world["entry"]["args"] and "--workspace" in world["entry"]["args"]
    ctx, search = _run(
        world,
        [("memory_context", {"task": TASK}), ("memory_search", {"query": "billing webhook retries"})],
        roots=[world["shop"]],
        cwd=world["legacy"],  # the working folder is another project: the roots come first
    )
    assert _ids(ctx) == {"lt-a00001", "lt-c00003"}
    assert _ids(search) == {"lt-a00001", "lt-c00003"}
    assert ctx.structured_content["scope"]["project"] == "shop"
    assert ctx.structured_content["scope"]["project_from"] == "roots"


def test_the_workspace_folder_cursor_fills_in(world: dict) -> None:
    (ctx,) = _run(world, [("memory_context", {"task": TASK})], cwd=world["home"], workspace=world["legacy"])
    assert _ids(ctx) == {"lt-b00002", "lt-c00003"}
    assert ctx.structured_content["scope"]["project_from"] == "workspace"


def test_the_working_folder_fallback(world: dict) -> None:
    # No roots, and a ${workspaceFolder} the client left as it is: the server's working folder decides.
    (ctx,) = _run(world, [("memory_context", {"task": TASK})], roots=[], cwd=world["shop"])
    assert _ids(ctx) == {"lt-a00001", "lt-c00003"}
    assert ctx.structured_content["scope"]["project_from"] == "cwd"


def test_asked_for_another_project_or_every_project(world: dict) -> None:
    other, every, remember = _run(
        world,
        [
            ("memory_context", {"task": TASK, "project": "legacy"}),
            ("memory_context", {"task": TASK, "all_projects": True}),
            ("memory_remember", {"text": "Always sign webhook payloads with HMAC-SHA256 in this repo."}),
        ],
        roots=[world["shop"]],
        cwd=world["shop"],
    )
    assert _ids(other) == {"lt-b00002", "lt-c00003"}
    assert _ids(every) == {"lt-a00001", "lt-b00002", "lt-c00003"}
    assert remember.structured_content["outcome"] == "create"
    from agentmem_vault.longterm.notes import load_notes

    (new,) = [n for n in load_notes(world["vault"]) if "HMAC" in n.content]
    assert new.project == "shop"  # a memory remembered in a chat belongs to that chat's project


def test_unknown_project_and_invalid_arguments_are_coded_errors(world: dict, cli) -> None:
    unknown, bad_budget, no_task, long_id, both = _run(
        world,
        [
            ("memory_context", {"task": TASK, "project": "nope"}),
            ("memory_context", {"task": TASK, "budget": 5}),
            ("memory_search", {}),
            ("memory_context", {"task": TASK, "session_id": "x" * 300}),  # never a 300-character audit key
            ("memory_context", {"task": TASK, "project": "shop", "all_projects": True}),
        ],
        roots=[world["shop"]],
        cwd=world["shop"],
    )
    as_cli = json.loads(cli("context", TASK, "--project", "nope", "--json", vault=world["vault"]).stdout)["error"]
    assert unknown.is_error and unknown.structured_content["error"] == as_cli
    assert as_cli["code"] == "unknown_project" and "known projects:" in as_cli["message"]
    assert unknown.content[0].text == f"error [unknown_project]: {as_cli['message']}"
    for res, field in ((bad_budget, "budget"), (no_task, "query"), (long_id, "session_id")):
        err = res.structured_content["error"]
        assert res.is_error and err["code"] == "invalid_arguments" and field in err["details"]["fields"], err
        assert res.content[0].text.startswith("error [invalid_arguments]: ")
    assert both.is_error and both.structured_content["error"]["code"] == "usage"


def test_memory_context_is_recorded_for_the_session(world: dict, cli) -> None:
    (ctx,) = _run(
        world,
        [("memory_context", {"task": TASK, "session_id": "2026-06-01-0930-cursor-main-agent"})],
        roots=[world["shop"]],
        cwd=world["shop"],
    )
    got = json.loads(cli("injected", "2026-06-01-0930-cursor-main-agent", "--json", vault=world["vault"]).stdout)
    (entry,) = got["entries"]
    assert entry["source"] == "memory_context" and entry["project"] == "shop"
    assert set(got["note_ids"]) == _ids(ctx) and entry["chars"] == len(ctx.structured_content["markdown"])


def test_root_uris_become_folders_and_a_project_entry_pins_its_project(world: dict, tmp_path: Path) -> None:
    from agentmem_vault.integrations.mcp_install import server_entry
    from agentmem_vault.mcp.scope import root_folder

    assert root_folder("file:///home/a/my%20app") == "/home/a/my app"
    assert root_folder("file:///C:/Users/a/%E6%88%91%E7%9A%84") == "C:/Users/a/我的"
    assert root_folder("file://server/share/x") == "//server/share/x"
    assert root_folder("https://example.com/x") is None
    pinned = server_entry("cursor", vault=world["vault"].root, project="shop")
    assert pinned["args"][-2:] == ["--project", "shop"] and "--workspace" not in pinned["args"]
    assert "--workspace" not in server_entry("claude", vault=world["vault"].root)["args"]
