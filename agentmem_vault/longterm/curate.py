"""Curation against existing notes (docs/extraction.md, "Curation"): for each candidate decide
create / update (the previous text goes to the note's dated History) / ignore / deprecate.

Curation never goes backwards: a candidate from a source older than the one that wrote the note's
current text (``source_time``) does not replace it; its text is filed into History at its own
time, and History stays newest first. A candidate that only adds a usage scenario or keywords
updates the note. Matching weighs keywords, category, project and module besides the text. A
model's "delete" never deprecates a rule note (importance >= 0.9) unless the user's own words in
that source retract it.

``plan_curation`` is pure: it returns the actions and the notes as they would be written, so a
dry run shows exactly what a real run does. Files are never deleted; deprecation is a status.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import re

from agentmem_vault.longterm.dedupe import (
    identifiers,
    identifiers_conflict,
    same_memory,
    scope_conflict,
    shingles,
    similarity,
)
from agentmem_vault.longterm.cues import has
from agentmem_vault.longterm.kinds import name_words as _names, named_words, retraction_parts, supplement_parts
from agentmem_vault.errors import Refused, UsageError
from agentmem_vault.longterm.notes import note_id, note_now, safe_filename, write_note
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.model.notes import TAG, HistoryEntry, Note
from agentmem_vault.model.textnorm import fold, tokenize
from agentmem_vault.recall.location import RULE_IMPORTANCE  # the one threshold of a rule

TITLE_MATCH = 0.5  # Jaccard of title shingles for "this names the same note"
MAX_KEYWORDS = 12

_SENT = re.compile(r"(?<=[。！？!?\n])|(?<=[.;])\s+")


def retracted_words(evidence: str) -> set[str]:
    """The words with which the user's statement names an earlier rule it takes back ("之前那條
    「完成前要跑 yarn lint」作廢" -> yarn, lint, …), without the words of the rule that replaces
    it; empty when the statement takes nothing back."""
    if not evidence or not (has("reversal", fold(evidence)) or has("retract", fold(evidence))):
        return set()
    # not the words of the rule that replaces it ("不要用 anyhow，改用 thiserror" names anyhow too)
    return named_words(evidence, "reversal") - _names(retraction_parts(evidence)[2])


def named_notes(words: set[str], notes: list[Note], m: MemoryObject) -> list[Note]:
    """The active notes of ``m``'s scope that ``words`` name: an identifier of the note, or two
    of its title / keyword / content words."""
    if not words:
        return []
    out: list[Note] = []
    for n in notes:
        if not n.active or scope_conflict(m, n):
            continue
        ids = {fold(x) for x in identifiers(f"{n.title}\n{n.content}")}
        mine = _names(" ".join([n.title, *n.keywords, n.content]))
        named = _names(" ".join([n.title, *n.keywords]))
        if words & ids or len(words & mine) >= 2 or words & named:
            out.append(n)
    return out


def supplemented_note(m: MemoryObject, notes: list[Note]) -> tuple[Note, str] | None:
    """(the note a supplement names, the supplement's own words) for "補充 apiFetch 那條規則：
    Server Component 也一樣" / "Adding to the session_scope rule: background jobs too"."""
    text = m.evidence or m.content
    found = named_notes(named_words(text, "supplement"), notes, m)
    body = supplement_parts(text)[1]
    if not found or not body.strip():
        return None
    return found[0], body.strip()


def user_retracts(words: str, note: Note) -> bool:
    """The user's own words (``words``: what the user said in the source) take this note back:
    a sentence with a retraction phrase that names something of the note (a keyword or a title
    word)."""
    if not words:
        return False
    names = {t for t in tokenize(" ".join([note.title, *note.keywords])) if len(t) >= 2}
    for sent in _SENT.split(words):
        f = fold(sent)
        if has("retract", f) and names & set(tokenize(f, fold_first=False)):
            return True
    return False


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
        if fold(n.title) == ftitle and not scope_conflict(m, n):
            return n, "title"
    msh = shingles(f"{m.title}\n{m.content}")
    mids = identifiers(f"{m.title}\n{m.content}")
    tsh = shingles(m.title)
    best: tuple[float, Note | None, str] = (0.0, None, "")
    for n in notes:
        if scope_conflict(m, n):
            continue  # another project's or module's rule is another memory
        nsh = shingles(f"{n.title}\n{n.content}")
        jac, cont = similarity(msh, nsh)
        same_thing = not identifiers_conflict(mids, identifiers(f"{n.title}\n{n.content}"))
        if same_thing and same_memory(msh, nsh, m, n) and max(jac, cont) > best[0]:
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
        scope=m.scope,
        importance=m.importance,
        score=m.score if m.score is not None else 3,
        status="active",
        created=now,
        updated=now,
        sources=list(m.sources),
        tags=[TAG],
        content=m.content.strip(),
        path=folder / name,
        assessment_reason=m.assessment_reason,
        extra={k: v for k, v in (("source_time", m.source_time), ("said_in", said_in(m))) if v},
    )


