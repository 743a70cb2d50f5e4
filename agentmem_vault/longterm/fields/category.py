"""A memory's category by what the statement is (docs/notes.md, Category): a decision or a pitfall
keeps its kind, an environment fact is the environment's, and any other statement is filed by
what it is about, scored with the cues of ``templates/fields/category_cues.txt``."""

from __future__ import annotations

import re
from functools import lru_cache

from agentmem_vault.longterm.fields.data import _lines, pattern
from agentmem_vault.longterm.schema import CATEGORIES
from agentmem_vault.model.textnorm import fold

# A statement with no cue at all is most often a coding rule; it is also the safe side: a
# development rule stays in its project, where a user_* default would reach every project.
DEFAULT = "development_code_specification"
MIN_SCORE = 2
STRONG = 5  # a kind's category gives way only to this much evidence for another one
_BY_KIND = {
    "decision": "important_decision_experience",
    "pitfall": "common_pitfalls_experience",
    "environment": "project_environment_configuration",
}
# what plainly said words may turn a kind into: a decision names tools and settings and stays a
# decision; an "environment fact" that hardly speaks of the environment is what it speaks of (the
# stack: "資料庫用 PostgreSQL 15", a release rule: "打 tag 之前必須跑過 make lint test")
_USER = {"user_communication", "user_behavior"}
_OVERRIDES = {"decision": _USER, "pitfall": {*_USER, _BY_KIND["decision"]}, "environment": set(CATEGORIES)}


@lru_cache(maxsize=1)
def cues() -> tuple[tuple[str, tuple[tuple[int, re.Pattern[str]], ...]], ...]:
    """(category, ((weight, pattern), ...)) in file order; a category the file names twice or
    that is not one of the eleven is an error of the data file."""
    out: dict[str, list[tuple[int, re.Pattern[str]]]] = {}
    macros: dict[str, str] = {}
    current = ""
    for line in _lines("category_cues.txt"):
        if line.startswith("@"):  # "@name = alternatives", used as {name} in the cues below
            name, _, alts = line[1:].partition("=")
            macros[name.strip()] = alts.strip()
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            if current not in CATEGORIES or current in out:
                raise ValueError(f"category_cues.txt: unknown or repeated category {current!r}")
            out[current] = []
            continue
        # "w": whole words or identifiers ("test" must not fire inside "Test-Path", "env" in "venv")
        weight, how, pattern = line.split(" ", 2)
        for name, alts in macros.items():
            pattern = pattern.replace("{" + name + "}", alts)
        if not current or how not in ("w", "r"):
            raise ValueError(f"category_cues.txt: expected '<weight> w|r <pattern>' under a [category]: {line!r}")
        out[current].append((int(weight), re.compile(rf"(?<![\w.-])(?:{pattern})(?![\w-])" if how == "w" else pattern)))
    return tuple((cat, tuple(c)) for cat, c in out.items())


def scores(text: str) -> dict[str, int]:
    f = fold(text)
    return {cat: sum(w for w, p in cs if p.search(f)) for cat, cs in cues()}


@lru_cache(maxsize=4096)  # a pure function of the words: a rule restated in many chats is scored once
def category_for(text: str, kind: str = "") -> str:
    """The category of a statement saying ``text``, of the statement kind ``kind``
    (longterm/statement.py; the offline signal names the same kinds)."""
    # the rule, not its reason ("never %v - the tests use errors.Is"); but a pitfall's cause is its own
    found = scores(pattern("reason_marks.txt").split(fold(text), 1)[0] or text)
    found[_BY_KIND["pitfall"]] = scores(text)[_BY_KIND["pitfall"]]
    # one weak cue ("path", "settings") is not enough to leave the default
    best, best_score = max(
        ((c, n) for c, n in found.items() if n >= MIN_SCORE), key=lambda cn: cn[1], default=(DEFAULT, 0)
    )
    if kind in _BY_KIND:
        # the kind decides, unless its words hardly speak of it and plainly say how to answer the
        # user ("以後幫我留意：回覆先講結論" read as a decision) or that it was decided ("我們決定了，
        # …，因為…拖慢" read as a pitfall), as _OVERRIDES allows; how to answer may name the environment
        # it answers for ("給我命令的時候按 Linux 的來")
        own = _BY_KIND[kind]
        plain = best in _OVERRIDES[kind] and best_score >= STRONG and (found.get(own, 0) < MIN_SCORE or best in _USER)
        return best if plain else own
    return best
