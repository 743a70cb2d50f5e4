"""Recall: the derived search index over long-term memories, ranking, and context for new chats.

Notes are read with ``agentmem_vault.model.notes`` (the one note model). Modules: ``index`` (SQLite
FTS5 index under memory/.agentmem/recall/),
``rank`` (BM25 over weighted fields + recency + importance), ``semantic`` (optional backend, off),
``render`` (pure Markdown within a budget), ``context`` (``agentmem context``), ``session_start``
(fast rules + recent sessions for the sessionStart hooks).

This package's ``__init__`` imports nothing so that the hook path pays only for what it uses:
``from agentmem_vault.recall.session_start import session_start_context``.
"""

from __future__ import annotations


def session_start_context(vault, *, budget: int = 1500, **kw):  # type: ignore[no-untyped-def]
    """See :func:`agentmem_vault.recall.session_start.session_start_context`."""
    from agentmem_vault.recall.session_start import session_start_context as impl

    return impl(vault, budget=budget, **kw)
