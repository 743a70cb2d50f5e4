"""``agentmem mcp``: a stdio MCP server over the same library as the CLI (see docs/mcp.md).

Thin on purpose: each tool parses its arguments, calls one library function and returns that
function's result as structured content. No rule lives here. Library errors become MCP tool
errors (``isError``) whose structured content is ``{"error": {"code", "message"}}`` with our error
codes, the same object ``--json`` prints; the server keeps serving after any error.

Imports of the SDK are absolute (``from mcp.server...``): they resolve to the installed ``mcp``
distribution, never to this package (``agentmem_vault.mcp``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from agentmem_vault.vault import Vault
from agentmem_vault.config import resolve_agent, resolve_vault, vault_config
from agentmem_vault.errors import AgentmemError, MemoryNotFound, SessionNotFound

log = logging.getLogger("agentmem.mcp")

# Annotations let a client auto-approve reads and ask before destructive calls. None of our tools
# reaches outside the vault, except memory_remember when an Anthropic API key is configured.
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _writes(*, destructive: bool, idempotent: bool, open_world: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=open_world
    )


SessionId = Annotated[str, Field(description="A Memory Session ID, e.g. 2026-05-25-1318-cursor-main-agent.")]
Snapshot = Annotated[
    str | None,
    Field(
        description=(
            "The session snapshot as Markdown in the template (## Current Context, ## Decisions, ## Files / Artifacts, "
            "## Open Questions, ## Next Actions, ## Continues From, ## Superseded / Resolved). It is merged section by "
            "section, never overwriting: send what this chat knows; mark finished items [done] / [resolved] / [superseded] "
            "instead of deleting them."
        )
    ),
]
Topic = Annotated[str | None, Field(description="Short topic of the session (the board's Topic column).")]
Summary = Annotated[str | None, Field(description="One or two factual sentences for the board's Summary column.")]
Keywords = Annotated[str | None, Field(description="Comma-separated keywords for the board, e.g. 'mcp, installer'.")]
Project = Annotated[
    str | None,
    Field(
        description="Project name to scope long-term memories to (notes of other projects are left out; notes without a project always count)."
    ),
]
DryRun = Annotated[bool, Field(description="True: compute and return the plan, write nothing.")]


# Output schemas: the keys a caller can rely on (results carry more; errors are {"error": ...}).
class SessionOut(TypedDict):
    session_id: str


class OrganizeOut(TypedDict):
    deleted: list[str]
    marked_stale: list[str]
    kept_active: list[str]
    protected: list[str]
    inconsistent: list[str]
    dry_run: bool


class RowsOut(TypedDict):
    rows: list[dict[str, Any]]


class HitsOut(TypedDict):
    hits: list[dict[str, Any]]


class ContextOut(TypedDict):
    task: str
    markdown: str


class RememberOut(TypedDict):
    outcome: Literal["create", "update", "ignore"]
    actions: list[dict[str, Any]]


class DeprecateOut(TypedDict):
    id: str
    status: str


def _ok(data: Any, text: str | None = None) -> CallToolResult:
    if hasattr(data, "to_dict"):  # operation results are dataclasses; every front end prints to_dict()
        data = data.to_dict()
    structured = data if isinstance(data, dict) else {"result": data}
    body = text if text is not None else json.dumps(structured, ensure_ascii=False, indent=1, default=str)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=structured)


def error_result(exc: AgentmemError) -> CallToolResult:
    err: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.details:
        err["details"] = exc.details
    return CallToolResult(
        content=[TextContent(type="text", text=f"error [{exc.code}]: {exc.message}")],
        structured_content={"error": err},
        is_error=True,
    )


class _Front:
    """The vault, agent and default project this server was started with; resolved per call so
    that a vault created (or repaired) after the client started the server is picked up."""

    def __init__(self, vault: str | None, agent: str | None, project: str | None) -> None:
        self.vault_arg, self.agent_arg, self.project = vault, agent, project
        if not project and os.environ.get("CLAUDE_PROJECT_DIR"):
            # Claude Code starts servers with the project folder in the environment: recall is
            # scoped to it the way notes extracted from that project's transcripts are.
            from agentmem_vault.longterm.sources import project_of_folder

            self.project = project_of_folder(os.environ["CLAUDE_PROJECT_DIR"]) or None

    def vault(self) -> Vault:
        return resolve_vault(self.vault_arg)

    def agent(self, v: Vault) -> str:
        return resolve_agent(self.agent_arg, vault_config(v))

    def call(self, fn: Callable[[Vault], Any], text: Callable[[Any], str] | None = None) -> CallToolResult:
        try:
            data = fn(self.vault())
        except AgentmemError as exc:
            return error_result(exc)
        except OSError as exc:  # a disk or permission problem the library did not name
            return error_result(
                AgentmemError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), code="os_error")
            )
        except Exception as exc:  # the server must outlive any bug: log it, answer with an error
            log.exception("agentmem tool failed")
            return error_result(
                AgentmemError(
                    f"internal error ({type(exc).__name__}: {exc}); see the server log", code="internal_error"
                )
            )
        return _ok(data, text(data) if text else None)


def build_server(vault: str | None = None, *, agent: str | None = None, project: str | None = None) -> MCPServer:
    """The MCP server for ``vault`` (resolved like the CLI's ``--vault`` when None)."""
    from agentmem_vault.integrations.rules import template_text

    front = _Front(vault, agent, project)
    server: MCPServer = MCPServer(
        name="agentmem",
        title="agentmem: agent memory in an Obsidian vault",
        version=_version(),
        instructions=template_text("mcp-instructions.md"),
        log_level="WARNING",
    )

    # -- working board ------------------------------------------------------------------------------

    @server.tool(title="Find this chat's Memory Session ID", annotations=READ)
    def memory_whoami(
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

    @server.tool(title="Register this chat (manual)", annotations=_writes(destructive=False, idempotent=False))
    def memory_register(
        topic: Topic = None, summary: Summary = None, keywords: Keywords = None, snapshot: Snapshot = None
    ) -> Annotated[CallToolResult, SessionOut]:
        """Register this chat by hand (註冊 memory session): a new active row on the board plus a
        session snapshot. Call it only when memory_whoami finds no Session ID. Returns the new
        session_id; use it for every later call of this chat. Never reuse another chat's ID."""
        from agentmem_vault.ops.sessions import register_manual

        def run(v: Vault) -> dict:
            reg = register_manual(
                v, front.agent(v), topic=topic, summary=summary, keywords=keywords, snapshot_text=snapshot
            )
            return {
                "session_id": reg.session_id,
                "row": reg.row.to_dict(),
                "snapshot_path": str(v.session_path(reg.session_id)),
                "message": reg.message,
            }

        return front.call(run)

    @server.tool(title="Update this session (snapshot + row)", annotations=_writes(destructive=False, idempotent=True))
    def memory_update(
        session_id: SessionId,
        snapshot: Snapshot = None,
        topic: Topic = None,
        summary: Summary = None,
        keywords: Keywords = None,
    ) -> Annotated[CallToolResult, SessionOut]:
        """Session status update (狀態更新 / 整理這個 session): merge your snapshot into the session's
        snapshot file (creating it if needed) and update only this session's row (status active,
        Updated At now). Old decisions, files, questions and actions are never dropped. Call it
        when the user asks to update the session or at the end of a meaningful piece of work."""
        from agentmem_vault.ops.sessions import update_session

        return front.call(
            lambda v: update_session(
                v, session_id, snapshot_text=snapshot, topic=topic, summary=summary, keywords=keywords
            ).to_dict()
        )

    @server.tool(title="Continue from an earlier session", annotations=_writes(destructive=False, idempotent=False))
    def memory_continue(
        source_id: Annotated[str, Field(description="The Session ID to continue from (the earlier session).")],
        session_id: Annotated[
            str | None,
            Field(
                description="Your (current) Session ID. Omit only when this chat has none: it is then registered first and the new ID returned."
            ),
        ] = None,
        snapshot: Snapshot = None,
    ) -> Annotated[CallToolResult, SessionOut]:
        """Continue from an earlier session (接續 / 引用 / 沿用 memory): your snapshot lists the source in
        Continues From and the source's row lists you in Referenced By. Records the link both ways;
        to only read a session use memory_show. Returns session_id (yours)."""
        from agentmem_vault.ops.sessions import continue_session

        return front.call(
            lambda v: continue_session(
                v, source_id, session_id=session_id, agent=front.agent(v), snapshot_text=snapshot
            )
        )

    @server.tool(title="Release a session reference", annotations=_writes(destructive=True, idempotent=True))
    def memory_release(
        source_id: Annotated[str, Field(description="The Session ID you continued from and want to let go.")],
        session_id: Annotated[str, Field(description="Your (current) Session ID.")],
    ) -> Annotated[CallToolResult, SessionOut]:
        """Release a reference (解除引用 memory): remove your session from the source's Referenced By
        and the source from your Continues From. Needed before the source can be archived."""
        from agentmem_vault.ops.sessions import release_reference

        return front.call(lambda v: release_reference(v, source_id, session_id=session_id))

    @server.tool(title="Organize the board", annotations=_writes(destructive=True, idempotent=True))
    def memory_organize(
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
            lambda v: {**organize(v, stale_days=stale_days, dry_run=dry_run).to_dict(), "dry_run": dry_run}
        )

    @server.tool(title="Archive a session", annotations=_writes(destructive=True, idempotent=False))
    def memory_archive(
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

        return front.call(lambda v: archive(v, session_id, force=force, dry_run=dry_run).to_dict())

    @server.tool(title="List sessions on the board", annotations=READ)
    def memory_list(
        status: Annotated[
            Literal["idle", "active", "stale"] | None, Field(description="Only rows with this status.")
        ] = None,
    ) -> Annotated[CallToolResult, RowsOut]:
        """List the sessions on the board (memory/index.md): ID, agent, topic, summary, keywords,
        status, references, times. Read-only."""
        from agentmem_vault.ops.board import list_rows

        def run(v: Vault) -> dict:
            rows, bad = list_rows(v, status)
            return {"rows": [r.to_dict() for r in rows], "malformed": [b.__dict__ for b in bad]}

        return front.call(run)

    @server.tool(title="Find sessions", annotations=READ)
    def memory_find(
        query: Annotated[
            str, Field(description="Words to look for in Topic / Summary / Keywords (Chinese or English).")
        ],
        limit: Annotated[int, Field(ge=1, le=200, description="Most sessions to return.")] = 20,
        archived: Annotated[bool, Field(description="Also search archived sessions.")] = False,
    ) -> Annotated[CallToolResult, HitsOut]:
        """Find earlier sessions by topic, summary or keywords, best first (active before idle).
        Use it to pick a session to continue from or show. Read-only."""
        from agentmem_vault.ops.board import find_rows

        return front.call(
            lambda v: {"hits": [h.to_dict() for h in find_rows(v, query, archived=archived, limit=limit)]}
        )

    @server.tool(title="Show a session", annotations=READ)
    def memory_show(session_id: SessionId) -> Annotated[CallToolResult, SessionOut]:
        """Show one session: its board row and its snapshot Markdown (also for archived sessions).
        Read-only."""
        from agentmem_vault.ops.board import show_session

        return front.call(lambda v: {"session_id": session_id, **show_session(v, session_id).to_dict()})

    # -- long-term memory ---------------------------------------------------------------------------

    @server.tool(title="Memory context for a task", annotations=READ)
    def memory_context(
        task: Annotated[str, Field(description="What you are about to do, in a sentence or two.")],
        limit: Annotated[int, Field(ge=1, le=100, description="Most memories to list (rules not counted).")] = 8,
        budget: Annotated[int, Field(ge=200, le=100_000, description="Most characters of Markdown to return.")] = 4000,
        project: Project = None,
    ) -> Annotated[CallToolResult, ContextOut]:
        """The long-term memories and earlier sessions relevant to a task, as Markdown (the same as
        `agentmem context`): rules first, then the strongest memories, then sessions you may
        continue. Call it at the start of a task. Read-only."""
        from agentmem_vault.recall.context import build_context

        return front.call(
            lambda v: build_context(v, task, limit=limit, budget=budget, project=project or front.project).to_dict(),
            lambda d: d["markdown"],
        )

    @server.tool(title="Search long-term memories", annotations=READ)
    def memory_search(
        query: Annotated[str, Field(description="Words to rank long-term memories by (keywords, Chinese or English).")],
        limit: Annotated[int, Field(ge=1, le=200, description="Most memories to return.")] = 10,
        project: Project = None,
        include_deprecated: Annotated[bool, Field(description="Also return deprecated memories.")] = False,
    ) -> Annotated[CallToolResult, HitsOut]:
        """Search long-term memories (keywords + recency + importance), with scores and IDs.
        Read-only."""
        from agentmem_vault.errors import UsageError
        from agentmem_vault.recall.rank import search

        def run(v: Vault) -> dict:
            if not query.strip():
                raise UsageError("query is empty")
            hits = search(
                v, query, limit=limit, project=project or front.project, include_deprecated=include_deprecated
            )
            return {"hits": [h.to_dict() for h in hits]}

        return front.call(run)

    @server.tool(
        title="Remember this (long-term)", annotations=_writes(destructive=False, idempotent=True, open_world=True)
    )
    def memory_remember(
        text: Annotated[
            str, Field(description="What to remember, in the user's words: one rule, preference, decision or fact.")
        ],
        project: Project = None,
        session_id: Annotated[
            str | None, Field(description="Your Session ID, recorded as the memory's source.")
        ] = None,
        dry_run: DryRun = False,
    ) -> Annotated[CallToolResult, RememberOut]:
        """Keep something as a long-term memory, only when the user explicitly asks you to
        remember it. It passes the same assessment, filters, de-duplication and curation as
        extraction: outcome create (new note), update (an existing note extended, old text kept)
        or ignore (already known or too vague; reasons given). With an Anthropic API key
        configured the text is sent to that model."""
        from agentmem_vault.longterm.remember import remember

        return front.call(
            lambda v: remember(
                v, text, project=project or front.project or "", session_id=session_id, dry_run=dry_run
            ).to_dict()
        )

    @server.tool(title="Deprecate a long-term memory", annotations=_writes(destructive=True, idempotent=True))
    def memory_deprecate(
        memory_id: Annotated[str, Field(description="The memory's ID (lt-...), title or file name.")],
        reason: Annotated[str, Field(description="Why it no longer holds.")],
        dry_run: DryRun = False,
    ) -> Annotated[CallToolResult, DeprecateOut]:
        """Mark a long-term memory deprecated (it no longer holds); the note is kept with the
        reason and is left out of context and search. Only when the user says it is wrong or
        outdated."""
        from agentmem_vault.longterm.curate import deprecate_memory

        def run(v: Vault) -> dict:
            n = deprecate_memory(v, memory_id, reason, dry_run=dry_run)
            return {
                "id": n.id,
                "title": n.title,
                "status": n.status,
                "deprecated_reason": n.deprecated_reason,
                "file": n.path.name if n.path else None,
                "dry_run": dry_run,
            }

        return front.call(run)

    # -- resources ----------------------------------------------------------------------------------

    def resource(fn: Callable[[Vault], str]) -> str:
        try:
            return fn(front.vault())
        except (SessionNotFound, MemoryNotFound) as exc:
            raise ResourceNotFoundError(f"[{exc.code}] {exc.message}") from exc
        except AgentmemError as exc:
            raise ResourceError(f"[{exc.code}] {exc.message}") from exc

    @server.resource(
        "agentmem://index", name="board", title="Working board (memory/index.md)", mime_type="text/markdown"
    )
    def index_resource() -> str:
        """The working board: one Markdown table row per Memory Session."""
        from agentmem_vault.fs import read_text

        return resource(lambda v: read_text(v.index_path) or "")

    @server.resource(
        "agentmem://session/{session_id}", name="session", title="Session snapshot", mime_type="text/markdown"
    )
    def session_resource(session_id: str) -> str:
        """A session's snapshot (memory/sessions/<ID>.md, or the archived copy)."""
        from agentmem_vault.ops.board import show_session

        def run(v: Vault) -> str:
            view = show_session(v, session_id)
            if view.snapshot is None:
                raise SessionNotFound(f"session {session_id} has no snapshot yet (idle row)")
            return view.snapshot

        return resource(run)

    @server.resource(
        "agentmem://memory/{memory_id}", name="memory", title="Long-term memory note", mime_type="text/markdown"
    )
    def memory_resource(memory_id: str) -> str:
        """A long-term memory note (frontmatter + content), by ID, title or file name."""
        from agentmem_vault.longterm.memories import get_memory, memory_markdown

        return resource(lambda v: memory_markdown(get_memory(v, memory_id)))

    # -- prompt -------------------------------------------------------------------------------------

    @server.prompt(name="memory-start", title="Start a task with agent memory")
    def memory_start(task: str, project: str | None = None) -> str:
        """The memory rules and the memories and sessions relevant to a task, for the start of a chat."""
        from agentmem_vault.recall.context import build_context

        rules = template_text("mcp-instructions.md").rstrip()
        try:
            md = build_context(front.vault(), task, project=project or front.project).markdown.rstrip()
        except AgentmemError as exc:
            md = f"(memory unavailable: {exc.message})"
        return f"{rules}\n\n# Relevant memory for: {task}\n\n{md}\n"

    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentmem-vault")
    except PackageNotFoundError:
        return "0"


def warm_recall_index(vault: str | None) -> None:
    """Bring the derived recall index up to date, so that the first memory_context of a session
    does not pay for it (on a vault of 10,000 notes whose index was never built that is tens of
    seconds, longer than some clients wait for a tool). Best effort: a failure only means the
    first call does the work, as it would anyway."""
    try:
        from agentmem_vault.recall.index import open_index

        open_index(resolve_vault(vault)).close()
    except Exception:
        log.debug("recall index warm-up failed", exc_info=True)


def serve(vault: str | None = None, *, agent: str | None = None, project: str | None = None) -> None:
    """Run the server on stdin/stdout until the client closes the pipe. Logs go to stderr only:
    stdout carries the protocol."""
    import threading

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="agentmem mcp: %(levelname)s %(message)s")
    # A daemon thread: it never delays the answer to initialize and never keeps the process alive.
    threading.Thread(target=warm_recall_index, args=(vault,), name="agentmem-recall-warmup", daemon=True).start()
    build_server(vault, agent=agent, project=project).run("stdio")
