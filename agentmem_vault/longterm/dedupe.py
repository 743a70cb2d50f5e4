"""In-batch de-duplication by character 3-gram shingles (docs/extraction.md, layer 4): Jaccard > 0.55 or
containment > 0.75 means the same knowledge; the more complete memory is kept, not the first.

Shingles alone cannot tell "service-3 logs go to …" from "service-7 logs go to …": nearly every
3-gram is shared. Two texts whose identifiers (numbers, code tokens, names) each include one the
other lacks state different facts and are never merged; one whose identifiers are a subset of the
other's may still be the same fact said less completely.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from agentmem_vault.model.textnorm import fold
from agentmem_vault.longterm.schema import MemoryObject

JACCARD = 0.55
CONTAINMENT = 0.75
MIN_SHINGLES_FOR_CONTAINMENT = 8  # a tiny text is "contained" in almost anything
KEYWORD_WEIGHT = 0.15  # added to the text similarity at full keyword overlap
CATEGORY_WEIGHT = 0.05  # added for the same category, taken off for a different one


@lru_cache(maxsize=4096)  # curation compares every candidate with every note: each text is cut once
def shingles(text: str, n: int = 3) -> frozenset[str]:
    clean = fold(text)
    if len(clean) < n:
        return frozenset([clean] if clean else [])
    return frozenset(clean[i : i + n] for i in range(len(clean) - n + 1))


def similarity(a: frozenset[str], b: frozenset[str]) -> tuple[float, float]:
    """(Jaccard, containment of the smaller set in the larger)."""
    if not a or not b:
        return 0.0, 0.0
    inter = len(a & b)
    jac = inter / len(a | b)
    small = min(len(a), len(b))
    cont = inter / small if small >= MIN_SHINGLES_FOR_CONTAINMENT else 0.0
    return jac, cont


_WORD_RE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-/:@+#]*[A-Za-z0-9_])?")
_CODE_RE = re.compile(r"[0-9]|[_./:@]|[a-z][A-Z]")
_SENTENCE_START = frozenset(".!?;:\n-*#>([{\"'`|。！？；：「『（【")


@lru_cache(maxsize=4096)
def identifiers(text: str) -> frozenset[str]:
    """The tokens that pin a statement to one thing (case-folded): anything with a digit, code-like
    tokens (``sms.verify``, ``billing_events``, ``/var/log``, ``camelCase``), and capitalised words
    in mid-sentence (names such as ``Alice``, ``Postgres``, ``CI``). Plain hyphenated words
    (``long-term``) and the capitalised first word of a sentence are not identifiers."""
    text = unicodedata.normalize("NFKC", text)
    out: set[str] = set()
    for mt in _WORD_RE.finditer(text):
        tok = mt.group()
        if _CODE_RE.search(tok):
            out.add(tok.casefold())
            continue
        if len(tok) < 2 or not tok[0].isupper():
            continue
        before = text[: mt.start()].rstrip(" \t")
        if before and before[-1] not in _SENTENCE_START:
            out.add(tok.casefold())
    return frozenset(out)


def identifiers_conflict(a: frozenset[str], b: frozenset[str]) -> bool:
    """Each side names something the other does not: two different facts."""
    return bool(a - b) and bool(b - a)


def _folded(items: list[str]) -> set[str]:
    return {fold(x) for x in items if x.strip()}


def scope_conflict(a: Any, b: Any) -> bool:
    """Two memories scoped to different projects (or modules) are different memories."""
    for attr in ("project", "module"):
        x, y = fold(getattr(a, attr, "") or ""), fold(getattr(b, attr, "") or "")
        if x and y and x != y:
            return True
    return False


def same_memory(a_sh: frozenset[str], b_sh: frozenset[str], a: Any, b: Any) -> bool:
    """Text similarity weighed with the structured fields: shared keywords and the same category
    pull two texts together, a different category pushes them apart; different scopes never match."""
    if scope_conflict(a, b):
        return False
    jac, cont = similarity(a_sh, b_sh)
    ka, kb = _folded(getattr(a, "keywords", []) or []), _folded(getattr(b, "keywords", []) or [])
    kw = len(ka & kb) / len(ka | kb) if ka and kb else 0.0
    same_cat = (getattr(a, "category", "") or "") == (getattr(b, "category", "") or "")
    bonus = KEYWORD_WEIGHT * kw + (CATEGORY_WEIGHT if same_cat else -CATEGORY_WEIGHT)
    return jac + bonus > JACCARD or cont + bonus > CONTAINMENT


def completeness(m: MemoryObject) -> tuple:
    return (len(m.content) + 8 * len(m.keywords) + 8 * len(m.usage_scenario), m.score or 0, m.importance)


def said_later(a: MemoryObject, b: MemoryObject) -> bool | None:
    """Whether ``a`` was said after ``b``: by statement time, then by turn within one source;
    None when that cannot be told."""
    if a.source_time and b.source_time and a.source_time != b.source_time:
        return a.source_time > b.source_time
    sa, sb = a.statement, b.statement
    if sa is not None and sb is not None and a.sources[:1] == b.sources[:1] and sa.order != sb.order:
        return sa.order > sb.order
    return None


def dedupe_batch(mems: list[MemoryObject]) -> tuple[list[MemoryObject], list[tuple[MemoryObject, str]]]:
    """Keep one memory per duplicate group (the more complete), merging the sources."""
    kept: list[tuple[MemoryObject, frozenset[str], frozenset[str]]] = []
    dropped: list[tuple[MemoryObject, str]] = []
    for m in mems:
        text = f"{m.title}\n{m.content}"
        sh, ids = shingles(text), identifiers(text)
        for i, (k, ksh, kids) in enumerate(kept):
            if identifiers_conflict(ids, kids):
                continue  # "service-3 …" and "service-7 …": both are knowledge
            if scope_conflict(m, k):
                continue
            if (fold(k.title) == fold(m.title) and k.action == m.action) or same_memory(sh, ksh, m, k):
                # What the user said last wins (never backwards, docs/extraction.md); between
                # statements of one time, the one that names everything the other names, then
                # the more complete.
                later = said_later(m, k)
                m_first = (
                    later if later is not None else (ids >= kids, completeness(m)) > (kids >= ids, completeness(k))
                )
                winner, loser = (m, k) if m_first else (k, m)
                for s in loser.sources:
                    if s not in winner.sources:
                        winner.sources.append(s)
                winner.score = max(winner.score or 0, loser.score or 0) or None
                winner.source_time = max(winner.source_time, loser.source_time)
                kept[i] = (winner, sh, ids) if winner is m else (k, ksh, kids)
                dropped.append((loser, f"duplicate of {winner.title!r} in this run"))
                break
        else:
            kept.append((m, sh, ids))
    return [k for k, _, _ in kept], dropped
