"""A note's ``sources`` (docs/notes.md, Fields): the chat's ``[[Session ID]]`` whenever it is
known, so that Obsidian and ``context`` link the session; a transcript's reference otherwise."""

from __future__ import annotations

from agentmem_vault.vault import Vault
from agentmem_vault.longterm.sources import Source

_CHAT_KINDS = {"cursor": "cursor:", "cursor-txt": "cursor:", "claude": "claude:"}


def chat_pair(vault: Vault, src: Source) -> dict:
    """The conversation pair the hook recorded for a transcript's chat (the transcript is named
    after the conversation), or {}."""
    prefix = _CHAT_KINDS.get(src.kind)
    if not prefix or not src.ref.startswith(prefix):
        return {}
    from agentmem_vault.ops.conversations import find_pair

    try:
        return find_pair(vault, src.ref[len(prefix) :]) or {}
    except (OSError, ValueError):
        return {}


def source_link(vault: Vault, src: Source) -> str:
    """``[[<Session ID>]]`` for a transcript whose chat was registered by the hook (its
    conversation pair records the Session ID), else the source's own reference."""
    sid = chat_pair(vault, src).get("session_id")
    return f"[[{sid}]]" if isinstance(sid, str) and sid else src.ref
