"""The assessment stage, offline: a rule-based scorer on the same 1-5 scale as the model's
assessment prompt (docs/extraction.md, "Assessment"). Offline and model mode share one flow:
extract candidates, assess each one, keep those scoring >= ``min_score`` (4), and store the score
and its reason in the note.

The scale, as the assessment prompt states it, leaning low:

- 5: the user explicitly asked for it to be remembered or to hold from now on;
- 4: a specific, actionable rule, preference, correction, decision or pitfall the user stated;
- 3: unsure / borderline (no specificity signal and no explicit request): dropped;
- 2: a general engineering principle, or an explicit request whose content is only vague;
- 1: a one-off task detail, a vague or obvious statement, or too little to act on.
"""

from __future__ import annotations

from agentmem_vault.longterm.cues import has
from agentmem_vault.longterm.filters import (
    MIN_SUBSTANCE,
    MIN_SUBSTANCE_SPECIFIC,
    _is_generic_principle,
    _without_principles,
    specificity_score,
    substance,
    vague_hits,
)
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.model.textnorm import fold


def assess_offline(m: MemoryObject) -> tuple[int, str]:
    """(score 1-5, reason) for one candidate of the offline extractor; the reason explains the
    score before it is given, as the model's assessment does."""
    body = f"{m.title}\n{m.content}"
    said = fold(m.evidence or m.content)
    spec = specificity_score(body)
    vague = vague_hits(body)
    if substance(m.content) < (MIN_SUBSTANCE_SPECIFIC if spec else MIN_SUBSTANCE):
        return 1, "Too short to act on without the conversation."
    if has("one_off", said) and m.signal not in ("explicit", "pitfall"):  # a pitfall names its symptom
        return 1, "A detail of the current task (one-off wording), not a general rule."
    if vague and spec == 0:
        if m.signal == "explicit" and has("remember", said):
            return 5, f"Vague ({vague[0]!r}), but the user explicitly asked to remember it."
        if m.signal == "explicit":
            return 2, f"Asked to hold from now on, but only vague ({vague[0]!r}) and not actionable."
        return 1, f"Vague or obvious ({vague[0]!r}) with nothing specific to act on."
    if _is_generic_principle(m.content) and specificity_score(_without_principles(body)) <= 1:
        return 2, "A general engineering principle every developer knows."
    if m.signal == "explicit":
        return 5, "The user explicitly asked for this to be remembered or to hold from now on."
    if spec == 0:
        return 3, "No specificity signal (tool, file, command, setting) and no explicit request: unsure."
    what = {
        "correction": "The user corrected the assistant with a specific rule",
        "preference": "A specific, actionable preference the user stated",
        "decision": "A technical decision the user stated",
        "pitfall": "A specific pitfall the user recorded",
    }.get(m.signal, "A specific, actionable rule from the user")
    return 4, f"{what}; it is general, not tied to one file or task."


def assess_all_offline(cands: list[MemoryObject]) -> list[MemoryObject]:
    """Score every candidate in place (the caller keeps those >= min_score)."""
    for m in cands:
        m.score, m.assessment_reason = assess_offline(m)
    return cands
