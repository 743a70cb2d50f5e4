"""Session ID completion for ID arguments (``shell_complete=complete_session_id``).

Kept apart from completion.py so that command modules can name it without importing click's
completion machinery: it runs only while the shell asks for completions.
"""

from __future__ import annotations

from typing import Any

import click


def complete_session_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Session IDs on the board (``memory/index.md`` only: one file read, no recall index, no
    daemon) that start with what was typed, the Topic as the hint. Completion must never print an
    error into the shell, so any failure completes nothing."""
    from click.shell_completion import CompletionItem

    try:
        from agentmem_vault.config import resolve_vault
        from agentmem_vault.ops.board import load_index

        vault = None
        c: click.Context | None = ctx
        while c is not None and vault is None:
            vault = c.params.get("vault")
            c = c.parent
        doc = load_index(resolve_vault(vault))
        return [
            CompletionItem(r.session_id, help=r.topic) for r in doc.row_list() if r.session_id.startswith(incomplete)
        ]
    except Exception:  # noqa: BLE001 - see the docstring
        return []
