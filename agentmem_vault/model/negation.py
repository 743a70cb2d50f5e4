"""Negation and questions around a trigger phrase (docs/triggers.md, "Negation and questions").

``不要整理 memory``, ``do not organize memory``, ``never archive ID`` and ``要整理 memory 嗎？`` name a
command without asking for it. The rule is by form, not by phrase: within the trigger's clause, a
negation word before the trigger negates it, and a question mark ending the clause (or a question
particle or word in it) makes it a question. The words are data (``templates/negation.yaml``).

Pure: folded text and the trigger's span in, the word that was understood (or None) out.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from agentmem_vault.errors import UsageError
from agentmem_vault.model import template_mapping
from agentmem_vault.model.textnorm import fold


class Rules(NamedTuple):
    breaks: re.Pattern[str]  # clause breaks; group "q" is a question mark
    zh_negation: tuple[str, ...]
    en_negation: frozenset[str]
    en_suffixes: tuple[str, ...]
    particles: tuple[str, ...]
    zh_question: tuple[str, ...]


class Negation(NamedTuple):
    kind: str  # "negation" or "question"
    word: str  # what was understood ("不要", "do not", "?")


def _words(section: dict, key: str) -> list[str]:
    return [fold(str(w)) for w in (section.get(key) or [])]


def rules_from_table(table: dict) -> Rules:
    try:
        neg, ques, brk = table["negation"], table["question"], table["clause_breaks"]
    except (KeyError, TypeError) as exc:
        raise UsageError(f"templates/negation.yaml: missing section {exc}") from exc
    marks = [re.escape(m) for m in _words(brk, "marks")]
    zh = [re.escape(w) for w in _words(brk, "chinese")]
    en = [r"\b" + r"\s+".join(map(re.escape, w.split())) + r"\b" for w in _words(brk, "english")]
    qmarks = "|".join(re.escape(m) for m in _words(ques, "marks")) or r"(?!)"
    breaks = re.compile(f"(?P<q>{qmarks})|" + "|".join(marks + zh + en or [r"(?!)"]))
    return Rules(
        breaks,
        tuple(_words(neg, "chinese")),
        frozenset(w.replace("'", "") for w in _words(neg, "english")),
        tuple(_words(neg, "english_suffix")),
        tuple(_words(ques, "chinese_particles")),
        tuple(_words(ques, "chinese")),
    )


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    return rules_from_table(template_mapping("negation.yaml"))


_EN_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")


def _negation_in(text: str, rules: Rules) -> str | None:
    for w in rules.zh_negation:
        if w in text:
            return w
    for tok in _EN_TOKEN.findall(text):
        if tok.replace("'", "") in rules.en_negation or tok.endswith(rules.en_suffixes):
            return tok
    return None


def negated(folded: str, start: int, end: int, rules: Rules | None = None) -> Negation | None:
    """Whether the trigger at ``folded[start:end]`` is negated or asked about in its clause."""
    rules = rules or load_rules()
    folded = folded.replace("\u2019", "'")
    clause_start, clause_end, question = 0, len(folded), False
    for m in rules.breaks.finditer(folded):
        if m.end() <= start:
            clause_start = m.end()
        elif m.start() >= end:
            clause_end, question = m.start(), m.group("q") is not None
            break
    before, after = folded[clause_start:start], folded[end:clause_end]
    word = _negation_in(before, rules)
    if word:
        # Shown as the user typed it, from the negation on ("不要", "do not", "never").
        return Negation("negation", before[before.index(word) :].strip() if word in before else word)
    if question:
        return Negation("question", "?")
    tail = after.strip()
    for p in rules.particles:
        if tail.endswith(p):
            return Negation("question", p)
    for w in rules.zh_question:
        if w in before or w in after:
            return Negation("question", w)
    return None
