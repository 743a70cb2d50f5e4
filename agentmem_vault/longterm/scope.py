"""Which project a memory belongs to (docs/projects.md, A memory's scope).

- ``user_communication`` / ``user_behavior`` (how the user talks and works), and any statement in
  the user's own voice (a first-person preference or habit, a dislike of a habit of the
  assistant: ``templates/fields/own_voice.txt``) that does not speak for the team ("we",
  ``team_voice.txt``), are **global**, unless the words tie them to this project.
- Every other category (tech stack, build, conventions, pitfalls, decisions) belongs to the project
  of the source it came from, unless the words say it holds everywhere.
- A source whose project is unknown gives **unscoped** memories (``scope: unscoped``, no
  project), except the ones that are global by the rules above: an unscoped note reaches no
  project's chats until ``agentmem memories move`` places it, and ``doctor`` lists it.
- The words of ``templates/fields/scope_*.txt`` decide, with the extractor's reading of the scope
  words (``Statement.reach``) where they say nothing.
"""

from __future__ import annotations

from agentmem_vault.longterm.fields.data import pattern
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.model.textnorm import fold

GLOBAL_CATEGORIES = frozenset({"user_communication", "user_behavior"})
UNSCOPED = "unscoped"


def scope_for(category: str, text: str, source_project: str, reach: str = "") -> tuple[str, str]:
    """(project, scope) for a memory of ``category`` saying ``text``, from a source of
    ``source_project`` ("" when unknown); ``reach`` is the extractor's reading of the scope words
    (``project`` / ``all_projects``; anything else says nothing about projects)."""
    f = fold(text)
    everywhere_words = bool(pattern("scope_every_project.txt").search(f))
    here_words = bool(pattern("scope_this_project.txt").search(f))
    # the extractor's reading first, unless these words plainly say otherwise ("here's what I
    # changed … in all my repos" is no "here")
    says_here = here_words or (reach == "project" and not everywhere_words)
    says_everywhere = everywhere_words or reach == "all_projects"
    own_voice = bool(pattern("own_voice.txt").search(f)) and not pattern("team_voice.txt").search(f)
    if category in GLOBAL_CATEGORIES or own_voice:
        wants_project = says_here and not says_everywhere
    else:
        wants_project = not (says_everywhere and not says_here)
    if not wants_project:
        return "", "global"
    return (source_project, "project") if source_project else ("", UNSCOPED)


def apply_scope(m: MemoryObject, source_project: str) -> MemoryObject:
    """Set ``m.project`` and ``m.scope`` by the rule above (the model's own ``project`` guess is
    not trusted: the source's workspace decides)."""
    text = " ".join([m.title, m.content, m.evidence])
    st = getattr(m, "statement", None)  # longterm/statement.py, once the extractor fills it
    reach = str(st.reach) if st is not None else ""
    m.project, m.scope = scope_for(m.category, text, source_project, reach)
    return m
