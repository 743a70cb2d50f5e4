"""The small registry the MCP server is built from (the shape of basic-memory's ``mcp/tools``).

A tool, resource or prompt is a module-level function whose first parameter is the ``Front`` (the
vault, agent and project the server was started with), registered with ``@tool``, ``@resource``
or ``@prompt``; the options are the SDK's own. ``register`` gives each one to an ``MCPServer`` with
the ``Front`` bound, so the client sees only the other parameters. Thin, and how errors are
answered: docs/mcp.md, "Rules".
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
from collections.abc import Callable
from typing import Any, NamedTuple

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import CallToolResult, TextContent

from agentmem_vault.vault import Vault
from agentmem_vault.config import resolve_agent, resolve_vault, vault_config
from agentmem_vault.errors import AgentmemError, MemoryNotFound, SessionNotFound

log = logging.getLogger("agentmem.mcp")


def _ok(data: Any, text: str | None = None) -> CallToolResult:
    if hasattr(data, "to_dict"):  # operation results are dataclasses; every front end prints to_dict()
        data = data.to_dict()
    structured = data if isinstance(data, dict) else {"result": data}
    body = text if text is not None else json.dumps(structured, ensure_ascii=False, indent=1, default=str)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=structured)


def error_result(exc: AgentmemError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"error [{exc.code}]: {exc.message}")],
        structured_content={"error": exc.to_dict()},
        is_error=True,
    )


class Front:
    """The vault, agent, pinned project and workspace folder this server was started with;
    resolved per call so that a vault created (or repaired) after the client started the server
    is picked up. Which project a call serves: ``scope`` (recall/scoping.py decides)."""

    def __init__(self, vault: str | None, agent: str | None, project: str | None, workspace: str | None = None) -> None:
        self.vault_arg, self.agent_arg, self.project, self.workspace = vault, agent, project, workspace

    async def scope(self, ctx: Any, project: str | None = None, all_projects: bool = False) -> Callable[[Vault], Any]:
        """A function of the vault giving the call's ``Scope``: the client's roots are asked here
        (it needs the event loop), the rule is applied on the vault in the worker thread."""
        from agentmem_vault.mcp.scope import client_roots
        from agentmem_vault.recall.scoping import chat_scope

        roots = await client_roots(ctx) if project is None and not all_projects and not self.project else []
        return functools.partial(
            chat_scope,
            project=project,
            all_projects=all_projects,
            pinned=self.project,
            roots=roots,
            workspace=self.workspace,
        )

    def vault(self) -> Vault:
        return resolve_vault(self.vault_arg)

    def where(self) -> dict[str, Any]:
        """The project and workspace a session this server writes belongs to (docs/projects.md)."""
        return {"project": self.project or "", "workspace": os.getcwd()}

    def agent(self, v: Vault) -> str:
        return resolve_agent(self.agent_arg, vault_config(v))

    def call(
        self, fn: Callable[[Vault], Any], text: Callable[[Any], str] | None = None, *, dry_run: bool = False
    ) -> CallToolResult:
        """A tool's answer: ``fn``'s result on the vault, or the error result it raised. With
        ``dry_run`` it runs inside ``fs.DryRun``: nothing is written, the answer says what would be."""
        try:
            data = self._dry(fn) if dry_run else fn(self.vault())
        except AgentmemError as exc:
            return error_result(exc)
        except OSError as exc:  # a disk or permission problem the library did not name
            message = f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
            return error_result(AgentmemError(message, code="os_error"))
        except Exception as exc:  # the server must outlive any bug: log it, answer with an error
            log.exception("agentmem tool failed")
            message = f"internal error ({type(exc).__name__}: {exc}); see the server log"
            return error_result(AgentmemError(message, code="internal_error"))
        return _ok(data, text(data) if text else None)

    def _dry(self, fn: Callable[[Vault], Any]) -> Any:
        from agentmem_vault.fs import DryRun

        vault = self.vault()
        with DryRun() as d:
            data = fn(vault)
        data = data.to_dict() if hasattr(data, "to_dict") else data
        if isinstance(data, dict):
            data = {**data, "dry_run": True, "would_change": d.changed_under(vault.root)}
        return data

    def read(self, fn: Callable[[Vault], str]) -> str:
        """A resource's text: ``fn``'s on the vault; a library error becomes the SDK's resource
        error, its message starting ``[<code>]``."""
        try:
            return fn(self.vault())
        except (SessionNotFound, MemoryNotFound) as exc:
            raise ResourceNotFoundError(f"[{exc.code}] {exc.message}") from exc
        except AgentmemError as exc:
            raise ResourceError(f"[{exc.code}] {exc.message}") from exc


class Entry(NamedTuple):
    kind: str  # the MCPServer decorator: "tool", "resource" or "prompt"
    args: tuple[Any, ...]
    options: dict[str, Any]
    fn: Callable[..., Any]


ENTRIES: list[Entry] = []


def _entry(kind: str, *args: Any, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        ENTRIES.append(Entry(kind, args, options, fn))
        return fn

    return add


tool = functools.partial(_entry, "tool")  # @tool(**options)
resource = functools.partial(_entry, "resource")  # @resource(uri, **options)
prompt = functools.partial(_entry, "prompt")  # @prompt(**options)


def _not_text(value: Any) -> bool:
    """A string argument that is not Unicode text: JSON can carry a lone surrogate (``"\\udcff"``),
    which no file, index or answer can encode."""
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, (list, tuple)):
        return any(_not_text(v) for v in value)
    return False


def _refusal(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CallToolResult | None:
    bad = [k for k, v in kwargs.items() if _not_text(v)] + [f"#{i + 1}" for i, v in enumerate(args) if _not_text(v)]
    if not bad or kind != "tool":
        return None
    from agentmem_vault.errors import UsageError

    return error_result(UsageError(f"argument {bad[0]} is not valid Unicode text (a lone surrogate)"))


def _bind(fn: Callable[..., Any], front: Front, kind: str = "tool") -> Callable[..., Any]:
    """``fn`` with its first parameter (the Front) bound; name, docstring and the signature of the
    other parameters kept, which is what the SDK reads to build the schema."""
    sig = inspect.signature(fn, eval_str=True)
    bound: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):  # a tool that asks the client something (its roots)

        @functools.wraps(fn)
        async def bound(*args: Any, **kwargs: Any) -> Any:
            refusal = _refusal(kind, args, kwargs)
            return refusal if refusal is not None else await fn(front, *args, **kwargs)

    else:

        @functools.wraps(fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            refusal = _refusal(kind, args, kwargs)
            return refusal if refusal is not None else fn(front, *args, **kwargs)

    first = next(iter(sig.parameters))
    bound.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])  # type: ignore[attr-defined]
    bound.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != first}
    return bound


def register(server: MCPServer, front: Front) -> None:
    for e in ENTRIES:
        getattr(server, e.kind)(*e.args, **e.options)(_bind(e.fn, front, e.kind))
