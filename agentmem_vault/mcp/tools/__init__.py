"""The MCP server's tools, resources and prompt, one module per group; importing this package
registers them all with ``agentmem_vault.mcp.registry``, in this order (the order a client lists
them in). A new group is one import here."""

from agentmem_vault.mcp.tools import sessions  # first: the listing order is the import order
from agentmem_vault.mcp.tools import board, memories, resources

__all__ = ["board", "memories", "resources", "sessions"]
