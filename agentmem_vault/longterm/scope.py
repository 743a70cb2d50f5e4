"""Which project a memory belongs to (docs/projects.md).

- ``user_communication`` / ``user_behavior`` (how the user talks and works: language, tone, the
  tools they always use) are **global**, unless the words tie them to this project
  ("這個專案", "本项目", "in this repo", ...).
- Every other category (tech stack, build, conventions, pitfalls, decisions) belongs to the project
  of the source it came from, unless the words say it holds everywhere ("所有專案", "in every
  project", "always, in any repo").
- A source whose project is unknown gives global memories (there is no project to scope them to);
  the extraction report says so for that source.
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


def scope_for(category: str, text: str, source_project: str) -> tuple[str, str]:
    """(project, scope) for a memory of ``category`` saying ``text``, from a source of
    ``source_project`` ("" when unknown)."""
    says_here = bool(_THIS_PROJECT.search(text))
    says_everywhere = bool(_EVERY_PROJECT.search(text))
    if not source_project:
        return "", "global"
    if category in GLOBAL_CATEGORIES:
        return (source_project, "project") if says_here and not says_everywhere else ("", "global")
    if says_everywhere and not says_here:
        return "", "global"
    return source_project, "project"


def apply_scope(m: MemoryObject, source_project: str) -> MemoryObject:
    """Set ``m.project`` and ``m.scope`` by the rule above (the model's own ``project`` guess is
    not trusted: the source's workspace decides)."""
    text = " ".join([m.title, m.content, m.evidence])
    m.project, m.scope = scope_for(m.category, text, source_project)
    return m
