"""Ranking: field-weighted BM25 + query coverage, 90-day half-life recency, importance; the
formula and its parts are stated in docs/recall.md.

Why two keyword scores: BM25 alone is relative to the best hit, coverage (the IDF-weighted share of
the task's tokens a note contains) says how much of the task a note actually speaks to. "evidence"
is the same sum counted in tokens, not divided by the task's total (a token only one note has is
worth 0.8-0.9): an absolute amount, so a long task does not dilute it. The context builder uses
both to leave out notes that only share a common bigram with the task.
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from agentmem_vault.clock import now as clock_now, parse_ts
from agentmem_vault.vault import Vault
from agentmem_vault.ops.projects import fold_name
from agentmem_vault.model.textnorm import fold
from agentmem_vault.recall.index import RecallIndex, _is_corrupt, open_index, recall_tokens
from agentmem_vault.recall.location import RULE_IMPORTANCE

FIELD_WEIGHTS = {"title": 8.0, "keywords": 5.0, "usage": 3.0, "content": 1.0}
HALF_LIFE_DAYS = 90.0
WEIGHTS = {"relevance": 0.70, "recency": 0.15, "importance": 0.15}
WEIGHTS_SEMANTIC = {"semantic": 0.45, "relevance": 0.30, "recency": 0.125, "importance": 0.125}
CANDIDATES = 200  # BM25 top-N that gets the full score (recency/importance cannot lift a note further)
MAX_QUERY_TOKENS = 64
MAX_SCAN_TOKENS = 512  # a long task is read this far; its MAX_QUERY_TOKENS most informative tokens are kept
# A task or query is tokenized this far at most (docs/reliability.md, "Limits"): far past what
# MAX_SCAN_TOKENS reads, and a 5 MB task took 13-23 s to tokenize, three times over.
MAX_QUERY_CHARS = 20_000
MAX_POSTINGS = 3000


_HIT_FIELDS = (
    "id", "title", "path", "score", "relevance", "bm25", "coverage", "evidence", "recency", "importance",
    "semantic", "category", "project", "module", "status", "created", "updated", "keywords",
    "usage_scenario", "sources", "content", "rel_path",
)  # fmt: skip


class Hit:
    """A ranked memory and its score parts. A plain class, not a dataclass: importing and applying
    ``dataclasses`` is a sixth of the prompt hook's time (docs/performance.md)."""

    __slots__ = _HIT_FIELDS

    def __init__(
        self,
        id: str,
        title: str,
        path: str,
        score: float,
        relevance: float = 0.0,
        bm25: float = 0.0,
        coverage: float = 0.0,
        evidence: float = 0.0,
        recency: float = 0.0,
        importance: float = 0.5,
        semantic: float | None = None,
        category: str = "",
        project: str = "",
        module: str = "",
        status: str = "active",
        created: str = "",
        updated: str = "",
        keywords: list[str] | None = None,
        usage_scenario: list[str] | None = None,
        sources: list[str] | None = None,
        content: str = "",
        rel_path: str = "",
    ) -> None:
        self.id, self.title, self.path, self.score = id, title, path, score
        self.relevance, self.bm25, self.coverage, self.evidence = relevance, bm25, coverage, evidence
        self.recency, self.importance, self.semantic = recency, importance, semantic
        self.category, self.project, self.module, self.status = category, project, module, status
        self.created, self.updated, self.content, self.rel_path = created, updated, content, rel_path
        self.keywords = [] if keywords is None else keywords
        self.usage_scenario = [] if usage_scenario is None else usage_scenario
        self.sources = [] if sources is None else sources

    def to_dict(self, *, with_content: bool = True) -> dict:
        d = {k: getattr(self, k) for k in _HIT_FIELDS}
        for k in ("keywords", "usage_scenario", "sources"):
            d[k] = list(d[k])
        for k in ("score", "relevance", "bm25", "coverage", "evidence", "recency", "semantic"):
            if d[k] is not None:
                d[k] = round(d[k], 4)
        if not with_content:
            d.pop("content")
        return d


def recency_score(updated: str, now: datetime) -> float:
    """0.5 ** (age in days / 90); undated notes count as half-life old, future dates as new."""
    if not updated:
        return 0.5
    dt: datetime | None
    try:
        dt = datetime.fromisoformat(updated)  # the frontmatter's own form, fast
        if dt.tzinfo is not None:
            dt = dt.astimezone().replace(tzinfo=None)
    except ValueError:
        dt = parse_ts(updated)
    if dt is None:
        return 0.5
    age = (now - dt).total_seconds() / 86400.0
    return 1.0 if age <= 0 else 0.5 ** (age / HALF_LIFE_DAYS)


