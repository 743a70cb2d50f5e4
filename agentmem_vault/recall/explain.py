"""``agentmem context TASK --explain``: why each memory was chosen or left out, in the words of
docs/recall.md, "Why these memories". A pure reading of what ``build_context`` weighed
(``ContextResult``); notes of other projects that match the task are listed too, as left out by
scope, so that a user who misses one sees why.
"""

from __future__ import annotations

from agentmem_vault.recall.context import ContextResult
from agentmem_vault.recall.select import MIN_COVERAGE, MIN_EVIDENCE, RELATIVE_CUTOFF, passes_floor
from agentmem_vault.recall.rank import WEIGHTS, WEIGHTS_SEMANTIC, Hit
from agentmem_vault.recall.location import RULE_IMPORTANCE


def _parts(h: Hit) -> dict:
    d = {k: round(getattr(h, k), 4) for k in ("score", "relevance", "bm25", "coverage", "evidence", "recency")}
    d["importance"] = h.importance
    if h.semantic is not None:
        d["semantic"] = round(h.semantic, 4)
    return d


def _item(h: Hit, decision: str, reason: str) -> dict:
    return {
        "id": h.id,
        "title": h.title,
        "file": h.rel_path,
        "applies": f"project {h.project}" if h.project else "global",
        "decision": decision,
        "reason": reason,
        **_parts(h),
    }


def _left_out(h: Hit, res: ContextResult) -> str:
    """Why a ranked memory is not in the Markdown."""
    if any(h is s for s in res.selected):
        return f"selected, but over the budget of {res.budget} characters"
    if not passes_floor(h):
        return (
            f"below the floor: it shares too little of the task (evidence {h.evidence:.2f} < {MIN_EVIDENCE}, "
            f"coverage {h.coverage:.2f} < {MIN_COVERAGE})"
        )
    top = res.ranked[0] if res.ranked else None
    if top is not None and not passes_floor(top):
        return "the best match is below the floor, so no memory is listed"
    if top is not None and h.relevance < RELATIVE_CUTOFF * top.relevance:
        return (
            f"below the relative cutoff: relevance {h.relevance:.2f} < {RELATIVE_CUTOFF} x the best match's "
            f"{top.relevance:.2f}"
        )
    return f"over --limit {res.limit}"


def explain(res: ContextResult, others: list[Hit] | None = None) -> dict:
    """Every memory weighed for ``res``, with its decision and reason; ``others``: matches from
    outside the scope (another project's), listed as left out by scope."""
    items: list[dict] = []
    shown = {id(h): "rule" for h in res.rules}
    shown.update({id(h): "full" for h in res.full})
    shown.update({id(h): "brief" for h in res.brief})
    for h in res.rule_candidates:
        if id(h) in shown:
            items.append(_item(h, "rule", f"a rule (importance {h.importance} >= {RULE_IMPORTANCE}): always first"))
        else:
            items.append(_item(h, "left out", "a rule, but over the rules' share of the budget"))
    for h in res.ranked:
        kind = shown.get(id(h))
        if kind == "full":
            items.append(_item(h, "full", "among the strongest matches: shown in full"))
        elif kind == "brief":
            items.append(_item(h, "brief", "a match past the strongest: one line (ask for details)"))
        else:
            items.append(_item(h, "left out", _left_out(h, res)))
    seen = {h.rel_path for h in res.rule_candidates} | {h.rel_path for h in res.ranked}
    for h in others or []:
        if h.rel_path in seen:
            continue
        if h.project:
            why = f"another project's ({h.project}): ask with --project {h.project} or --all-projects"
            items.append(_item(h, "left out", why))
        else:  # outside every scope and not global: unscoped (docs/projects.md)
            why = "its project is unknown (scope unscoped), so it reaches no chat: `agentmem memories move ID --project NAME | --global`"
            items.append({**_item(h, "left out", why), "applies": "unscoped"})
    semantic = any(h.semantic is not None for h in res.ranked)
    return {
        "formula": WEIGHTS_SEMANTIC if semantic else WEIGHTS,
        "budget": res.budget,
        "chars": len(res.markdown),
        "limit": res.limit,
        "scope": res.scope,
        "memories": items,
        "sessions": [
            {"id": s.session_id, "relevance": s.relevance, "recent_only": s.recent_only} for s in res.sessions
        ],
    }


def render_explain(ex: dict) -> str:
    """The human form: one line per memory, its decision first."""
    scope = ex.get("scope") or {}
    where = (
        "every project"
        if scope.get("all_projects")
        else (f"project {scope['project']}" if scope.get("project") else "global memories only")
    )
    formula = " + ".join(f"{w:g} x {k}" for k, w in ex["formula"].items())
    lines = [
        f"Why these memories ({where}; {ex['chars']} of {ex['budget']} characters; --limit {ex['limit']})",
        f"score = {formula}",
    ]
    for m in ex["memories"]:
        parts = f"score {m['score']:.3f} = rel {m['relevance']:.2f} (bm25 {m['bm25']:.2f}, cov {m['coverage']:.2f}) rec {m['recency']:.2f} imp {m['importance']:.2f}"
        lines.append(f"{m['decision']:<8} {m['id'] or '-':<10} {m['title']}  [{m['applies']}]")
        lines.append(f"         {parts}: {m['reason']}")
    if not ex["memories"]:
        lines.append("no memory matched the task")
    for s in ex["sessions"]:
        lines.append(
            f"session  {s['id']}  "
            + ("recent active session" if s["recent_only"] else f"relevance {s['relevance']:.2f}")
        )
    return "\n".join(lines)
