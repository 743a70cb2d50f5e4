"""Curation against existing notes (docs/extraction.md, "Curation"): for each candidate decide create /
update (the previous text goes to the note's dated History) / ignore / deprecate.

``plan_curation`` is pure: it returns the actions and the notes as they would be written, so a
dry run shows exactly what a real run does. Files are never deleted; deprecation is a status.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

from agentmem_vault.longterm.dedupe import (
    identifiers,
    identifiers_conflict,
    is_duplicate,
    shingles,
    similarity,
)
from agentmem_vault.longterm.notes import note_id, safe_filename
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.model.notes import TAG, HistoryEntry, Note
from agentmem_vault.model.textnorm import fold

TITLE_MATCH = 0.5  # Jaccard of title shingles for "this names the same note"
MAX_KEYWORDS = 12


@dataclass
class Action:
    kind: str  # create | update | ignore | deprecate
    title: str
    reason: str
    note: Note | None = None  # the note as it will be written (create/update/deprecate)
    target: str = ""  # ID of the existing note concerned (update/deprecate/ignore as duplicate)
    memory: MemoryObject | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        d: dict[str, str | None] = {"action": self.kind, "title": self.title, "reason": self.reason}
        if self.note is not None:
            d["id"] = self.note.id
            d["file"] = self.note.path.name if self.note.path else None
        if self.target:
            d["target"] = self.target
        return d


def _union(a: list[str], b: list[str], cap: int = MAX_KEYWORDS) -> list[str]:
    out = list(a)
    seen = {fold(x) for x in a}
    for x in b:
        if fold(x) not in seen and len(out) < cap:
            out.append(x)
            seen.add(fold(x))
    return out


def _best_match(m: MemoryObject, notes: list[Note]) -> tuple[Note | None, str]:
    """The existing note this candidate is about, and how it matched ('title' / 'content')."""
    ftitle = fold(m.title)
    for n in notes:
        if fold(n.title) == ftitle:
            return n, "title"
    msh = shingles(f"{m.title}\n{m.content}")
    mids = identifiers(f"{m.title}\n{m.content}")
    tsh = shingles(m.title)
    best: tuple[float, Note | None, str] = (0.0, None, "")
    for n in notes:
        nsh = shingles(f"{n.title}\n{n.content}")
        jac, cont = similarity(msh, nsh)
        same_thing = not identifiers_conflict(mids, identifiers(f"{n.title}\n{n.content}"))
        if same_thing and is_duplicate(msh, nsh) and max(jac, cont) > best[0]:
            best = (max(jac, cont), n, "content")
        tj, _ = similarity(tsh, shingles(n.title))
        if m.action in ("update", "delete") and tj >= TITLE_MATCH and tj > best[0]:
            best = (tj, n, "title")
    return best[1], best[2]


def _adds_nothing(m: MemoryObject, n: Note) -> bool:
    new = shingles(m.content)
    old = shingles(n.content)
    if not new:
        return True
    if identifiers(m.content) - identifiers(n.content):
        return False  # names a number/identifier the note does not have: new knowledge
    return fold(m.content) == fold(n.content) or len(new & old) / len(new) >= 0.9


def new_note(m: MemoryObject, *, now: str, folder: Path, taken_ids: set[str], taken_names: set[str]) -> Note:
    first_source = m.sources[0] if m.sources else ""
    nid = note_id(m.title, first_source, taken_ids)
    name = safe_filename(m.title, taken_names)
    return Note(
        id=nid,
        title=m.title,
        category=m.category,
        keywords=list(m.keywords),
        usage_scenario=list(m.usage_scenario),
        project=m.project,
        module=m.module,
        importance=m.importance,
        score=m.score if m.score is not None else 3,
        status="active",
        created=now,
        updated=now,
        sources=list(m.sources),
        tags=[TAG],
        content=m.content.strip(),
        path=folder / name,
        # The assessor's reason for ``score``, in the frontmatter (docs/extraction.md, docs/notes.md).
        assessment_reason=m.assessment_reason,
    )


def updated_note(n: Note, m: MemoryObject, *, now: str) -> Note:
    out = copy.deepcopy(n)
    out.history.insert(0, HistoryEntry(n.updated or n.created or now, n.content))
    out.content = m.content.strip()
    out.category = m.category or n.category
    out.keywords = _union(n.keywords, m.keywords)
    out.usage_scenario = _union(n.usage_scenario, m.usage_scenario)
    out.sources = _union(n.sources, m.sources, cap=1000)
    out.importance = max(n.importance, m.importance)
    if (m.score or 0) >= n.score and m.assessment_reason:
        out.assessment_reason = m.assessment_reason
    out.score = max(n.score, m.score or 0)
    out.project = n.project or m.project
    out.module = n.module or m.module
    out.updated = now
    return out


def deprecated_note(n: Note, reason: str, *, now: str) -> Note:
    out = copy.deepcopy(n)
    out.status = "deprecated"
    out.deprecated_reason = " ".join(reason.split()) or "deprecated"
    out.updated = now
    return out


def plan_curation(candidates: list[MemoryObject], existing: list[Note], *, now: str, folder: Path) -> list[Action]:
    """Decide what to do with each candidate, in order; later candidates see earlier decisions."""
    notes: dict[str, Note] = {}
    order: list[str] = []
    for n in existing:
        key = n.id or (n.path.name if n.path else n.title)
        notes[key] = n
        order.append(key)
    taken_ids = {n.id for n in existing if n.id}
    taken_names = {n.path.name for n in existing if n.path is not None}
    if folder.is_dir():
        taken_names |= {p.name for p in folder.iterdir()}  # broken notes keep their names too
    actions: list[Action] = []

    def key_of(n: Note) -> str:
        return n.id or (n.path.name if n.path else n.title)

    for m in candidates:
        if m.action == "ignore":
            actions.append(Action("ignore", m.title, m.reason or "marked ignore", memory=m))
            continue
        current = [notes[k] for k in order]
        match, how = _best_match(m, current)
        if m.action == "delete":
            if match is None or not match.active:
                actions.append(Action("ignore", m.title, "asked to deprecate a note that does not exist (or already deprecated)", memory=m))
                continue
            dn = deprecated_note(match, m.reason or m.content, now=now)
            notes[key_of(match)] = dn
            actions.append(Action("deprecate", match.title, m.reason or "superseded", note=dn, target=match.id, memory=m))
            continue
        if match is None:
            nn = new_note(m, now=now, folder=folder, taken_ids=taken_ids, taken_names=taken_names)
            taken_ids.add(nn.id)
            assert nn.path is not None
            taken_names.add(nn.path.name)
            notes[nn.id] = nn
            order.append(nn.id)
            actions.append(Action("create", nn.title, m.reason or "new knowledge", note=nn, memory=m))
            continue
        if not match.active:
            actions.append(Action("ignore", m.title, f"matches deprecated note {match.title!r}", target=match.id, memory=m))
            continue
        if _adds_nothing(m, match):
            # Same knowledge again: record the extra source only if it is new (a quiet merge).
            new_sources = [s for s in m.sources if s not in match.sources]
            if new_sources:
                merged = copy.deepcopy(match)
                merged.sources = match.sources + new_sources
                notes[key_of(match)] = merged
                actions.append(Action("update", match.title, "same knowledge from another source (sources merged)", note=merged, target=match.id, memory=m))
            else:
                actions.append(Action("ignore", m.title, f"already known as {match.title!r}", target=match.id, memory=m))
            continue
        un = updated_note(match, m, now=now)
        notes[key_of(match)] = un
        actions.append(Action("update", match.title, m.reason or f"refines the note (matched by {how})", note=un, target=match.id, memory=m))
    return actions


def notes_to_write(actions: list[Action]) -> list[Note]:
    """The final version of every note an action touched (one write per note)."""
    final: dict[str, Note] = {}
    for a in actions:
        if a.note is not None and a.kind in ("create", "update", "deprecate"):
            final[a.note.id or str(a.note.path)] = a.note
    return list(final.values())


def deprecate_memory(vault, key: str, reason: str, *, dry_run: bool = False) -> Note:
    """Mark one note deprecated (by ID, title or file name); the file stays, with the reason."""
    from agentmem_vault.clock import now as clock_now
    from agentmem_vault.errors import Refused, UsageError
    from agentmem_vault.longterm.memories import get_memory
    from agentmem_vault.longterm.notes import format_note_ts, write_note
    from agentmem_vault.vaultio import VaultWriter

    if not reason.strip():
        raise UsageError("give a reason for deprecating the memory (--reason)")
    with VaultWriter(vault, "memories-deprecate") as w:
        note = get_memory(vault, key)
        if not note.active:
            raise Refused(f"{note.title!r} is already deprecated ({note.deprecated_reason})")
        out = deprecated_note(note, reason, now=format_note_ts(clock_now()))
        if not dry_run:
            write_note(w, vault, out)
    return out