def query_tokens(text: str, cap: int = MAX_QUERY_TOKENS) -> list[str]:
    """Unique tokens in order of first appearance, capped (a pasted essay is not a better query)."""
    seen: dict[str, None] = {}
    for t in recall_tokens(text[:MAX_QUERY_CHARS]):
        seen.setdefault(t, None)
    return list(seen)[:cap]


def informative_tokens(tokens: list[str], df: dict[str, int], cap: int = MAX_QUERY_TOKENS) -> list[str]:
    """The ``cap`` tokens of a long task that say the most about it, in task order.

    Taking the first ``cap`` tokens lost what a wordy task is about whenever it came after a
    sentence or two of preamble. Tokens some note contains come first, rarest first (ties in task
    order); tokens no note contains (they can match nothing) fill what is left."""
    if len(tokens) <= cap:
        return list(tokens)
    pos = {t: i for i, t in enumerate(tokens)}
    present = sorted((t for t in tokens if df.get(t)), key=lambda t: (df[t], pos[t]))
    absent = [t for t in tokens if not df.get(t)]
    return sorted((present + absent)[:cap], key=pos.__getitem__)


class QueryPlan(NamedTuple):
    """What a query asks for: MATCH units (tokens, and glossary phrases "a b") and the concepts
    coverage is measured over, each ``(alternative units, the query tokens that weigh it)``."""

    tokens: list[str]
    units: list[str]
    concepts: list[tuple[tuple[str, ...], tuple[str, ...]]]


@lru_cache(maxsize=1)
def _glossary() -> list[list[tuple[str, ...]]]:
    from agentmem_vault.model import template_text

    lines = [ln for ln in template_text("recall", "glossary.txt").splitlines() if ln.strip() and ln[0] != "#"]
    groups = [[tuple(recall_tokens(m)) for m in ln.split("|")] for ln in lines]
    groups = [[m for m in g if m] for g in groups]
    # longest members first, so "memory leak" claims its words before "memory" does
    return sorted((g for g in groups if len(g) > 1), key=lambda g: -max(len(m) for m in g))


def plan_query(text: str, tokens: list[str] | None = None) -> QueryPlan:
    stream = recall_tokens(text[:MAX_QUERY_CHARS])
    toks = query_tokens(text) if tokens is None else tokens
    padded = " " + " ".join(stream) + " "
    consumed: set[str] = set()
    concepts: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    units: dict[str, None] = dict.fromkeys(toks)
    for group in _glossary():
        found = [m for m in group if f" {' '.join(m)} " in padded]
        if not found:
            continue
        qt = tuple(sorted({t for m in found for t in m}))
        if set(qt) <= consumed:
            continue
        alts = tuple(" ".join(m) for m in group)
        concepts.append((alts, qt))
        consumed.update(qt)
        units.update(dict.fromkeys(alts))
    concepts += [((t,), (t,)) for t in toks if t not in consumed]
    return QueryPlan(toks, list(units), concepts)


def match_expr(units: list[str]) -> str:
    # Units hold only [0-9a-z_.+#-], CJK letters and spaces (a phrase), so quoting is enough.
    return " OR ".join(f'"{u}"' for u in units)


def match_tokens(df: dict[str, int]) -> list[str]:
    """The tokens to MATCH: rarest first, dropping the most common once their postings exceed
    MAX_POSTINGS (a note that shares only "使用"/"接口" with the task is no candidate anyway; this
    bounds the BM25 work in a large vault). The three rarest always stay. Coverage still counts all."""
    ordered = sorted(df, key=lambda t: (df[t], t))
    keep: list[str] = []
    total = 0
    for t in ordered:
        if len(keep) >= 3 and total + df[t] > MAX_POSTINGS:
            break
        keep.append(t)
        total += df[t]
    return keep


