"""Ranking: folding, field weights, BM25 not raw counts, half-life, importance, status, scoping, quality."""

from __future__ import annotations

import statistics
from datetime import datetime
from pathlib import Path

import pytest

from agentmem_vault.errors import ConfigError

from agentmem_vault.vault import Vault
from agentmem_vault.recall.rank import combine, match_tokens, query_tokens, recency_score, search
from agentmem_vault.recall.semantic import CharNgramBackend, get_backend
from recall_helpers import load_corpus, load_queries, write_corpus, write_note

NOW = datetime(2026, 6, 1, 9, 30)


def _n(key: str, title: str, content: str = "", **kw) -> dict:
    d = {
        "key": key,
        "id": f"lt-{key}",
        "title": title,
        "content": content,
        "keywords": [],
        "usage_scenario": [],
        "updated": "2026-05-31T10:00",
        "importance": 0.5,
    }
    d.update(kw)
    return d


@pytest.fixture
def lt(vault: Vault) -> Path:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    return vault.longterm_dir


def _ids(vault: Vault, q: str, **kw) -> list[str]:
    return [h.id for h in search(vault, q, now=NOW, semantic=None, **kw)]


def test_traditional_finds_simplified_and_back(vault: Vault, lt: Path) -> None:
    write_note(lt, _n("s", "用户注册流程", "注册时校验验证码"))
    write_note(lt, _n("t", "資料庫備份策略", "每日全量備份"))
    write_note(lt, _n("x", "无关笔记", "别的内容"))
    assert _ids(vault, "註冊")[:1] == ["lt-s"]
    assert _ids(vault, "註冊 驗證碼")[:1] == ["lt-s"]
    assert _ids(vault, "数据库备份")[:1] == ["lt-t"]
    assert _ids(vault, "ＲＥＧＩＳＴＥＲ 注冊") == ["lt-s"]  # full-width Latin, mixed forms


def test_taiwan_vocabulary_matches_mainland_words(vault: Vault, lt: Path) -> None:
    write_note(lt, _n("f", "改字段类型要分步迁移", "加新列、双写、回填"))
    write_note(lt, _n("o", "其他", "不相关"))
    assert _ids(vault, "給大表改欄位類型")[:1] == ["lt-f"]


def test_field_weights_title_beats_keywords_beats_usage_beats_content(vault: Vault, lt: Path) -> None:
    filler = "这是一段足够长的说明文字，用来让每条笔记的长度相近。" * 3
    write_note(lt, _n("c", "笔记丙", f"{filler} Kafka"))
    write_note(lt, _n("u", "笔记乙", filler, usage_scenario=["排查 Kafka 积压"]))
    write_note(lt, _n("k", "笔记甲", filler, keywords=["Kafka"]))
    write_note(lt, _n("t", "Kafka 分区数约定", filler))
    for i in range(6):
        write_note(lt, _n(f"z{i}", f"其他笔记 {i}", filler))
    assert _ids(vault, "Kafka") == ["lt-t", "lt-k", "lt-u", "lt-c"]


def test_bm25_not_raw_counts_rare_terms_weigh_more(vault: Vault, lt: Path) -> None:
    # "配置" everywhere; "Vault" only in one note: one rare hit beats many common ones.
    for i in range(8):
        write_note(lt, _n(f"c{i}", f"配置说明 {i}", "配置 配置 配置 配置 配置"))
    write_note(lt, _n("r", "密钥放 Vault", "统一放 Vault"))
    assert _ids(vault, "配置 Vault")[0] == "lt-r"


def test_recency_is_a_true_90_day_half_life() -> None:
    assert recency_score("2026-06-01T09:30", NOW) == 1.0
    assert recency_score("2026-03-03T09:30", NOW) == pytest.approx(0.5, abs=1e-9)  # exactly 90 days
    assert recency_score("2025-12-03T09:30", NOW) == pytest.approx(0.25, abs=1e-9)  # 180 days
    assert recency_score("2027-01-01T00:00", NOW) == 1.0  # future: not boosted above new
    assert recency_score("", NOW) == 0.5 and recency_score("garbage", NOW) == 0.5
    assert recency_score("2026-03-03 09:30", NOW) == pytest.approx(0.5)  # index-table form too


def test_recency_and_importance_break_relevance_ties(vault: Vault, lt: Path) -> None:
    write_note(lt, _n("old", "Kafka 分区 约定 A", updated="2025-06-01T10:00"))
    write_note(lt, _n("new", "Kafka 分区 约定 B", updated="2026-05-30T10:00"))
    assert _ids(vault, "Kafka 分区") == ["lt-new", "lt-old"]
    write_note(lt, _n("imp", "Kafka 分区 约定 C", updated="2025-06-01T10:00", importance=1.0))
    hits = search(vault, "Kafka 分区", now=NOW, semantic=None)
    by = {h.id: h for h in hits}
    assert by["lt-imp"].score > by["lt-old"].score
    assert combine(1.0, 1.0, 1.0) == pytest.approx(1.0)


