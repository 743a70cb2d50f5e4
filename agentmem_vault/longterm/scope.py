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


# A preference in the first person about how code is written, tested or delivered is the user's
# own taste, not a project's: it follows them into every project unless the words tie it to this
# one ("I prefer f-strings", "我習慣先看測試"). Tools, stack, build and environment stay the project's.
TASTE_CATEGORIES = frozenset(
    {"development_code_specification", "development_test_specification", "development_practice_specification"}
)
_PERSONAL = re.compile(
    r"\bi(?:'d| would)? (?:really |much |strongly )?(?:prefer|like|love|hate|dislike|can'?t stand|rather)\b|\bi'?m used to\b|"
    r"我(?:比較|比较|更|很|真的|一直)?(?:喜歡|喜欢|偏好|偏愛|偏爱|傾向|倾向|習慣|习惯|討厭|讨厌|不喜歡|不喜欢|受不了)",
    re.IGNORECASE,
)


def scope_for(category: str, text: str, source_project: str, reach: str = "") -> tuple[str, str]:
    """(project, scope) for a memory of ``category`` saying ``text``, from a source of
    ``source_project`` ("" when unknown); ``reach`` is the extractor's reading of the scope words
    (``project`` / ``all_projects``; anything else says nothing about projects)."""
    says_here = reach == "project" or (reach != "all_projects" and bool(_THIS_PROJECT.search(text)))
    says_everywhere = reach == "all_projects" or (reach != "project" and bool(_EVERY_PROJECT.search(text)))
    if category in GLOBAL_CATEGORIES or (category in TASTE_CATEGORIES and _PERSONAL.search(text)):
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
