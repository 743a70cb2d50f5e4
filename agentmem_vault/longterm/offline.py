"""Rule-based extractor used when there is no model (or with ``--offline``); docs/extraction.md.

Which pieces of the user's words are memories, and of what kind, is decided by
``longterm/detect.py`` (segmentation in ``clauses.py``, kinds of statement in ``kinds.py``, cue
words in ``templates/cues/``); this module turns each into the Memory Object the model would
produce, with ``signal``, ``evidence`` and its ``statement`` but no score: the assessment stage
scores them.

A correction is stored rule first ("Don't use moment. Use date-fns." -> "Use date-fns (instead of
moment)."). Title, category, keywords and usage scenarios come from the field rules
(``longterm/fields/``, docs/notes.md "Fields").
"""

from __future__ import annotations


from agentmem_vault.longterm.fields.category import category_for
from agentmem_vault.longterm.fields.keywords import keywords_for
from agentmem_vault.longterm.fields.scenarios import scenarios_for
from agentmem_vault.longterm.fields.title import title_for
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.longterm.detect import anaphoric_only, find_statements
from agentmem_vault.longterm.detect import substance
from agentmem_vault.longterm.kinds import WEIGHTS, classify, reason_and_alternatives, retraction_parts, scope_words
from agentmem_vault.longterm.wording import clean
from agentmem_vault.longterm.statement import Statement
from agentmem_vault.longterm.wording import restructure_correction

# the names the tests and older callers use
classify_sentence = classify
__all__ = ["anaphoric_only", "classify_sentence", "enumerated_items", "extract_offline", "restructure_correction"]


_REASONS = {
    "explicit": "the user explicitly asked for this to be kept",
    "correction": "the user corrected the assistant",
    "preference": "the user stated a preference",
    "decision": "the user stated a decision",
    "pitfall": "the user recorded a pitfall",
    "rule": "the user stated a rule",
    "environment": "the user described the environment",
    "convention": "the user set a convention",
    "reversal": "the user replaced an earlier rule",
    "supplement": "the user added to an earlier rule",
}
_RECORDED_REASON = "recorded as a decision in the session snapshot"


# A session snapshot is the agent's record of the work, not the user's own words: what it says
# can be an important decision, but only something the user asked for in a chat becomes a rule
# that is injected into every new chat (importance >= 0.9, see recall's rule index).
RECORDED_MAX_IMPORTANCE = 0.8


def _memory(
    content: str, raw: list[str], kind: str, *, sources: list[str] | None, project: str, recorded: bool, fields: bool
) -> MemoryObject:
    # the fields are the field rules' (longterm/fields/); the pipeline derives them once, after
    # the assessment (longterm/fields/derive.py), so that only a direct caller pays here
    title = title_for(content) if fields else ""
    category = category_for(f"{' '.join(raw)} {content}", kind) if fields else ""
    importance = WEIGHTS.get(kind, (4, 0.7))[1]
    keywords = keywords_for(content, title) if fields else []
    return MemoryObject(
        action="create",
        title=title,
        content=content,
        category=category,
        keywords=keywords,
        usage_scenario=scenarios_for(content, category, keywords) if fields else [],
        project=project,
        module="",
        importance=min(importance, RECORDED_MAX_IMPORTANCE) if recorded else importance,
        reason=_REASONS[kind],
        score=None,  # the assessment stage scores every candidate (longterm/assess.py)
        sources=list(sources or []),
        signal=kind,
        evidence=" ".join(raw),
    )


def enumerated_items(text: str) -> tuple[str, list[str]] | None:
    """(intro, items) when a user turn asks to remember several things at once."""
    from agentmem_vault.longterm.clauses import paragraphs
    from agentmem_vault.longterm.detect import enumerated

    return enumerated(paragraphs(text))


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
    context). Candidates carry ``signal``, ``evidence`` and their ``statement`` but no score: the
    assessment stage (``longterm.assess.assess_offline``) scores them and the pipeline keeps
    those >= 4.

    ``recorded``: the turns come from a session snapshot (see RECORDED_MAX_IMPORTANCE).
    ``fields=False``: leave title, keywords and scenarios to the pipeline's field rules, which
    run after the assessment (they would be derived twice)."""
    out: list[MemoryObject] = []
    for f in find_statements(turns, first_turn=first_turn, recorded=recorded):
        # a rule said negatively first is stored rule first (not for a decision's alternatives
        # or a pitfall's symptom)
        content = f.content if f.kind in ("decision", "pitfall") else restructure_correction(f.content)
        action = f.action
        if f.kind == "reversal":
            # the memory is the rule that replaces the old one; a reversal without one only
            # retires the rule it names (curation finds it by the words that name it)
            _, rest, _ = retraction_parts(content)
            content, action = (clean(rest), action) if substance(rest) >= 6 else (content, "delete")
        if not content:
            continue
        signal = "explicit" if f.asked else f.kind
        m = _memory(content, f.raw, signal, sources=sources, project=project, recorded=recorded, fields=fields)
        if f.asked:
            m.importance = max(m.importance, RECORDED_MAX_IMPORTANCE if recorded else 0.9)
        turn = turns[f.turn]
        if recorded and turn.section in ("decision", "superseded"):
            m.reason = _RECORDED_REASON
            m.category = "important_decision_experience"
        words, reach = scope_words(" ".join(f.raw))
        reason, alternatives = reason_and_alternatives(content)
        names = retraction_parts(" ".join(f.raw))[0] if f.kind in ("reversal", "supplement") else ""
        m.statement = Statement(
            kind=f.kind,
            scope_words=words,
            reach=reach,
            said_at=turn.at,
            order=f.turn,
            reason=reason,
            alternatives=alternatives if f.kind == "decision" else (),
            names=(names,) if names else (),
            recorded=recorded,
        )
        m.action = action
        out.append(m)
    return out
