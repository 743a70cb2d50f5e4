"""Rule-based extractor used when there is no model (or with ``--offline``); docs/extraction.md.

Which pieces of the user's words are memories, and of what kind, is decided by
``longterm/detect.py`` (segmentation in ``clauses.py``, kinds of statement in ``kinds.py``, cue
words in ``templates/cues/``); this module turns each into a Memory Object with ``signal``,
``evidence`` and its ``statement`` but no score (the assessment stage scores them). A correction
is stored rule first ("Don't use moment. Use date-fns." -> "Use date-fns (instead of moment).").
Every other field (title, category, importance, keywords, scenarios, reason) is the field rules'
(``longterm/fields/``, docs/notes.md "Fields").
"""

from __future__ import annotations

from agentmem_vault.longterm.detect import find_statements
from agentmem_vault.longterm.filters import specificity_score, substance
from agentmem_vault.longterm.fields.derive import apply_fields
from agentmem_vault.longterm.fields.importance import RECORDED_MAX as RECORDED_MAX_IMPORTANCE
from agentmem_vault.longterm.kinds import WEIGHTS, reason_and_alternatives, retraction_parts, scope_words
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.longterm.statement import Statement
from agentmem_vault.longterm.wording import clean, restructure_correction

__all__ = ["RECORDED_MAX_IMPORTANCE", "extract_offline"]


def extract_offline(
    turns: list[Turn],
    *,
    sources: list[str] | None = None,
    project: str = "",
    first_turn: int = 0,
    recorded: bool = False,
    fields: bool = True,
) -> list[MemoryObject]:
    """Candidate Memory Objects from the user turns at index >= ``first_turn`` (earlier turns are
    context). ``recorded``: the turns come from a session snapshot (the agent's record: never an
    always-on rule). ``fields=False``: leave the field rules to the pipeline, which runs them after
    the assessment (they would be derived twice)."""
    out: list[MemoryObject] = []
    for f in find_statements(turns, first_turn=first_turn, recorded=recorded):
        # a rule said negatively first is stored rule first (not a decision's alternatives or a
        # pitfall's symptom)
        content = f.content if f.kind in ("decision", "pitfall") else restructure_correction(f.content)
        action = f.action
        if f.kind == "reversal":
            # the memory is the rule that replaces the old one; a reversal without one only
            # retires the rule it names (curation finds it by the words that name it)
            _, rest, _ = retraction_parts(content)
            if substance(rest) < 6:
                action = "delete"
            elif specificity_score(rest) or not specificity_score(content):
                content = clean(rest)  # else the new rule names nothing without the old one's words
        if not content:
            continue
        raw = " ".join(f.raw)
        words, reach = scope_words(raw)
        reason, alternatives = reason_and_alternatives(content)
        names = retraction_parts(raw)[0] if f.kind in ("reversal", "supplement") else ""
        importance = WEIGHTS.get(f.kind, (4, 0.7))[1]
        m = MemoryObject(
            action=action,
            title="",
            content=content,
            category="",
            keywords=[],
            usage_scenario=[],
            project=project,
            module="",
            importance=max(importance, 0.9) if f.asked else importance,
            reason="",
            score=None,  # the assessment stage scores every candidate (longterm/assess.py)
            sources=list(sources or []),
            signal="explicit" if f.asked else f.kind,
            evidence=raw,
        )
        m.statement = Statement(
            kind=f.kind,
            scope_words=words,
            reach=reach,
            said_at=turns[f.turn].at,
            order=f.turn,
            reason=reason,
            alternatives=alternatives if f.kind == "decision" else (),
            names=(names,) if names else (),
            recorded=recorded,
        )
        out.append(m)
    return apply_fields(out, turns, offline=True, recorded=recorded) if fields else out
