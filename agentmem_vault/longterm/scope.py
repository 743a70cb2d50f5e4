"""Which project a memory belongs to: the source's, global or unscoped, by its category and its
words (docs/projects.md, A memory's scope, states the rule; the words are the data files
``templates/fields/scope_*.txt``, ``own_voice.txt`` and ``team_voice.txt``)."""

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
    here_words = bool(pattern("scope_this_project.txt").search(pattern("scope_every_project.txt").sub(" ", f)))
    own_voice = bool(pattern("own_voice.txt").search(f)) and not pattern("team_voice.txt").search(f)
    users = category in GLOBAL_CATEGORIES or own_voice
    # the extractor's reading where these words say nothing; the user's own way of working is tied
    # to a project only by words naming it ("here's what I changed" is no "here")
    says_here = here_words or (reach == "project" and not everywhere_words and not users)
    says_everywhere = everywhere_words or reach == "all_projects"
    if not ((says_here and not says_everywhere) if users else not (says_everywhere and not says_here)):
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