def test_deprecated_excluded_by_default(vault: Vault, lt: Path) -> None:
    write_note(lt, _n("dep", "注册验证码旧方案", status="deprecated", importance=0.99))
    write_note(lt, _n("cur", "注册验证码新方案"))
    assert _ids(vault, "注册验证码") == ["lt-cur"]
    assert set(_ids(vault, "注册验证码", include_deprecated=True)) == {"lt-cur", "lt-dep"}


def test_project_and_module_scoping_keeps_global_notes(vault: Vault, lt: Path) -> None:
    write_note(lt, _n("p1", "部署流程 shop", project="shop", module="infra"))
    write_note(lt, _n("p2", "部署流程 billing", project="billing", module="infra"))
    write_note(lt, _n("g", "部署流程 通用"))
    assert set(_ids(vault, "部署流程", project="Shop")) == {"lt-p1", "lt-g"}
    assert set(_ids(vault, "部署流程", project="shop", module="web")) == {"lt-g"}
    assert len(_ids(vault, "部署流程")) == 3


def test_queries_without_tokens_and_limits(vault: Vault, lt: Path) -> None:
    write_note(lt, _n("a", "甲", importance=0.9))
    write_note(lt, _n("b", "乙", importance=0.2))
    assert _ids(vault, "the and of") == ["lt-a", "lt-b"]  # nothing to match: importance/recency order
    assert _ids(vault, "完全不存在的词") == []
    assert len(_ids(vault, "", limit=1)) == 1


def test_query_tokens_are_capped_and_common_tokens_pruned_from_match() -> None:
    assert len(query_tokens("长" * 500 + " ".join(f"w{i}" for i in range(200)))) <= 64
    df = {"rare": 2, "mid": 900, "common": 2500, "huge": 9000}
    assert match_tokens(df) == ["rare", "mid", "common"]  # three rarest always stay
    assert match_tokens({"a": 10, "b": 20, "c": 30, "d": 40}) == ["a", "b", "c", "d"]


def test_semantic_backend_is_optional_and_off_by_default(
    vault: Vault, lt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_note(lt, _n("r", "rebase onto main before merging", "always rebase feature branches"))
    assert get_backend(None) is None and get_backend("none") is None
    with pytest.raises(ConfigError, match="unknown recall_semantic backend"):
        get_backend("bert-large")
    hits = search(vault, "rebase", now=NOW)
    assert hits[0].semantic is None
    monkeypatch.setenv("AGENTMEM_RECALL_SEMANTIC", "ngram")
    hits = search(vault, "rebase", now=NOW)
    assert hits[0].semantic is not None and 0 < hits[0].semantic <= 1
    sims = CharNgramBackend().similarity("註冊流程", [(1, "注册流程说明"), (2, "unrelated")])
    assert sims[1] > sims[2] == 0


def test_labelled_set_quality_floor(vault: Vault) -> None:
    """The benchmark's numbers, as a regression floor (see benchmarks/bench_recall.py)."""
    notes = load_corpus()
    queries = load_queries()
    assert len(notes) >= 150 and len(queries) >= 40
    paths = write_corpus(vault.longterm_dir, notes)
    key_of = {str(p): k for k, p in paths.items()}
    r5, rr = [], []
    for q in queries:
        keys = [key_of[h.path] for h in search(vault, q["q"], limit=10, now=NOW, semantic=None)]
        rel = set(q["relevant"])
        r5.append(len(rel & set(keys[:5])) / len(rel))
        rank = next((i + 1 for i, k in enumerate(keys) if k in rel), None)
        rr.append(1 / rank if rank else 0.0)
        if "deprecated" not in q["kind"]:
            assert "reg-sms-old" not in keys  # deprecated never comes back
    assert statistics.mean(r5) >= 0.88
    assert statistics.mean(rr) >= 0.85


def test_glossary_expansion_crosses_languages(vault: Vault, lt: Path) -> None:
    from agentmem_vault.recall.rank import plan_query

    plan = plan_query("fix the memory leak in login")
    alts = [set(a) for a, _ in plan.concepts]
    assert {"memory leak", "内存 存泄 泄漏"} in alts  # Chinese alternatives are bigram phrases
    assert {"memory", "记忆"} not in alts  # "memory" was claimed by "memory leak"
    assert {"login", "登录"} <= set().union(*alts)
    write_note(lt, _n("zh", "登录接口限流", "按 IP 限流"))
    write_note(lt, _n("en", "Unrelated english note", "nothing here"))
    assert _ids(vault, "login rate limit") == ["lt-zh"]
    hit = search(vault, "login rate limit", now=NOW, semantic=None)[0]
    assert hit.coverage == pytest.approx(1.0)
    write_note(lt, _n("en2", "Use sign in with Apple", "sign in flow"))
    assert set(_ids(vault, "登錄")) == {"lt-zh", "lt-en2"}
