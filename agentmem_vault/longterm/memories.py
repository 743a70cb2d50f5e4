"""Look up one long-term memory by what a user or agent calls it (ID, title, file name).

Shared by ``agentmem memories show`` and the MCP server (tool ``memory_show`` of a note, resource
``agentmem://memory/{id}``) so that both find the same note and fail with the same error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmem_vault.vault import Vault
from agentmem_vault.errors import MemoryNotFound, NoteFormatError
from agentmem_vault.longterm.notes import (
    Note,
    find_note,
    load_notes,
    properties,
    render_note,
)


def get_memory(vault: Vault, key: str) -> Note:
    """The note whose ID, title or file name is ``key``. The key is only compared with what the
    notes say, never used as a path, so ``../x`` simply matches nothing."""
    broken: list[Path] = []
    reasons: dict[Path, str] = {}
    note = find_note(load_notes(vault, broken, reasons), key) if key.strip() else None
    if note is None:
        hit = next((p for p in broken if key.strip() in (p.stem, p.name)), None)
        if hit is not None:  # the note is there but unreadable: say so (docs/notes.md)
            raise NoteFormatError(
                f"{hit.name}: {reasons.get(hit, 'unreadable')}; fix its frontmatter first, nothing was changed"
            )
        raise MemoryNotFound(
            f"no long-term memory {key!r} (give its ID, title or file name; see `agentmem memories list`)"
        )
    return note


def memory_dict(note: Note) -> dict[str, Any]:
    """Frontmatter, content, history and file of a note (the JSON of `memories show`)."""
    return {
        **properties(note),
        "content": note.content,
        "history": [h.__dict__ for h in note.history],
        "file": str(note.path) if note.path else None,
    }


def memory_markdown(note: Note) -> str:
    return render_note(note)


def note_row(n: Note) -> dict[str, Any]:
    """One line of a memory list (the JSON of `memories list`, the MCP list)."""
    from agentmem_vault.recall.scoping import where_it_applies

    return {
        "id": n.id,
        "title": n.name,
        "category": n.category,
        "score": n.score,
        "importance": n.importance,
        "status": n.status,
        "updated": n.updated,
        "applies": where_it_applies(n.scope, n.project),
        "file": n.path.name if n.path else None,
    }


@dataclass
class MemoryList:
    notes: list[Note] = field(default_factory=list)
    broken: list[Path] = field(default_factory=list)  # notes whose frontmatter cannot be read
    hidden: int = 0  # other projects' and unscoped notes left out by the scope
    scope: dict[str, Any] = field(default_factory=dict)  # recall.scoping.Scope.to_dict()

    def rows(self) -> list[dict[str, Any]]:
        return [note_row(n) for n in self.notes]

    def to_dict(self) -> dict[str, Any]:
        out = {"memories": self.rows(), "broken": [p.name for p in self.broken], "hidden": self.hidden}
        return {**out, **self.scope}


def list_memories(
    vault: Vault,
    *,
    include_deprecated: bool = False,
    category: str | None = None,
    project: list[str] | None = None,
    module: str | None = None,
) -> MemoryList:
    """Long-term memories newest first: active ones (all with ``include_deprecated``), of one
    ``category`` and ``module`` (and those that name none) when given, compared case-insensitively;
    of the scope ``project`` (``Scope.names``: that project's and the global notes; None = every
    project's, docs/projects.md)."""
    from agentmem_vault.model.textnorm import fold
    from agentmem_vault.recall.scoping import sees

    broken: list[Path] = []
    want = category.strip().lower() if category else None
    mod = fold(module) if module else None
    notes = [
        n
        for n in load_notes(vault, broken)
        if (include_deprecated or n.active)
        and (not want or n.category == want)
        and (not mod or fold(n.module) in ("", mod))
    ]
    shown = [n for n in notes if sees(project, n.scope, n.project)]
    shown.sort(key=lambda n: (n.updated, n.title), reverse=True)
    return MemoryList(shown, broken, len(notes) - len(shown))
