"""Which project a memory belongs to (docs/projects.md).

- ``user_communication`` / ``user_behavior`` (how the user talks and works: language, tone, the
  tools they always use) are **global**, unless the words tie them to this project
  ("這個專案", "本项目", "in this repo", ...).
- Every other category (tech stack, build, conventions, pitfalls, decisions) belongs to the project
  of the source it came from, unless the words say it holds everywhere ("所有專案", "in every
  project", "always, in any repo").
- A source whose project is unknown gives **unscoped** memories (``scope: unscoped``, no
  project), except the ones that are global by the rules above: an unscoped note reaches no
  project's chats until ``agentmem memories move`` places it, and ``doctor`` lists it. The
  extraction report says why for that source.
- The extractor's reading of the scope words (``Statement.reach``), when it has one, comes first.
"""

from __future__ import annotations

import re

from agentmem_vault.longterm.schema import MemoryObject

GLOBAL_CATEGORIES = frozenset({"user_communication", "user_behavior"})

_THIS_PROJECT = re.compile(
    r"這個專案|这个项目|這個項目|这个专案|本專案|本项目|本項目|我們專案|我们项目|我們的專案|我们的项目|此專案|此项目|"
    r"這個 ?repo|这个 ?repo|這個倉庫|这个仓库|這個程式庫|"
    r"\b(?:this|our|the current) (?:project|repo|repository|codebase|code ?base|app|service)\b|\bin here\b",
    re.IGNORECASE,
)
_EVERY_PROJECT = re.compile(
    r"所有(?:的)?(?:專案|项目|項目|repo|倉庫|仓库)|每個(?:專案|項目)|每个项目|任何(?:專案|项目|項目)|不管(?:哪個|哪个)(?:專案|项目|項目)|"
    r"\b(?:every|all|any) (?:of my |my )?(?:projects?|repos?|repositories|codebases?)\b|\beverywhere\b|\bglobally\b",
    re.IGNORECASE,
)


UNSCOPED = "unscoped"


def scope_for(category: str, text: str, source_project: str, reach: str = "") -> tuple[str, str]:
    """(project, scope) for a memory of ``category`` saying ``text``, from a source of
    ``source_project`` ("" when unknown); ``reach`` is the extractor's reading of the scope words
    (``project`` / ``all_projects``; anything else says nothing about projects)."""
    says_here = reach == "project" or (reach != "all_projects" and bool(_THIS_PROJECT.search(text)))
    says_everywhere = reach == "all_projects" or (reach != "project" and bool(_EVERY_PROJECT.search(text)))
    if category in GLOBAL_CATEGORIES:
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
