"""MCP resources (the board, a snapshot, a long-term note, read by URI) and the memory-start prompt."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, SessionNotFound
from agentmem_vault.integrations.rules import template_text, with_command
from agentmem_vault.mcp.registry import Front, prompt, resource


@resource("agentmem://index", name="board", title="Working board (memory/index.md)", mime_type="text/markdown")
def index_resource(front: Front) -> str:
    """The working board: one Markdown table row per Memory Session."""
    from agentmem_vault.fs import read_text

    return front.read(lambda v: read_text(v.index_path) or "")


@resource("agentmem://session/{session_id}", name="session", title="Session snapshot", mime_type="text/markdown")
def session_resource(front: Front, session_id: str) -> str:
    """A session's snapshot (memory/sessions/<ID>.md, or the archived copy)."""
    from agentmem_vault.ops.board import show_session

    def run(v: Vault) -> str:
        view = show_session(v, session_id)
        if view.snapshot is None:
            raise SessionNotFound(f"session {session_id} has no snapshot yet (idle row)")
        return view.snapshot

    return front.read(run)


@resource("agentmem://memory/{memory_id}", name="memory", title="Long-term memory note", mime_type="text/markdown")
def memory_resource(front: Front, memory_id: str) -> str:
    """A long-term memory note (frontmatter + content), by ID, title or file name."""
    from agentmem_vault.longterm.memories import get_memory, memory_markdown

    return front.read(lambda v: memory_markdown(get_memory(v, memory_id)))


# -- prompt -------------------------------------------------------------------------------------


@prompt(name="memory-start", title="Start a task with agent memory")
async def memory_start(front: Front, ctx: Context, task: str, project: str | None = None) -> str:
    """The memory rules and the memories and sessions relevant to a task (this chat's project and
    the global ones), for the start of a chat."""
    import anyio

    from agentmem_vault.recall.context import build_context

    rules = with_command(template_text("mcp-instructions.md")).rstrip()
    scope_of = await front.scope(ctx, project)

    def run() -> str:
        v = front.vault()
        return build_context(v, task, project=scope_of(v).names).markdown.rstrip()

    try:
        md = await anyio.to_thread.run_sync(run)
    except AgentmemError as exc:
        md = f"(memory unavailable: {exc.message})"
    return f"{rules}\n\n# Relevant memory for: {task}\n\n{md}\n"
