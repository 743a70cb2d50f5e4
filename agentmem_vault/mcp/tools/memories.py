"""MCP tools of long-term memory: context for a task, search, remember, deprecate (docs/mcp.md;
the rules are in recall/ and longterm/)."""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from agentmem_vault.vault import Vault
from agentmem_vault.mcp.params import READ, ContextOut, DeprecateOut, DryRun, HitsOut, Project, RememberOut, writes
from agentmem_vault.mcp.registry import Front, tool


AllProjects = Annotated[
    bool, Field(description="True: every project's memories (default: this chat's project and the global ones).")
]


@tool(title="Memory context for a task", annotations=READ)
async def memory_context(
    front: Front,
    ctx: Context,
    task: Annotated[str, Field(description="What you are about to do, in a sentence or two.")],
    limit: Annotated[int, Field(ge=1, le=100, description="Most memories to list (rules not counted).")] = 8,
    budget: Annotated[int, Field(ge=200, le=100_000, description="Most characters of Markdown to return.")] = 4000,
    project: Project = None,
    all_projects: AllProjects = False,
    session_id: Annotated[
        str | None,
        Field(max_length=200, description="Your Memory Session ID: what this call gives you is recorded under it."),
    ] = None,
) -> Annotated[CallToolResult, ContextOut]:
    """The long-term memories and earlier sessions relevant to a task, as Markdown (the same as
    `agentmem context`): rules first, then the strongest memories, then sessions you may
    continue. Scoped to this chat's project and the global memories. Call it at the start of a
    task. Read-only."""
    from agentmem_vault.recall import audit
    from agentmem_vault.recall.context import build_context

    scope_of = await front.scope(ctx, project, all_projects)

    def run(v: Vault) -> dict:
        scope = scope_of(v)
        res = build_context(v, task, limit=limit, budget=budget, project=scope.names, scope=scope.to_dict())
        audit.record_context(v, res, "memory_context", session_id=session_id, agent="mcp", project=scope.project)
        return res.to_dict()

    return await anyio.to_thread.run_sync(lambda: front.call(run, lambda d: d["markdown"]))


@tool(title="Search long-term memories", annotations=READ)
async def memory_search(
    front: Front,
    ctx: Context,
    query: Annotated[str, Field(description="Words to rank long-term memories by (keywords, Chinese or English).")],
    limit: Annotated[int, Field(ge=1, le=200, description="Most memories to return.")] = 10,
    project: Project = None,
    include_deprecated: Annotated[bool, Field(description="Also return deprecated memories.")] = False,
    all_projects: AllProjects = False,
) -> Annotated[CallToolResult, HitsOut]:
    """Search long-term memories (keywords + recency + importance), with scores and IDs; this
    chat's project and the global memories. Read-only."""
    from agentmem_vault.errors import UsageError
    from agentmem_vault.recall.rank import search

    scope_of = await front.scope(ctx, project, all_projects)

    def run(v: Vault) -> dict:
        if not query.strip():
            raise UsageError("query is empty")
        scope = scope_of(v)
        hits = search(v, query, limit=limit, project=scope.names, include_deprecated=include_deprecated)
        return {"hits": [h.to_dict() for h in hits], "scope": scope.to_dict()}

    return await anyio.to_thread.run_sync(lambda: front.call(run))


@tool(title="Remember this (long-term)", annotations=writes(destructive=False, idempotent=True, open_world=True))
async def memory_remember(
    front: Front,
    ctx: Context,
    text: Annotated[
        str, Field(description="What to remember, in the user's words: one rule, preference, decision or fact.")
    ],
    project: Project = None,
    session_id: Annotated[str | None, Field(description="Your Session ID, recorded as the memory's source.")] = None,
    dry_run: DryRun = False,
) -> Annotated[CallToolResult, RememberOut]:
    """Keep something as a long-term memory, only when the user explicitly asks you to
    remember it. It passes the same assessment, filters, de-duplication and curation as
    extraction: outcome create (new note), update (an existing note extended, old text kept)
    or ignore (already known or too vague; reasons given). The memory belongs to this chat's
    project unless its words say it holds everywhere. With an Anthropic API key configured the
    text is sent to that model."""
    from agentmem_vault.longterm.remember import remember

    scope_of = await front.scope(ctx)

    def run(v: Vault) -> dict:
        name = project or scope_of(v).project
        return remember(v, text, project=name, session_id=session_id, dry_run=dry_run).to_dict()

    return await anyio.to_thread.run_sync(lambda: front.call(run, dry_run=dry_run))


@tool(title="Deprecate a long-term memory", annotations=writes(destructive=True, idempotent=True))
def memory_deprecate(
    front: Front,
    memory_id: Annotated[str, Field(description="The memory's ID (lt-...), title or file name.")],
    reason: Annotated[str, Field(description="Why it no longer holds.")],
    dry_run: DryRun = False,
) -> Annotated[CallToolResult, DeprecateOut]:
    """Mark a long-term memory deprecated (it no longer holds); the note is kept with the
    reason and is left out of context and search. Only when the user says it is wrong or
    outdated."""
    from agentmem_vault.longterm.curate import deprecate_memory
    from agentmem_vault.longterm.memories import note_row

    def run(v: Vault) -> dict:  # what `agentmem memories deprecate --json` prints
        n = deprecate_memory(v, memory_id, reason, dry_run=dry_run)
        return {**note_row(n), "deprecated_reason": n.deprecated_reason, "dry_run": dry_run}

    return front.call(run, dry_run=dry_run)