def content_time(n: Note) -> str:
    """When the note's current text was said: its source's time, else when it was written."""
    return str(n.extra.get("source_time") or n.updated or n.created or "")


def _sorted_history(entries: list[HistoryEntry]) -> list[HistoryEntry]:
    # newest first; entries without a time keep their place at the end
    return sorted(entries, key=lambda h: h.when or "", reverse=True)


def said_in(m: MemoryObject) -> str:
    """Where the candidate was said: "<source>#<turn>" (recorded in the note as ``said_in``)."""
    if not m.sources or m.statement is None:
        return ""
    return f"{m.sources[0]}#{m.statement.order}"


def is_older(m: MemoryObject, n: Note) -> bool:
    """The candidate was said before the note's current text (docs/extraction.md, "Never
    backwards"). A text the note already replaced, read again from a source the note has seen
    (a re-read, a grown transcript run with ``--force``, a restored old file, whatever its file
    time), is never newer; otherwise the earlier statement time is older, and at the same time
    an earlier turn of the same source."""
    if set(m.sources) & set(n.sources) and any(fold(h.text) == fold(m.content) for h in n.history):
        return True
    ct = content_time(n)
    if m.source_time and ct and m.source_time != ct:
        return m.source_time < ct
    here, there = _turn_of(said_in(m)), _turn_of(str(n.extra.get("said_in") or ""))
    return bool(here[0]) and here[0] == there[0] and 0 <= here[1] < there[1]


def _turn_of(said: str) -> tuple[str, int]:
    ref, _, turn = said.rpartition("#")
    return ref, int(turn) if turn.isdigit() else -1


def older_into_history(n: Note, m: MemoryObject, *, now: str) -> Note | None:
    """An older source's text is filed into History at its time; the current text stays. None
    when that changes nothing."""
    out = copy.deepcopy(n)
    if fold(m.content) != fold(n.content) and all(fold(h.text) != fold(m.content) for h in n.history):
        out.history = _sorted_history(out.history + [HistoryEntry(m.source_time, m.content.strip())])
    out.keywords = _union(n.keywords, m.keywords)
    out.usage_scenario = _union(n.usage_scenario, m.usage_scenario)
    out.sources = _union(n.sources, m.sources, cap=1000)
    if (out.history, out.keywords, out.usage_scenario, out.sources) == (
        n.history,
        n.keywords,
        n.usage_scenario,
        n.sources,
    ):
        return None
    out.updated = now
    return out


def updated_note(n: Note, m: MemoryObject, *, now: str) -> Note:
    out = copy.deepcopy(n)
    out.history = _sorted_history([HistoryEntry(content_time(n) or now, n.content)] + out.history)
    # a candidate without a source time (``remember``) was said now
    out.extra["source_time"] = m.source_time or now
    if said_in(m):
        out.extra["said_in"] = said_in(m)
    else:
        out.extra.pop("said_in", None)
    out.content = m.content.strip()
    out.category = m.category or n.category
    out.keywords = _union(n.keywords, m.keywords)
    out.usage_scenario = _union(n.usage_scenario, m.usage_scenario)
    out.sources = _union(n.sources, m.sources, cap=1000)
    out.importance = max(n.importance, m.importance)
    if m.score is not None and m.score >= n.score:
        # the note keeps its best assessment, and the reason that goes with it (docs/extraction.md)
        out.score = m.score
        out.assessment_reason = m.assessment_reason
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


