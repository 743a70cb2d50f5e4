"""``agentmem context "TASK"``: Markdown to paste into, or inject at the start of, a new chat.

Sections, each within its share of the character budget (unused share flows on):
1. rules that always apply (the rule index: importance >= 0.9), compact, up to 35% of the budget;
2. the strongest relevant memories in full (content, where it applies, source session);
3. the other relevant memories as one line each (title, date, category) - ask for details;
4. "Sessions you may continue": active/stale index rows that speak to the task, with their IDs
   (15% of the budget is kept for them).
Rendering is a pure function of the ranked inputs, so the budget is tested without a vault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from agentmem_vault.clock import now as clock_now, parse_ts
from agentmem_vault.vault import Vault
from agentmem_vault.board.table import Row, parse_index
from agentmem_vault.recall.rank import Hit, query_tokens, rule_notes, search
from agentmem_vault.recall.index import open_index, recall_tokens
from agentmem_vault.recall.render import FULL_COUNT, RULES_BUDGET, SessionHit, render_context
from agentmem_vault.recall.select import select_memories

MAX_SESSIONS = 5


@dataclass
class ContextResult:
    task: str
    markdown: str
    budget: int
    rules: list[Hit] = field(default_factory=list)
    full: list[Hit] = field(default_factory=list)
    brief: list[Hit] = field(default_factory=list)
    sessions: list[SessionHit] = field(default_factory=list)
    scope: dict = field(default_factory=dict)  # which project's memories were searched (recall/scoping.py)
    # What was weighed (for --explain, recall/explain.py): every rule of the scope, the ranked
    # non-rule memories, the ones selected before the budget was applied, and the --limit.
    rule_candidates: list[Hit] = field(default_factory=list)
    ranked: list[Hit] = field(default_factory=list)
    selected: list[Hit] = field(default_factory=list)
    limit: int = 0

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            "budget": self.budget,
            "chars": len(self.markdown),
            "markdown": self.markdown,
            **({"scope": self.scope} if self.scope else {}),
            "rules": [h.to_dict() for h in self.rules],
            "memories_full": [h.to_dict() for h in self.full],
            "memories_brief": [h.to_dict(with_content=False) for h in self.brief],
            "sessions": [s.to_dict() for s in self.sessions],
        }


# -- sessions from memory/index.md -------------------------------------------------------------------


def load_rows(vault: Vault) -> list[Row]:
    """Rows of memory/index.md; an unreadable board gives none (context must still answer)."""
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.fs import read_text

    try:
        text = read_text(vault.index_path)
        return parse_index(text).row_list() if text else []
    except (AgentmemError, OSError):
        return []


def _ts(value: str) -> datetime:
    return parse_ts(value) or datetime.min


def relevant_sessions(
    rows: list[Row], task: str, *, limit: int = MAX_SESSIONS, recent_fallback: int = 3
) -> list[SessionHit]:
    """Active/stale rows whose topic, summary or keywords share enough of the task's tokens.

    With none relevant, the most recently updated active rows are listed instead (marked so)."""
    q = set(query_tokens(task))
    live = [r for r in rows if r.status in ("active", "stale")]
    scored: list[tuple[float, Row]] = []
    if q:
        for r in live:
            toks = set(recall_tokens(f"{r.topic} {r.keywords} {r.summary}"))
            hit = len(q & toks)
            share = hit / len(q)
            if hit >= min(2, len(q)) and share >= 0.15:
                scored.append((share, r))
    scored.sort(key=lambda x: _ts(x[1].updated_at), reverse=True)
    scored.sort(key=lambda x: -x[0])  # stable: equal shares stay newest first
    out = [SessionHit(r.session_id, r.topic, r.summary, r.status, r.updated_at, round(s, 3)) for s, r in scored[:limit]]
    if not out:
        recent = sorted((r for r in live if r.status == "active"), key=lambda r: _ts(r.updated_at), reverse=True)
        out = [
            SessionHit(r.session_id, r.topic, r.summary, r.status, r.updated_at, 0.0, True)
            for r in recent[:recent_fallback]
        ]
    return out


# -- assembling ------------------------------------------------------------------------------------------


def build_context(
    vault: Vault,
    task: str,
    *,
    limit: int = 8,
    budget: int = 4000,
    project: str | list[str] | None = None,
    module: str | None = None,
    now: datetime | None = None,
    full_count: int = FULL_COUNT,
    scope: dict | None = None,
) -> ContextResult:
    """Rank memories and sessions for ``task`` and render them within ``budget`` characters.
    ``project``: the project's names (recall/scoping.py), ``None`` for every project."""
    from agentmem_vault.errors import UsageError

    if budget <= 0:
        raise UsageError("--budget must be a positive number of characters")
    if limit <= 0:
        raise UsageError("--limit must be a positive number")
    when = now or clock_now()
    idx = open_index(vault)
    try:
        rules = rule_notes(idx, project=project, module=module, now=when)
        hits = search(
            vault, task, limit=limit + len(rules) + 5, project=project, module=module, now=when, index=idx, sync=False
        )
    finally:
        idx.close()
    rule_paths = {h.rel_path for h in rules}
    matched = {h.rel_path: h for h in hits}
    for rule in rules:  # a rule the task matches carries its match's score (and its parts, for --explain)
        m = matched.get(rule.rel_path)
        if m is not None:
            for part in ("score", "relevance", "bm25", "coverage", "evidence", "semantic"):
                setattr(rule, part, getattr(m, part))
    # Rules that match the task come first among the rules.
    rules.sort(key=lambda h: (-(matched[h.rel_path].score if h.rel_path in matched else 0.0), -h.importance))
    del rules[RULES_BUDGET:]  # the always-on set stays readable; the rest are recalled when relevant
    ranked = [h for h in hits if h.rel_path not in rule_paths]
    memories = select_memories(ranked, limit=limit, matchable=bool(query_tokens(task)))
    rows = load_rows(vault)
    rank = None
    if project:  # the caller's own project's sessions, then unknown ones, never another's (docs/board.md)
        from agentmem_vault.board.rules import project_rank
        from agentmem_vault.ops.conversations import projects_of_sessions
        from agentmem_vault.ops.projects import fold_name

        names = {fold_name(x) for x in ([project] if isinstance(project, str) else project)}
        of = projects_of_sessions(vault)
        rank = {r.session_id: project_rank(of.get(r.session_id, ""), names) for r in rows}
        rows = [r for r in rows if rank[r.session_id] is not None]
    sessions = relevant_sessions(rows, task)
    if rank is not None:
        sessions.sort(key=lambda h: rank[h.session_id] or 0)
    md, r, f, b, s = render_context(rules, memories, sessions, budget=budget, full_count=full_count)
    return ContextResult(
        task=task,
        markdown=md,
        budget=budget,
        rules=r,
        full=f,
        brief=b,
        sessions=s,
        scope=scope or {},
        rule_candidates=list(rules),
        ranked=ranked,
        selected=memories,
        limit=limit,
    )
