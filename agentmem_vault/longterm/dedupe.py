"""In-batch de-duplication by character 3-gram shingles (seed 001, layer 4): Jaccard > 0.55 or
containment > 0.75 means the same knowledge; the more complete memory is kept, not the first."""

from __future__ import annotations

from ..textnorm import fold
from .schema import MemoryObject

JACCARD = 0.55
CONTAINMENT = 0.75
MIN_SHINGLES_FOR_CONTAINMENT = 8  # a tiny text is "contained" in almost anything


def shingles(text: str, n: int = 3) -> set[str]:
    clean = fold(text)
    if len(clean) < n:
        return {clean} if clean else set()
    return {clean[i : i + n] for i in range(len(clean) - n + 1)}


def similarity(a: set[str], b: set[str]) -> tuple[float, float]:
    """(Jaccard, containment of the smaller set in the larger)."""
    if not a or not b:
        return 0.0, 0.0
    inter = len(a & b)
    jac = inter / len(a | b)
    small = min(len(a), len(b))
    cont = inter / small if small >= MIN_SHINGLES_FOR_CONTAINMENT else 0.0
    return jac, cont


def is_duplicate(a: set[str], b: set[str]) -> bool:
    jac, cont = similarity(a, b)
    return jac > JACCARD or cont > CONTAINMENT


def memory_text(m: MemoryObject) -> str:
    return f"{m.title}\n{m.content}"


def completeness(m: MemoryObject) -> tuple:
    return (len(m.content) + 8 * len(m.keywords) + 8 * len(m.usage_scenario), m.score or 0, m.importance)


def dedupe_batch(mems: list[MemoryObject]) -> tuple[list[MemoryObject], list[tuple[MemoryObject, str]]]:
    """Keep one memory per duplicate group (the more complete), merging the sources."""
    kept: list[tuple[MemoryObject, set[str]]] = []
    dropped: list[tuple[MemoryObject, str]] = []
    for m in mems:
        sh = shingles(memory_text(m))
        for i, (k, ksh) in enumerate(kept):
            if (fold(k.title) == fold(m.title) and k.action == m.action) or is_duplicate(sh, ksh):
                winner, loser = (m, k) if completeness(m) > completeness(k) else (k, m)
                for s in loser.sources:
                    if s not in winner.sources:
                        winner.sources.append(s)
                winner.score = max(winner.score or 0, loser.score or 0) or None
                kept[i] = (winner, sh if winner is m else ksh)
                dropped.append((loser, f"duplicate of {winner.title!r} in this run"))
                break
        else:
            kept.append((m, sh))
    return [k for k, _ in kept], dropped
