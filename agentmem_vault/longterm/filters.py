"""Quality layers after extraction and assessment (docs/extraction.md, "Quality gate"): technical
specificity as a real gate (no specificity signal and no explicit request = dropped), bilingual
vague-phrase lists (data files), generic-principle detection, minimum substance, the assessment
threshold, and a guard against notes that carry injected instructions.

Every rejection comes with a reason so that a run can say what it skipped and why.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentmem_vault.model.textnorm import fold
from agentmem_vault.longterm import lexicon as lx
from agentmem_vault.longterm.schema import MemoryObject

# The vague-phrase lists, general principles and technical vocabulary are data files under
# templates/quality/ (see longterm/lexicon.py).

MIN_SUBSTANCE = 8
MIN_SUBSTANCE_SPECIFIC = 4  # "後端用 FastAPI": short, but it names the thing
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#.-]+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![\w.])")


@lru_cache(maxsize=1024)  # a candidate is scored by assess_offline, then by quality_reason
def specificity_score(text: str) -> int:
    """Sum of hits of the technical-specificity patterns (``templates/quality/specificity.txt``)
    and of the technical vocabulary (a density, not a yes/no)."""
    return sum(len(p.findall(text)) for p in lx.specificity_patterns()) + len(lx.tech_terms().hits(fold(text)))


def substance(text: str) -> int:
    """Rough amount of meaning: CJK characters + 3 per Latin word or number ("Node 20")."""
    return len(_CJK.findall(text)) + 3 * len(_LATIN_WORD.findall(text)) + 3 * len(_NUMBER.findall(text))


def vague_hits(text: str) -> list[str]:
    return lx.vague_phrases().hits(fold(text))


def _is_generic_principle(text: str) -> bool:
    return bool(lx.generic_principles().hits(fold(text)))


def _without_principles(text: str) -> str:
    # "Follow DRY and KISS" must not count its own acronyms as technical specificity.
    f = fold(text)
    for p in lx.generic_principles().cjk:
        f = f.replace(p, " ")
    rx = lx.generic_principles().latin_re
    return rx.sub(" ", f) if rx is not None else f


def is_explicit(m: MemoryObject) -> bool:
    """The user asked for this in so many words (offline signal, or the assessor's 5)."""
    return m.signal == "explicit" or (m.signal == "" and m.score == 5)


def injection_reason(m: MemoryObject) -> str | None:
    if m.title.lstrip().startswith(("../", "..\\")):
        return "refused: looks like path traversal ('../')"  # a title names a file: never a path
    blob = "\n".join([m.title, m.content, " ".join(m.keywords), " ".join(m.usage_scenario), m.project, m.module])
    for why, pat in lx.injection_patterns():  # templates/quality/injection.txt
        if pat.search(blob):
            return f"refused: looks like {why}"
    return None


def quality_reason(m: MemoryObject, *, min_score: int = 4) -> str | None:
    """None when the memory passes every layer, else why it was dropped."""
    if m.action == "ignore":
        return "the extractor marked it ignore"
    bad = injection_reason(m)
    if bad:
        return bad
    body = f"{m.title}\n{m.content}"
    spec = specificity_score(body)
    if substance(m.content) < (MIN_SUBSTANCE_SPECIFIC if spec else MIN_SUBSTANCE):
        return "too little substance"
    hits = vague_hits(body)
    if hits and spec == 0:
        return f"vague ({hits[0]!r}) and not specific"
    if _is_generic_principle(m.content) and specificity_score(_without_principles(body)) <= 1:
        return "a generic engineering principle"
    if spec == 0 and not is_explicit(m) and m.action != "delete":
        # the specificity gate (docs/extraction.md): nothing concrete and nobody asked for it
        return "no specificity signal and no explicit request"
    if m.action != "delete" and m.score is not None and m.score < min_score:
        return f"assessed {m.score} < {min_score}"
    return None


def filter_memories(
    mems: list[MemoryObject], *, min_score: int = 4
) -> tuple[list[MemoryObject], list[tuple[MemoryObject, str]]]:
    kept: list[MemoryObject] = []
    dropped: list[tuple[MemoryObject, str]] = []
    for m in mems:
        why = quality_reason(m, min_score=min_score)
        if why:
            dropped.append((m, why))
        else:
            kept.append(m)
    return kept, dropped
