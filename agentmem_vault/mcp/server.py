"""``agentmem mcp``: a stdio MCP server over the same library as the CLI (see docs/mcp.md).

The tools, resources and prompt are small functions in ``mcp/tools/`` (one module per group),
registered through ``mcp/registry.py``, which also turns library errors into tool errors. Why
the SDK's absolute imports are safe here: the package docstring (``agentmem_vault/mcp``).
"""

from __future__ import annotations

import logging
import sys

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import ValidationError

from agentmem_vault import __version__
from agentmem_vault.config import resolve_vault
from agentmem_vault.errors import AgentmemError
from agentmem_vault.mcp.registry import Front, error_result, register

log = logging.getLogger("agentmem.mcp")


class AgentmemServer(MCPServer):
    """The SDK's server, with its two anticipated tool failures answered like every other error
    (docs/mcp.md, "Errors"): arguments that fail the input schema (``invalid_arguments``, naming
    each field and what is wrong) and an unknown tool (``unknown_tool``)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                fields = [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in cause.errors()]
                err = AgentmemError(
                    f"{name}: invalid arguments: " + "; ".join(f"{f or 'arguments'}: {msg}" for f, msg in fields),
                    code="invalid_arguments",
                    details={"fields": sorted({f for f, _ in fields})},
                )
                return error_result(err)
            if self._tool_manager.get_tool(name) is None:
                return error_result(AgentmemError(f"unknown tool {name!r}", code="unknown_tool"))
            raise


def build_server(
    vault: str | None = None, *, agent: str | None = None, project: str | None = None, workspace: str | None = None
) -> MCPServer:
    """The MCP server for ``vault`` (resolved like the CLI's ``--vault`` when None): every tool,
    resource and prompt of ``mcp/tools/``, bound to this server's vault, agent, pinned project
    and the workspace folder its client put on its command line."""
    from agentmem_vault.integrations.rules import template_text, with_command
    from agentmem_vault.mcp import tools  # noqa: F401 (importing the groups registers them)

    server: MCPServer = AgentmemServer(
        name="agentmem",
        title="agentmem: agent memory in an Obsidian vault",
        version=__version__,
        instructions=with_command(template_text("mcp-instructions.md")),
        log_level="WARNING",
    )
    register(server, Front(vault, agent, project, workspace))
    return server


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


def serve(
    vault: str | None = None, *, agent: str | None = None, project: str | None = None, workspace: str | None = None
) -> None:
    """Run the server on stdin/stdout until the client closes the pipe. Logs go to stderr only:
    stdout carries the protocol."""
    import threading

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="agentmem mcp: %(levelname)s %(message)s")
    # A daemon thread: it never delays the answer to initialize and never keeps the process alive.
    threading.Thread(target=warm_recall_index, args=(vault,), name="agentmem-recall-warmup", daemon=True).start()
    build_server(vault, agent=agent, project=project, workspace=workspace).run("stdio")
