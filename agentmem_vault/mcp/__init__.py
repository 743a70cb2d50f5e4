"""The MCP front end (``agentmem mcp``): every memory operation as a Model Context Protocol tool.

Needs the optional extra ``agentmem-vault[mcp]`` (the official ``mcp`` SDK). This package never
imports the SDK at import time, so ``import agentmem_vault.mcp`` is free; ``server.py`` does, with
absolute imports (``from mcp.server...``), which resolve to the SDK and never to this package
(its full name is ``agentmem_vault.mcp``). See docs/mcp.md.
"""

from __future__ import annotations

from agentmem_vault.errors import MissingExtra

EXTRA_HINT = "pip install 'agentmem-vault[mcp]'"


def require_sdk() -> None:
    """Fail with one clear line when the SDK is not installed (or is too old to have MCPServer)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("mcp.server.mcpserver") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtra(
            f"the MCP server needs the optional extra: {EXTRA_HINT} (the official `mcp` SDK, version 2 or later)"
        )
