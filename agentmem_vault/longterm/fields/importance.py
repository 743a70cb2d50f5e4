"""Importance in the seed's bands (docs/notes.md, Fields, importance): 0.9-1.0 only for an explicit
request to remember, a red line or a correction of the assistant; 0.7-0.9 for rules, decisions and
stable preferences; 0.5-0.7 for experience. The words are data (``templates/fields/``); what the
statement is (a correction, a decision, a pitfall) comes from the extractor."""

from __future__ import annotations

from functools import lru_cache

from agentmem_vault.longterm.fields.data import pattern as _pattern, section
from agentmem_vault.model.textnorm import fold

EXPLICIT = 0.9
RED_LINE = 0.95
RULE = 0.8
PREFERENCE = 0.75
EXPERIENCE = 0.6
RECORDED_MAX = 0.8  # a snapshot is the agent's record, not the user's words: never an always-on rule


@lru_cache(maxsize=4096)  # pure functions of the words, asked of the same sentence several times
def asks_to_remember(words: str) -> bool:
    """The user asked in so many words for this to be kept ("記住", "keep in mind"); "from now on",
    "以後", "every time" only say how long a rule or a preference holds (0.7-0.9)."""
    return bool(_pattern("remember_requests.txt").search(fold(words)))


@lru_cache(maxsize=4096)
def is_red_line(words: str) -> bool:
    """A must-never about secrets, production or destructive operations (both on one side of a
    "so" / "otherwise"), or an absolute prohibition of anything ("絕對不能 commit")."""
    return any(
        _pattern("red_line_absolutes.txt").search(c)
        or (_pattern("red_lines.txt").search(c) and _pattern("red_line_prohibitions.txt").search(c))
        # the rule's own words, not its reason ("…不准再用 ref=main。原因是 … prod …")
        for c in section("statement_words.txt", "consequence").split(
            _pattern("reason_marks.txt").split(fold(words), 1)[0]
        )
    )


def importance_for(
    kind: str, words: str, *, corrects_assistant: bool = False, recorded: bool = False, request: str = ""
) -> float:
    """The importance of a statement of ``kind`` in the user's ``words``; ``request``: the words
    that may ask for it (the sentence of an enumeration's item), ``words`` when not given."""
    request = request or words
    if recorded:
        return min(RECORDED_MAX, RED_LINE if is_red_line(words) else EXPERIENCE if kind == "pitfall" else RULE)
    if is_red_line(words):
        return RED_LINE
    if kind == "pitfall":  # experience: only an explicit "remember this" makes it more
        return EXPLICIT if asks_to_remember(request) else EXPERIENCE
    # a correction is one only when the caller found what it corrects (``corrects_assistant``)
    if corrects_assistant or asks_to_remember(request):
        return EXPLICIT
    return PREFERENCE if kind == "preference" else RULE
