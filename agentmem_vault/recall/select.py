"""Which ranked memories a context lists (the floor and the relative cutoff, docs/recall.md).

Its own module, free of ``dataclasses`` and the board parser, so that the prompt hook
(recall/prompt.py) applies the same rule as ``agentmem context`` without their import cost.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentmem_vault.recall.rank import Hit

# Which ranked memories `context` lists (tuned on tests/fixtures/recall: queries.json, long_tasks.json,
# and at 10,000 notes by benchmarks/bench_recall.py). Absolute floor: a memory must contain informative
# tokens of the task worth MIN_EVIDENCE tokens that no note has (Hit.evidence), or MIN_COVERAGE of the
# whole task (IDF-weighted) - whichever is less, so a short task keeps the old share rule. The share
# alone dropped the right note for a long, wordy task: 3-4 sentences leave the note they are about
# at 7-15% coverage. Relative cutoff: keyword relevance within RELATIVE_CUTOFF of the top hit's.
MIN_COVERAGE = 0.18
MIN_EVIDENCE = 2.0
RELATIVE_CUTOFF = 0.5


def passes_floor(h: Hit) -> bool:
    """Enough of the task's informative tokens: MIN_EVIDENCE tokens' worth, or MIN_COVERAGE of a short task."""
    return h.evidence >= MIN_EVIDENCE or h.coverage >= MIN_COVERAGE


def select_memories(hits: list[Hit], *, limit: int, matchable: bool = True) -> list[Hit]:
    """The memories to list, in search order. Nothing unless the top hit passes the floor; then the
    top hit and the lower ones that pass it, down to the first whose keyword relevance is below
    RELATIVE_CUTOFF of the top hit's. So the strongest memory is never left out while a weaker one
    is listed. A task with nothing to match on (``matchable`` false) lists the notes as ranked
    (most important, most recent)."""
    if not matchable:
        return hits[:limit]
    if not hits or not passes_floor(hits[0]):
        return []
    out = [hits[0]]
    for h in hits[1:]:
        if len(out) >= limit:
            break
        if not passes_floor(h):
            continue
        if h.relevance < RELATIVE_CUTOFF * out[0].relevance:
            break
        out.append(h)
    return out
