"""Which ranked memories `agentmem context` lists: long, wordy tasks still surface the note they are
about; the top `memories search` hit is never left out while a weaker one is listed; off-topic tasks
list nothing. Fixtures: tests/fixtures/recall/queries.json and long_tasks.json."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings, strategies as st

from agentmem_vault.vault import Vault
from agentmem_vault.recall.context import build_context
from agentmem_vault.recall.select import MIN_COVERAGE, MIN_EVIDENCE, passes_floor, select_memories
from agentmem_vault.recall.index import recall_tokens
from agentmem_vault.recall.rank import Hit, informative_tokens, search
from recall_helpers import load_corpus, load_long_tasks, load_queries, write_corpus, write_note

NOW = datetime(2026, 6, 1, 9, 30)
TASKS = load_long_tasks()
KEY_OF_ID = {n["id"]: n["key"] for n in load_corpus()}
# What the user reported: the top search hit (coverage 0.128 < 0.18) was dropped, money-decimal listed.
TWO_TOPICS = (
    "sign-up endpoint must verify the SMS code，还有 折扣计算怎么四舍五入。This came up in yesterday's "
    "review; please explain what we decided before and propose a fix with tests."
)


@pytest.fixture
def corpus(vault: Vault) -> Vault:
    write_corpus(vault.longterm_dir)
    return vault


def _listed(v: Vault, task: str) -> tuple[list[str], set[str]]:
    """(memory keys listed in order, rule keys listed) of `context` for ``task``."""
    res = build_context(v, task, budget=4000, now=NOW)
    return [KEY_OF_ID[h.id] for h in res.full + res.brief], {KEY_OF_ID[h.id] for h in res.rules}


def _ranked(v: Vault, task: str) -> list[Hit]:
    return search(v, task, limit=20, now=NOW, semantic=None)


# -- long, wordy tasks -----------------------------------------------------------------------------------

LONG = {t["relevant"][0]: t for t in TASKS["long"] if "paraphrase" not in t["kind"]}


@pytest.mark.parametrize(
    "key",
    [
        "refund-async",
        "ios-keyboard",
        "redis-cache-ttl",
        "daemon-polling",
        "docker-slim",
        "csv-export-bom",
        "lock-outside",
    ],
)
def test_a_long_wordy_task_lists_the_note_it_is_about_first(corpus: Vault, key: str) -> None:
    task = LONG[key]["q"]
    assert len(set(recall_tokens(task))) >= 30, "the fixture must stay a wordy task"
    mems, _rules = _listed(corpus, task)
    assert mems[:1] == [key], (LONG[key]["kind"], mems)


def test_the_key_sentence_of_a_long_task_counts_even_after_a_long_preamble(corpus: Vault) -> None:
    # The task's first 64 tokens are all preamble; its informative tokens come later.
    task = next(t["q"] for t in TASKS["long"] if t["kind"] == "long-zh/late-key")
    hit = _ranked(corpus, task)[0]
    assert KEY_OF_ID[hit.id] == "ios-keyboard"
    assert hit.evidence >= MIN_EVIDENCE


def test_long_tasks_about_rules_show_those_rules_and_nothing_unrelated(corpus: Vault) -> None:
    for key in ("idempotency", "pg-migration", "no-force-push", "secrets"):  # importance >= 0.9: the rule index
        mems, rules = _listed(corpus, LONG[key]["q"])
        assert key in rules and len(mems) <= 1, (key, mems)


def test_most_long_tasks_surface_their_note(corpus: Vault) -> None:
    found = 0
    for t in TASKS["long"]:
        mems, rules = _listed(corpus, t["q"])
        found += bool(set(t["relevant"]) & (set(mems) | rules))
    assert found >= 14, f"{found}/{len(TASKS['long'])}"  # the two misses are paraphrases sharing no words


# -- the strongest memory is never left out while a weaker one is listed ---------------------------------


def test_two_topic_task_lists_the_top_search_hit_first(corpus: Vault) -> None:
    ranked = [KEY_OF_ID[h.id] for h in _ranked(corpus, TWO_TOPICS)]
    assert ranked[:2] == ["reg-sms", "money-decimal"]
    mems, _ = _listed(corpus, TWO_TOPICS)
    assert mems == ["reg-sms", "money-decimal"]


def _wordy_tasks() -> list[str]:
    qs = [q["q"] for q in load_queries()]
    fillers = TASKS["fillers"]
    out = [
        f"{q} {fillers[i % len(fillers)]}" if i % 2 else f"{fillers[i % len(fillers)]} {q}" for i, q in enumerate(qs)
    ]
    out += [f"{q}，还有 {qs[(i + 37) % len(qs)]}。{fillers[i % len(fillers)]}" for i, q in enumerate(qs)]
    return qs + out + [t["q"] for t in TASKS["long"]]


def test_context_lists_the_top_search_hit_whenever_it_lists_any(corpus: Vault) -> None:
    tasks = _wordy_tasks()
    assert len(tasks) > 200
    listed_any = 0
    for task in tasks:
        res = build_context(corpus, task, budget=4000, now=NOW)
        mems = [h.id for h in res.full + res.brief]
        if not mems:
            continue
        listed_any += 1
        rule_ids = {h.id for h in res.rules}
        ranked = [h.id for h in search(corpus, task, limit=30, now=NOW, semantic=None) if h.id not in rule_ids]
        assert mems[0] == ranked[0], task
        # in search order, every listed memory passing the floor
        pos = [ranked.index(i) for i in mems]
        assert pos == sorted(pos), task
    assert listed_any > 150


def _hit(i: int, cov: float, ev: float, rel: float) -> Hit:
    return Hit(
        id=f"lt-{i}",
        title=str(i),
        path=f"/{i}.md",
        score=1.0 - i / 100,
        coverage=cov,
        evidence=ev,
        relevance=rel,
        rel_path=f"{i}.md",
    )


def test_select_memories_keeps_a_diluted_top_hit() -> None:
    # the report: top hit at 12% coverage of a long task, a weaker one at 20%
    top, weaker = _hit(0, 0.12, 3.2, 0.55), _hit(1, 0.20, 2.1, 0.46)
    assert [h.id for h in select_memories([top, weaker], limit=8)] == ["lt-0", "lt-1"]
    # relative cutoff: far weaker keyword relevance than the top hit is not listed
    assert [h.id for h in select_memories([top, _hit(1, 0.20, 2.1, 0.2)], limit=8)] == ["lt-0"]
    # a top hit sharing a single token with the task: nothing below it is listed either
    assert select_memories([_hit(0, 0.05, 0.8, 0.5), weaker], limit=8) == []
    # nothing to match on: as ranked
    assert [h.id for h in select_memories([_hit(0, 0, 0, 0), _hit(1, 0, 0, 0)], limit=1, matchable=False)] == ["lt-0"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 12), st.floats(0, 1)), max_size=12), st.integers(1, 10))
def test_select_memories_is_the_top_hit_then_passing_hits_in_order(rows: list, limit: int) -> None:
    hits = [_hit(i, c, e, r) for i, (c, e, r) in enumerate(rows)]
    out = select_memories(hits, limit=limit)
    assert len(out) <= limit
    if out:
        assert out[0] is hits[0]
    assert bool(out) == bool(hits and passes_floor(hits[0]))
    idx = [hits.index(h) for h in out]
    assert idx == sorted(idx) and len(set(idx)) == len(idx)
    assert all(passes_floor(h) for h in out)
    assert all(h.evidence >= MIN_EVIDENCE or h.coverage >= MIN_COVERAGE for h in out)


# -- nothing irrelevant ----------------------------------------------------------------------------------


def test_off_topic_tasks_list_no_memories(corpus: Vault) -> None:
    tasks = TASKS["offtopic"] + [f"{t} {f}" for t in TASKS["offtopic"][:4] for f in TASKS["fillers"]]
    for task in tasks:
        mems, _ = _listed(corpus, task)
        assert mems == [], (task, mems)


def test_distractor_queries_list_the_right_note_first(corpus: Vault) -> None:
    for q in load_queries():
        if q["kind"].startswith("distractor"):
            mems, _ = _listed(corpus, q["q"])
            assert mems[:1] == q["relevant"][:1], (q["q"], mems)
            assert "nacos-registry" not in mems or q["relevant"] == ["nacos-registry"]


def test_filler_alone_or_a_stray_shared_word_lists_nothing(corpus: Vault) -> None:
    for f in TASKS["fillers"]:
        assert _listed(corpus, f)[0] == [], f
    # the note shares one word ("Argon2id") with a long task about something else
    write_note(
        corpus.longterm_dir, {"key": "x", "id": "lt-x", "title": "Weekly cooking club", "content": "Argon2id soup"}
    )
    task = (
        "I want to plan a dinner party for eight people next Saturday. Please suggest a menu with a starter, "
        "a main course and a dessert, and mention that my cousin once called Argon2id the best password hash."
    )
    mems, _ = _listed(corpus, task)
    assert "x" not in mems


# -- pieces ----------------------------------------------------------------------------------------------


def test_informative_tokens_keep_the_rarest_in_task_order() -> None:
    toks = [f"w{i}" for i in range(10)]
    assert informative_tokens(toks, {}, cap=10) == toks
    df = {"w0": 50, "w1": 40, "w7": 1, "w8": 2, "w9": 3}
    assert informative_tokens(toks, df, cap=4) == ["w1", "w7", "w8", "w9"]  # rarest present ones, task order
    assert informative_tokens(toks, {"w9": 1}, cap=3) == ["w0", "w1", "w9"]  # absent ones fill, in task order


def test_evidence_is_not_diluted_by_a_longer_task(corpus: Vault) -> None:
    short = "退款超时 网关被拖垮"
    long = short + "。" + "。".join(TASKS["fillers"])
    a = next(h for h in _ranked(corpus, short) if KEY_OF_ID[h.id] == "refund-async")
    b = next(h for h in _ranked(corpus, long) if KEY_OF_ID[h.id] == "refund-async")
    assert b.coverage < a.coverage * 0.6  # the share of the task drops with its length ...
    assert b.evidence == pytest.approx(a.evidence, rel=0.05)  # ... the matched informative tokens do not
    assert KEY_OF_ID[_ranked(corpus, long)[0].id] == "refund-async"