def follow_the_user(m: MemoryObject, current: list[Note], match: Note | None, *, now: str) -> list[Action]:
    """What the user's statement does to the notes it names (docs/extraction.md): a supplement
    updates the note it names, keeping its core rule; a reversal deprecates every note it takes
    back (not the note this candidate rewrites, not a note said after it)."""
    kind = m.statement.kind if m.statement is not None else ""
    if kind == "supplement" and m.action != "delete":
        sup = supplemented_note(m, current)
        if sup is not None and not is_older(m, sup[0]):
            n, body = sup
            joined = copy.copy(m)
            # the core rule stays; the supplement is added to it
            joined.content = f"{n.content.rstrip()} {body}" if body not in n.content else n.content
            un = updated_note(n, joined, now=now)
            return [Action("update", n.title, "supplemented by the user", note=un, target=n.id, memory=m)]
    out: list[Action] = []
    for n in named_notes(retracted_words(m.evidence), current, m):
        if n is match and m.action != "delete" or is_older(m, n):
            continue  # the note this statement rewrites, or a newer one: not taken back
        dn = deprecated_note(n, f"replaced by the user: {m.content}", now=now)
        out.append(Action("deprecate", n.title, "the user took it back", note=dn, target=n.id, memory=m))
    return out


def plan_curation(candidates: list[MemoryObject], existing: list[Note], *, now: str, folder: Path) -> list[Action]:
    """Decide what to do with each candidate, in order; later candidates see earlier decisions."""

    def key_of(n: Note) -> str:
        return n.id or (n.path.name if n.path else n.title)

    notes: dict[str, Note] = {}
    order: list[str] = []
    for n in existing:
        notes[key_of(n)] = n
        order.append(key_of(n))
    taken_ids = {n.id for n in existing if n.id}
    taken_names = {n.path.name for n in existing if n.path is not None}
    if folder.is_dir():
        taken_names |= {p.name for p in folder.iterdir()}  # broken notes keep their names too
    actions: list[Action] = []

    def ignore(reason: str, target: str = "") -> None:
        actions.append(Action("ignore", m.title, reason, target=target, memory=m))

    def write(kind: str, reason: str, note: Note, old: Note) -> None:
        notes[key_of(old)] = note  # the later candidates see the note as it will be written
        actions.append(Action(kind, old.title, reason, note=note, target=old.id, memory=m))

    for m in candidates:
        if m.action == "ignore":
            ignore(m.reason or "marked ignore")
            continue
        current = [notes[k] for k in order]
        match, how = _best_match(m, current)
        done = follow_the_user(m, current, match, now=now)
        for a in done:
            assert a.note is not None
            notes[key_of(a.note)] = a.note
        actions += done
        kind = m.statement.kind if m.statement is not None else ""
        if any(a.kind == "update" for a in done) or (m.action == "delete" and (done or kind == "reversal")):
            continue  # a supplement merged, or a retraction done (or naming no active note)
        if m.action == "delete":
            if match is None or not match.active:
                ignore("asked to deprecate a note that does not exist (or already deprecated)")
            elif match.importance >= RULE_IMPORTANCE and not user_retracts(m.evidence, match):
                ignore("a rule note is deprecated only when the user's own words retract it", match.id)
            elif is_older(m, match):
                ignore("the delete comes from a source older than the note's current text", match.id)
            else:
                write(
                    "deprecate", m.reason or "superseded", deprecated_note(match, m.reason or m.content, now=now), match
                )
        elif match is None:
            nn = new_note(m, now=now, folder=folder, taken_ids=taken_ids, taken_names=taken_names)
            taken_ids.add(nn.id)
            assert nn.path is not None
            taken_names.add(nn.path.name)
            notes[nn.id] = nn
            order.append(nn.id)
            actions.append(Action("create", nn.title, m.reason or "new knowledge", note=nn, memory=m))
        elif not match.active:
            ignore(f"matches deprecated note {match.title!r}", match.id)
        elif is_older(m, match):
            # forced or repeated extraction of an older source: never make older text current
            on = older_into_history(match, m, now=now)
            if on is None:
                ignore(f"older than {match.title!r}'s current text and already in it", match.id)
            else:
                write("update", "older source: filed into History, current text kept", on, match)
        elif _adds_nothing(m, match):
            # the usage scenarios and keywords the candidate adds to the note
            have_u = {fold(x) for x in match.usage_scenario}
            adds_u = [x for x in m.usage_scenario if fold(x) not in have_u]
            have_k = have_u | {fold(x) for x in match.keywords}
            adds_k = [x for x in m.keywords if fold(x) not in have_k]
            # Same knowledge again: record the extra source only if it is new (a quiet merge).
            new_sources = [s for s in m.sources if s not in match.sources]
            merged = copy.deepcopy(match)
            if adds_u or adds_k:
                merged.usage_scenario = _union(match.usage_scenario, adds_u)
                merged.keywords = _union(match.keywords, adds_k)
                merged.sources = _union(match.sources, m.sources, cap=1000)
                merged.updated = now
                what = " and ".join(x for x, v in (("usage scenario", adds_u), ("keywords", adds_k)) if v)
                write("update", f"adds {what}", merged, match)
            elif new_sources:
                merged.sources = match.sources + new_sources
                write("update", "same knowledge from another source (sources merged)", merged, match)
            else:
                ignore(f"already known as {match.title!r}", match.id)
        else:
            write("update", m.reason or f"refines the note (matched by {how})", updated_note(match, m, now=now), match)
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
    from agentmem_vault.longterm.memories import get_memory
    from agentmem_vault.recall.refresh import NoteWriter

    if not reason.strip():
        raise UsageError("give a reason for deprecating the memory (--reason)")
    with NoteWriter(vault, "memories-deprecate") as w:
        note = get_memory(vault, key)
        if not note.active:
            raise Refused(f"{note.title!r} is already deprecated ({note.deprecated_reason})")
        out = deprecated_note(note, reason, now=note_now())
        if not dry_run:
            write_note(w, vault, out)
    return out


