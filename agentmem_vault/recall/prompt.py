"""Recall at the prompt: the memories relevant to what the user just asked that this chat has not
been given yet, for the ``UserPromptSubmit`` hooks (the rules: docs/recall.md, "Recall at the
prompt"). It runs before every prompt, so it reads the prebuilt recall index read-only and never
builds, syncs or repairs it; which notes: ``select_memories`` (the ranking and floor of ``agentmem
context``) minus what the injection audit says this chat already got.
"""

from __future__ import annotations

import os

from agentmem_vault.vault import Vault
from agentmem_vault.recall import audit
from agentmem_vault.recall.render import _fit, render_rule

PROMPT_BUDGET = 800  # characters: a prompt-time addition must stay small next to the prompt
MAX_NOTES = 3
MAX_PROMPT_CHARS = 4000  # a pasted log is not a better query; its start says what is asked
MAX_NOTE_CHARS = 240
HEADER = "## Memories for this prompt (agentmem)\n"


def _unchanged(idx, rel: str) -> bool:  # type: ignore[no-untyped-def]
    """The note's file is still the one indexed (else it is left out, never shown stale)."""
    row = idx.conn.execute("SELECT mtime_ns, size FROM notes WHERE path = ?", (rel,)).fetchone()
    try:
        st = os.stat(idx.folder / rel)
    except OSError:
        return False
    return row is not None and (st.st_mtime_ns, st.st_size) == (row[0], row[1])


def prompt_recall(
    vault: Vault,
    prompt: str,
    *,
    session_id: str | None,
    conversation_id: str | None = None,
    agent: str | None = None,
    project: str = "",
    project_names: tuple[str, ...] = (),
    budget: int = PROMPT_BUDGET,
) -> str:
    """Markdown to add to the prompt ("" for nothing), at most ``budget`` characters; recorded in
    the injection audit under ``session_id`` / ``conversation_id``. ``project_names``: the chat's
    project (casefolded names; ``()`` = unknown: global memories only)."""
    budget = max(0, int(budget))
    text = prompt.strip()[:MAX_PROMPT_CHARS]
    if not text or budget < len(HEADER) + 20:
        return ""
    from agentmem_vault.recall.select import select_memories
    from agentmem_vault.recall.index import RecallIndex
    from agentmem_vault.recall.rank import query_tokens, search

    if not query_tokens(text):
        return ""  # "ok", "?", an emoji: nothing to match, so nothing is relevant (not the top notes)
    idx = RecallIndex(vault)
    if not idx.open_readonly():
        return ""  # no index yet (or another version): nothing to add, and nothing built here
    try:
        already = audit.given_note_ids(vault, tuple(k for k in (session_id, conversation_id) if k))
        hits = search(
            vault,
            text,
            limit=MAX_NOTES + len(already) + 5,
            project=list(project_names),
            index=idx,
            sync=False,
            semantic=None,
            repair=False,
        )
        chosen = select_memories(hits, limit=len(hits))
        fresh = [h for h in chosen if (h.id or h.rel_path) not in already and _unchanged(idx, h.rel_path)]
        fresh = fresh[:MAX_NOTES]
    finally:
        idx.close()
    md, n = _fit([render_rule(h, MAX_NOTE_CHARS) for h in fresh], HEADER, budget)
    if not n:
        return ""
    md = md.rstrip("\n")
    audit.record(
        vault,
        "prompt",
        session_id=session_id,
        conversation_id=conversation_id,
        agent=agent,
        project=project,
        budget=budget,
        chars=len(md),
        notes=[audit.note_entry(h.id or h.rel_path, h.title, h.rel_path, h.score, "prompt") for h in fresh[:n]],
    )
    return md