def _idf(df: int, n: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def combine(relevance: float, recency: float, importance: float, semantic: float | None = None) -> float:
    if semantic is None:
        w = WEIGHTS
        return w["relevance"] * relevance + w["recency"] * recency + w["importance"] * importance
    w = WEIGHTS_SEMANTIC
    return w["semantic"] * semantic + w["relevance"] * relevance + w["recency"] * recency + w["importance"] * importance


def _scope_sql(
    project: str | list[str] | tuple[str, ...] | None, module: str | None, include_deprecated: bool
) -> tuple[str, list]:
    """Scoping keeps the notes of that project (any of its names: ops/projects.py aliases) and the
    global ones (docs/projects.md); ``None`` keeps every project's notes."""
    where: list[str] = []
    args: list = []
    if not include_deprecated:
        where.append("n.status != 'deprecated'")
    if project is not None:
        names = [project] if isinstance(project, str) else list(project)
        names = [fold_name(x) for x in names if x and x.strip()]
        if names:
            where.append(f"(n.project = '' OR n.project IN ({', '.join('?' * len(names))}))")
            args += names
        else:
            where.append("n.project = ''")  # an unknown project: the global notes only
    if module:
        where.append("(n.module = '' OR n.module = ?)")
        args.append(fold(module))
    return (" AND " + " AND ".join(where)) if where else "", args


_NOTE_COLS = (
    "n.docid, n.path, n.note_id, n.title, n.category, n.project_raw, n.module_raw, n.importance, "
    "n.status, n.created, n.updated, n.keywords, n.usage, n.sources, n.content"
)


def _hit_from_row(row: tuple, folder: Path) -> Hit:
    (_docid, rel, nid, title, cat, proj, mod, imp, status, created, updated, kws, usage, sources, content) = row
    return Hit(
        id=nid,
        title=title,
        path=str(folder / rel),
        score=0.0,
        importance=imp,
        category=cat,
        project=proj,
        module=mod,
        status=status,
        created=created,
        updated=updated,
        keywords=json.loads(kws),
        usage_scenario=json.loads(usage),
        sources=json.loads(sources),
        content=content,
        rel_path=rel,
    )


def _rank_rows(
    idx: RecallIndex,
    query: str,
    *,
    project: str | list[str] | None,
    module: str | None,
    include_deprecated: bool,
    now: datetime,
    semantic,
    candidates: int,
    limit: int = 0,
) -> list[Hit]:
    conn = idx.conn
    assert conn is not None
    toks = query_tokens(query, MAX_SCAN_TOKENS)
    scope, args = _scope_sql(project, module, include_deprecated)
    folder = idx.folder
    if not toks:
        # Nothing to match on: the most important, most recent notes.
        rows = conn.execute(
            f"SELECT {_NOTE_COLS} FROM notes n WHERE 1 = 1{scope} ORDER BY n.importance DESC, n.updated DESC LIMIT ?",
            (*args, candidates),
        ).fetchall()
        hits: list[Hit] = [_hit_from_row(r, folder) for r in rows]
        for h in hits:
            h.recency = recency_score(h.updated, now)
            h.score = combine(0.0, h.recency, h.importance)
        return sorted(hits, key=lambda h: -h.score)
    if len(toks) > MAX_QUERY_TOKENS:
        marks = ",".join("?" * len(toks))
        toks = informative_tokens(
            toks, dict(conn.execute(f"SELECT term, doc FROM vocab WHERE term IN ({marks})", toks).fetchall())
        )
    plan = plan_query(query, toks)
    words = sorted({w for u in plan.units for w in u.split(" ")})
    marks = ",".join("?" * len(words))
    tf = dict(conn.execute(f"SELECT term, doc FROM vocab WHERE term IN ({marks})", words).fetchall())
    # a phrase can match no more notes than its rarest word; a unit with an unknown word cannot match
    df = {u: min(tf[w] for w in u.split(" ")) for u in plan.units if all(w in tf for w in u.split(" "))}
    if not df:
        return []
    w = FIELD_WEIGHTS
    # Phase 1: score the BM25 candidates from their tokens and two light columns only (reading
    # note bodies for every candidate costs more than the BM25 itself).
    # The ranking query carries no token columns: SQLite would read them for every match before
    # sorting; they are fetched for the top candidates only, in the ranking's order.
    sql = (
        f"SELECT fts.rowid, -bm25(fts, {w['title']}, {w['keywords']}, {w['usage']}, {w['content']}) AS s "
        f"FROM fts JOIN notes n ON n.docid = fts.rowid WHERE fts MATCH ?{scope} ORDER BY s DESC LIMIT ?"
    )
    ranked = conn.execute(sql, (match_expr(match_tokens(df)), *args, candidates)).fetchall()
    if not ranked:
        return []
    marks = ",".join("?" * len(ranked))
    cols = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT fts.rowid, n.importance, n.updated, fts.title, fts.keywords, fts.usage, fts.content "
            f"FROM fts JOIN notes n ON n.docid = fts.rowid WHERE fts.rowid IN ({marks})",
            [r[0] for r in ranked],
        )
    }
    rows = [(docid, s, *cols[docid]) for docid, s in ranked if docid in cols]
    n_docs = conn.execute("SELECT count(*) FROM notes").fetchone()[0] or 1
    # Each concept weighs the IDF of its rarest query word; words no note contains still count (at
    # the highest IDF): a task about 量子计算 is not covered by a note that merely shares 计算.
    idf_absent = _idf(0, n_docs)
    concepts = [(alts, max(_idf(tf[t], n_docs) if t in tf else idf_absent for t in qt)) for alts, qt in plan.concepts]
    idf_total = sum(c[1] for c in concepts) or 1.0
    s_max = max(r[1] for r in rows) or 1.0
    # docid -> (bm25, coverage, evidence, relevance, recency, importance)
    scored: dict[int, tuple[float, float, float, float, float, float]] = {}
    padded = [(tuple(f" {a} " for a in alts), v) for alts, v in concepts]  # built once, not per candidate
    for docid, bm, imp, updated, t1, t2, t3, t4 in rows:
        bag = f" {t1} {t2} {t3} {t4} "
        matched = sum(v for alts, v in padded if any(a in bag for a in alts))
        cov = matched / idf_total
        rel = 0.5 * (bm / s_max) + 0.5 * cov
        scored[docid] = (bm, cov, matched / idf_absent, rel, recency_score(updated, now), imp)
    if semantic is None:
        order = sorted(scored, key=lambda d: (-combine(*scored[d][3:]), d))
        keep = order[:limit] if limit > 0 else order
    else:
        keep = list(scored)
    # Phase 2: full rows for what is returned.
    marks = ",".join("?" * len(keep))
    full = {r[0]: r for r in conn.execute(f"SELECT {_NOTE_COLS} FROM notes n WHERE n.docid IN ({marks})", keep)}
    hits = []
    for d in keep:
        h = _hit_from_row(full[d], folder)
        h.bm25, h.coverage, h.evidence, h.relevance, h.recency, _imp = scored[d]
        hits.append(h)
    if semantic is not None:
        sims = semantic.similarity(
            query, [(i, f"{h.title}\n{' '.join(h.usage_scenario)}\n{h.content}") for i, h in enumerate(hits)]
        )
        for i, h in enumerate(hits):
            h.semantic = float(sims.get(i, 0.0))
    for h in hits:
        h.score = combine(h.relevance, h.recency, h.importance, h.semantic)
    hits.sort(key=lambda h: (-h.score, h.title))
    return hits