def move_memory(vault, key: str, *, project: str | None = None, to_global: bool = False, dry_run: bool = False) -> Note:
    """Re-scope one note (docs/projects.md): to ``project`` (its canonical name through the
    config's aliases) or to every project (``to_global``). The old scope goes to History."""
    from agentmem_vault.config import vault_config
    from agentmem_vault.longterm.memories import get_memory
    from agentmem_vault.ops.projects import MAX_NAME, aliases_from_config
    from agentmem_vault.recall.refresh import NoteWriter

    if to_global == (project is not None):
        raise UsageError("give exactly one of --project NAME or --global")
    name = ""
    if project is not None:
        name = aliases_from_config(vault_config(vault)).canonical(project)
        if not name or len(name) > MAX_NAME or "\n" in name:
            raise UsageError(f"--project {project!r}: give a project name (1-{MAX_NAME} characters)")
    with NoteWriter(vault, "memories-move") as w:
        note = get_memory(vault, key)
        out = copy.deepcopy(note)
        out.project, out.scope = (name, "project") if name else ("", "global")
        if (out.project, out.scope) == (note.project, note.scope):
            return out
        now = note_now()
        was = f"project {note.project}" if note.project and note.scope != "global" else note.scope or "global"
        was = "global" if was == "project" else was  # a legacy note: scope set, no project
        now_is = f"project {name}" if name else "global"
        out.history.insert(0, HistoryEntry(now, f"(scope moved from {was} to {now_is})"))
        out.updated = now
        if not dry_run:
            write_note(w, vault, out)
    return out
