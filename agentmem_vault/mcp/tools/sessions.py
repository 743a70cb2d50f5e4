"""MCP tools of this chat's own session: find it, register it, update it, continue from an earlier
one, release a reference (docs/mcp.md; the rules are in ops/sessions.py and ops/conversations.py)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from agentmem_vault.vault import Vault
from agentmem_vault.mcp.params import READ, DryRun, SessionId, SessionOut, Snapshot, Summary, Topic, Keywords, writes
from agentmem_vault.mcp.registry import Front, tool


@tool(title="Find this chat's Memory Session ID", annotations=READ)
def memory_whoami(
    front: Front,
    conversation_id: Annotated[
        str | None,
        Field(
            description="This chat's conversation / session ID as the agent knows it (Cursor conversation_id, Claude Code session_id)."
        ),
    ] = None,
) -> Annotated[CallToolResult, SessionOut]:
    """Find this chat's Memory Session ID (registered by the agent's sessionStart hook).

    Call it when you do not know your Session ID. Pass your conversation ID; without one the
    server's environment (AGENTMEM_SESSION_ID) is used. Fails with session_not_found when the
    chat was never registered: then call memory_register. Changes nothing."""
    from agentmem_vault.ops.conversations import whoami

    return front.call(lambda v: whoami(v, conversation_id))


@tool(title="Register this chat (manual)", annotations=writes(destructive=False, idempotent=False))
def memory_register(
    front: Front,
    topic: Topic = None,
    summary: Summary = None,
    keywords: Keywords = None,
    snapshot: Snapshot = None,
    dry_run: DryRun = False,
) -> Annotated[CallToolResult, SessionOut]:
    """Register this chat by hand (註冊 memory session): a new active row on the board plus a
    session snapshot. Call it only when memory_whoami finds no Session ID. Returns the new
    session_id; use it for every later call of this chat. Never reuse another chat's ID."""
    from agentmem_vault.ops.sessions import register_manual, registration_result

    def run(v: Vault) -> dict:
        fields: dict[str, Any] = {"topic": topic, "summary": summary, "keywords": keywords, "snapshot_text": snapshot}
        return registration_result(v, register_manual(v, front.agent(v), **fields, **front.where()))

    return front.call(run, dry_run=dry_run)


@tool(title="Update this session (snapshot + row)", annotations=writes(destructive=False, idempotent=True))
def memory_update(
    front: Front,
    session_id: SessionId,
    snapshot: Snapshot = None,
    topic: Topic = None,
    summary: Summary = None,
    keywords: Keywords = None,
    dry_run: DryRun = False,
) -> Annotated[CallToolResult, SessionOut]:
    """Session status update (狀態更新 / 整理這個 session): merge your snapshot into the session's
    snapshot file (creating it if needed) and update only this session's row (status active,
    Updated At now). Old decisions, files, questions and actions are never dropped. Call it
    when the user asks to update the session or at the end of a meaningful piece of work."""
    from agentmem_vault.ops.sessions import update_session

    fields: dict[str, Any] = {"topic": topic, "summary": summary, "keywords": keywords, "snapshot_text": snapshot}
    return front.call(lambda v: update_session(v, session_id, **fields, **front.where()), dry_run=dry_run)


@tool(title="Continue from an earlier session", annotations=writes(destructive=False, idempotent=False))
def memory_continue(
    front: Front,
    source_id: Annotated[str, Field(description="The Session ID to continue from (the earlier session).")],
    session_id: Annotated[
        str | None,
        Field(
            description="Your (current) Session ID. Omit only when this chat has none: it is then registered first and the new ID returned."
        ),
    ] = None,
    snapshot: Snapshot = None,
    dry_run: DryRun = False,
) -> Annotated[CallToolResult, SessionOut]:
    """Continue from an earlier session (接續 / 引用 / 沿用 memory): your snapshot lists the source in
    Continues From and the source's row lists you in Referenced By. Records the link both ways;
    to only read a session use memory_show. Returns session_id (yours)."""
    from agentmem_vault.ops.sessions import continue_session

    return front.call(
        lambda v: continue_session(v, source_id, session_id=session_id, agent=front.agent(v), snapshot_text=snapshot),
        dry_run=dry_run,
    )


@tool(title="Release a session reference", annotations=writes(destructive=True, idempotent=True))
def memory_release(
    front: Front,
    source_id: Annotated[str, Field(description="The Session ID you continued from and want to let go.")],
    session_id: Annotated[str, Field(description="Your (current) Session ID.")],
    dry_run: DryRun = False,
) -> Annotated[CallToolResult, SessionOut]:
    """Release a reference (解除引用 memory): remove your session from the source's Referenced By
    and the source from your Continues From. Needed before the source can be archived."""
    from agentmem_vault.ops.sessions import release_reference

    return front.call(lambda v: release_reference(v, source_id, session_id=session_id), dry_run=dry_run)