def search(
    vault: Vault,
    query: str,
    *,
    limit: int = 10,
    project: str | list[str] | None = None,
    module: str | None = None,
    include_deprecated: bool = False,
    now: datetime | None = None,
    index: RecallIndex | None = None,
    semantic: object = "config",
    sync: bool = True,
    repair: bool = True,
) -> list[Hit]:
    """Ranked long-term memories for ``query``.

    The index is first synced with the notes on disk (pass ``sync=False`` only right after a sync
    of the same ``index``, or on a hook's read-only index). ``semantic``: "config" (vault config /
    env), None (off) or a backend. ``repair``: rebuild a damaged index and ask again (a hook, which
    must stay fast, passes False and gets the error)."""
    own = index is None
    idx = index or open_index(vault, sync=False)
    try:
        if sync or own:
            idx.sync()
        when = now or clock_now()
        if semantic == "config":
            from agentmem_vault.recall.semantic import configured_backend

            semantic = configured_backend(vault)

        def rank() -> list[Hit]:
            return _rank_rows(
                idx,
                query,
                project=project,
                module=module,
                include_deprecated=include_deprecated,
                now=when,
                semantic=semantic,
                candidates=max(CANDIDATES, limit),
                limit=limit,
            )

        try:
            hits = rank()
        except sqlite3.DatabaseError as exc:
            if not repair or not _is_corrupt(exc):
                raise
            idx._discard()
            idx.rebuild()
            hits = rank()  # once more, on the rebuilt index
        return hits[:limit] if limit and limit > 0 else hits
    finally:
        if own:
            idx.close()


def rule_notes(
    idx: RecallIndex, *, project: str | list[str] | None = None, module: str | None = None, now: datetime | None = None
) -> list[Hit]:
    """The rule index: active notes with importance >= 0.9, most important and newest first."""
    assert idx.conn is not None
    scope, args = _scope_sql(project, module, False)
    rows = idx.conn.execute(
        f"SELECT {_NOTE_COLS} FROM notes n WHERE n.importance >= ?{scope} "
        "ORDER BY n.importance DESC, n.updated DESC, n.title",
        (RULE_IMPORTANCE, *args),
    ).fetchall()
    when = now or clock_now()
    hits = [_hit_from_row(r, idx.folder) for r in rows]
    for h in hits:
        h.recency = recency_score(h.updated, when)
        h.score = combine(0.0, h.recency, h.importance)
    return hits
