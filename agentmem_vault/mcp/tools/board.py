"""MCP tools over the whole board: organize, archive, list, find, show (docs/mcp.md; the rules
are in ops/board.py, ops/lifecycle.py and ops/archive.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import Field

from agentmem_vault.vault import Vault
from agentmem_vault.mcp.params import READ, DryRun, HitsOut, OrganizeOut, RowsOut, SessionId, SessionOut, writes
from agentmem_vault.mcp.registry import Front, tool


@tool(title="Organize the board", annotations=writes(destructive=True, idempotent=True))
def memory_organize(
    front: Front,
    dry_run: DryRun = False,
    stale_days: Annotated[
        int | None,
        Field(
            ge=0,
            description="Mark active sessions stale after this many days without update (default: vault config, 14).",
        ),
    ] = None,
) -> Annotated[CallToolResult, OrganizeOut]:
    """Organize the board (整理 / 清理 memory): delete idle placeholder rows (except referenced
    ones), mark long-unchanged active sessions stale. Never archives. Only when the user asks;
    preview with dry_run=true. Returns the lists deleted / marked_stale / kept_active /
    protected / inconsistent: report them to the user."""
    from agentmem_vault.ops.lifecycle import organize

    return front.call(
        lambda v: {**organize(v, stale_days=stale_days, dry_run=dry_run).to_dict(), "dry_run": dry_run}, dry_run=dry_run
    )


@tool(title="Archive a session", annotations=writes(destructive=True, idempotent=False))
def memory_archive(
    front: Front,
    session_id: SessionId,
    dry_run: DryRun = False,
    force: Annotated[
        bool,
        Field(
            description="Archive even though other sessions still reference it. Only when the user explicitly says so."
        ),
    ] = False,
) -> Annotated[CallToolResult, SessionOut]:
    """Archive a session (封存 memory session): move its snapshot to memory/archive/<ID>/ and remove
    its row, all or nothing. Refused (code refused) while other sessions reference it: tell
    the user, release those first. Only when the user asks; preview with dry_run=true."""
    from agentmem_vault.ops.archive import archive

    return front.call(lambda v: archive(v, session_id, force=force, dry_run=dry_run).to_dict(), dry_run=dry_run)


@tool(title="List sessions on the board", annotations=READ)
def memory_list(
    front: Front,
    status: Annotated[
        Literal["idle", "active", "stale", "archived"] | None,
        Field(description="Only rows with this status; archived: the archived sessions."),
    ] = None,
) -> Annotated[CallToolResult, RowsOut]:
    """List the sessions on the board (memory/index.md): ID, agent, topic, summary, keywords,
    status, references, times. Read-only."""
    from agentmem_vault.ops.board import list_rows

    def run(v: Vault) -> dict:
        rows, bad = list_rows(v, status)
        return {"rows": [r.to_dict() for r in rows], "malformed": [b.to_dict() for b in bad]}

    return front.call(run)


@tool(title="Find sessions", annotations=READ)
def memory_find(
    front: Front,
    query: Annotated[str, Field(description="Words to look for in Topic / Summary / Keywords (Chinese or English).")],
    limit: Annotated[int, Field(ge=1, le=200, description="Most sessions to return.")] = 20,
    archived: Annotated[bool, Field(description="Also search archived sessions.")] = False,
) -> Annotated[CallToolResult, HitsOut]:
    """Find earlier sessions by topic, summary or keywords, best first (active before idle).
    Use it to pick a session to continue from or show. Read-only."""
    from agentmem_vault.ops.board import find_rows

    return front.call(lambda v: {"hits": [h.to_dict() for h in find_rows(v, query, archived=archived, limit=limit)]})


@tool(title="Show a session", annotations=READ)
def memory_show(front: Front, session_id: SessionId) -> Annotated[CallToolResult, SessionOut]:
    """Show one session: its board row and its snapshot Markdown (also for archived sessions).
    Read-only."""
    from agentmem_vault.ops.board import show_session

    return front.call(lambda v: {"session_id": session_id, **show_session(v, session_id).to_dict()})
