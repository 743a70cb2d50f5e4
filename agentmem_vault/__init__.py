"""agentmem-vault: reliable agent memory in an Obsidian vault."""

__version__ = "0.1.0"
