"""A memory's category by what the statement is (docs/notes.md, Category): a naive Bayes scorer
over the statement's words, the kind of statement the extractor found and the cue words of
``templates/fields/category_cues.txt`` that occur, with the counts learned from the labelled
development sets (``templates/fields/category_model.tsv``, written by
``scripts/train_categories.py``; never from a held-out set)."""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache, reduce

from agentmem_vault.longterm.fields.data import _lines, damaged, pattern
from agentmem_vault.longterm.schema import CATEGORIES
from agentmem_vault.model.textnorm import fold

# No evidence at all is most often a coding rule; it is also the safe side: a development rule
# stays in its project, where a user_* default would reach every project.
DEFAULT = "development_code_specification"
MIN_SCORE = 2  # one weak cue ("path", "settings") is no evidence
# how much the kind the extractor found, a cue that occurs and the cues' best category weigh
# against one word (chosen by leaving each development set out, docs/notes.md "Category");
# ALPHA: add-alpha smoothing
KIND_WEIGHT, CUE_WEIGHT, TOP_WEIGHT, ALPHA = 3, 2, 2, 0.1
MODEL = "category_model.tsv"  # written by scripts/train_categories.py
_TOKEN = re.compile(r"[a-z0-9_][\w.+#/-]*|[\u3400-\u9fff]+")


@lru_cache(maxsize=1)
def cues() -> tuple[tuple[str, tuple[tuple[int, re.Pattern[str]], ...]], ...]:
    """(category, ((weight, pattern), ...)) in file order; a category the file names twice or
    that is not one of the eleven is an error of the data file."""
    out: dict[str, list[tuple[int, re.Pattern[str]]]] = {}
    macros: dict[str, str] = {}
    for line in _lines("category_cues.txt"):
        if line.startswith("@"):  # "@name = alternatives", used as {name} in the cues below
            name, _, alts = line[1:].partition("=")
            macros["{" + name.strip() + "}"] = alts.strip()
        elif line.startswith("[") and line.endswith("]"):
            if (current := line[1:-1]) not in CATEGORIES or current in out:
                raise damaged("category_cues.txt", f"unknown or repeated category {current!r}")
            out[current] = []
        elif len(parts := line.split(" ", 2)) < 3 or parts[1] not in ("w", "r") or not out:
            raise damaged("category_cues.txt", f"expected '<weight> w|r <pattern>' under a [category]: {line!r}")
        else:  # "w": whole words or identifiers ("test" must not fire inside "Test-Path", "env" in "venv")
            p = reduce(lambda p, macro: p.replace(*macro), macros.items(), parts[2])
            out[next(reversed(out))].append(
                (int(parts[0]), re.compile(rf"(?<![\w.-])(?:{p})(?![\w-])" if parts[1] == "w" else p))
            )
    return tuple((cat, tuple(c)) for cat, c in out.items())


def scores(text: str) -> dict[str, int]:
    f = fold(text)
    return {cat: sum(w for w, p in cs if p.search(f)) for cat, cs in cues()}


def features(text: str, kind: str) -> Counter[str]:
    """What the scorer reads of a statement: its words (the rule's, not its reason's: "never %v -
    the tests use errors.Is" is a coding rule), ``kind:<kind>``, ``cue:<category>`` for every
    category whose cues occur (a pitfall's cause is its own: a pitfall is scored with its cause
    clause, anything else without its reason) and
    ``top:<category>`` for the one(s) they score highest."""
    from agentmem_vault.longterm.fields.segment import cut

    folded = fold(text)
    rule = pattern("reason_marks.txt").split(folded, 1)[0] or folded
    words = Counter(
        {w: 1 for m in _TOKEN.finditer(rule) for w in (cut(m[0]) if m[0][0] >= "\u3400" else (m[0].strip(".-/"),)) if w}
    )
    words[f"kind:{kind}"] = KIND_WEIGHT
    found = scores(rule)
    if kind == "pitfall":  # a rule's story ("the only raw query we had silently broke") is its reason
        found["common_pitfalls_experience"] = scores(folded)["common_pitfalls_experience"]
    words.update({f"cue:{c}": CUE_WEIGHT for c, n in found.items() if n >= MIN_SCORE})
    # and the cue list's own answer, its best score, unless the extractor found what it is
    if kind != "pitfall" and (best := max(found.values())) >= MIN_SCORE:
        words.update({f"top:{c}": TOP_WEIGHT for c, n in found.items() if n == best})
    return words


@lru_cache(maxsize=1)
def model() -> tuple[dict[str, float], dict[str, dict[str, float]], dict[str, float]]:
    """(log prior, log P(feature | category) where the category had the feature, the same where it
    had not) from the counts of ``category_model.tsv`` ("<feature>\t<category>=<n>\t...")."""
    try:
        rows = {
            h: {c: int(n) for c, _, n in (x.rpartition("=") for x in xs)} for h, *xs in map(str.split, _lines(MODEL))
        }
    except ValueError as exc:
        raise damaged(MODEL, exc) from exc
    docs, vocab = rows.pop("@docs", {}), max(1, len(rows))
    if not docs or set(docs) - set(CATEGORIES) or any(k <= 0 for k in docs.values()):
        raise damaged(MODEL, "no '@docs' line, or a category that is not one of the eleven")
    n = sum(docs.values())
    totals = {c: sum(r.get(c, 0) for r in rows.values()) + ALPHA * vocab for c in docs}
    logp = {f: {c: math.log((k + ALPHA) / totals[c]) for c, k in r.items()} for f, r in rows.items()}
    return {c: math.log(k / n) for c, k in docs.items()}, logp, {c: math.log(ALPHA / t) for c, t in totals.items()}


@lru_cache(maxsize=4096)  # a pure function of the words: a rule restated in many chats is scored once
def category_for(text: str, kind: str = "") -> str:
    """The category of a statement saying ``text``, of the statement kind ``kind``
    (longterm/statement.py; the offline signal names the same kinds)."""
    prior, logp, unseen = model()
    known = [(f, k) for f, k in features(text, kind).items() if f in logp]
    if not any(not f.startswith("kind:") for f, _ in known):
        # nothing but the kind: a decision or a pitfall keeps it, anything else is the default
        return {"decision": "important_decision_experience", "pitfall": "common_pitfalls_experience"}.get(kind, DEFAULT)
    score = {c: p + sum(k * logp[f].get(c, unseen[c]) for f, k in known) for c, p in prior.items()}
    return max(score, key=lambda c: score[c])
