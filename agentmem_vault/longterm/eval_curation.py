"""Evaluation of curation across chats (docs/extraction.md, "Evaluation"): a fixture's chats are
extracted and curated in the order they were said, each at its own time, exactly as successive
``extract`` runs would; the memories it reports are the notes active at the end. A reversal that
leaves the old rule active, or a supplement that makes a second note, shows up as a false
positive; a supplement that loses the core rule as a miss.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from agentmem_vault.longterm.curate import notes_to_write, plan_curation
from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.llm import MemoryModel, Usage
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.model.notes import Note


def curated_memories(
    fixture_id: str, chats: list[tuple[str, list[Turn]]], *, model: MemoryModel | None, min_score: int
) -> tuple[list[MemoryObject], list[str], Usage]:
    """The notes active after curating a fixture's chats (when, turns) in order, as the memories
    the evaluation scores (no vault, nothing written)."""
    # plan_curation only names files inside this folder; it is never created
    folder = Path(tempfile.gettempdir()) / "agentmem-eval-curation-never-written"
    notes: dict[str, Note] = {}
    errors: list[str] = []
    usage = Usage()
    for i, (at, turns) in enumerate(chats):
        kept, _, errs, u = memories_from_turns(
            turns, model=model, ref=f"eval:{fixture_id}:{i + 1}", min_score=min_score, said_at=at
        )
        errors += errs
        usage.add(u)
        for n in notes_to_write(plan_curation(kept, list(notes.values()), now=at, folder=folder)):
            notes[n.id] = n
    out = [
        MemoryObject("create", n.title, n.content, n.category, keywords=list(n.keywords), signal="note")
        for n in notes.values()
        if n.active
    ]
    return out, errors, usage
