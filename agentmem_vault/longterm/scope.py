"""Which project a memory belongs to (docs/projects.md, A memory's scope).

- ``user_communication`` / ``user_behavior`` (how the user talks and works), and any statement in
  the user's own voice (a first-person preference or habit, the user's own machine:
  ``templates/fields/own_voice.txt``), are **global**, unless the words tie them to this project.
- Every other category (tech stack, build, conventions, pitfalls, decisions) belongs to the project
  of the source it came from, unless the words say it holds everywhere.
- A source whose project is unknown gives **unscoped** memories (``scope: unscoped``, no
  project), except the ones that are global by the rules above: an unscoped note reaches no
  project's chats until ``agentmem memories move`` places it, and ``doctor`` lists it.
- The extractor's reading of the scope words (``Statement.reach``), when it has one, comes first;
  the words of ``templates/fields/scope_*.txt`` otherwise.
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
    says_here = reach == "project" or (reach != "all_projects" and bool(pattern("scope_this_project.txt").search(f)))
    says_everywhere = reach == "all_projects" or (
        reach != "project" and bool(pattern("scope_every_project.txt").search(f))
    )
    if category in GLOBAL_CATEGORIES or pattern("own_voice.txt").search(f):
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
