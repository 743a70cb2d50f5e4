"""The evaluation's fixture formats: a file holding a list of fixtures, labels per kind of
statement, and curation fixtures whose chats are curated in order (reversal, supplement)."""

from __future__ import annotations

import json
from pathlib import Path

from agentmem_vault.longterm.evaluate import BUILTIN_SETS, builtin_set, evaluate, load_fixtures, score_fixture
from agentmem_vault.longterm.schema import CATEGORIES, MemoryObject
from agentmem_vault.longterm.statement import KINDS


def _write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def test_a_file_may_hold_a_list_of_fixtures(tmp_path: Path) -> None:
    one = {"conversation": {"turns": [{"role": "user", "text": "記住：一律用 pnpm。"}]}, "expected": []}
    _write(tmp_path / "a.json", [dict(one, id="x"), dict(one, id="y")])
    _write(tmp_path / "b.json", dict(one, id="z"))
    assert [f.id for f in load_fixtures(tmp_path)] == ["x", "y", "z"]


def test_breakdown_by_kind_and_class() -> None:
    fx = load_fixtures(builtin_set("kinds"))[0]
    got = [MemoryObject("create", "t", "nothing useful", "user_behavior", signal="preference")]
    r = score_fixture(fx, got)
    kinds = {e["kind"] for e in fx.expected}
    assert set(r.by_kind) == kinds | {"preference"} and r.cls


def test_every_builtin_set_loads_with_labelled_kinds() -> None:
    for name in BUILTIN_SETS:
        fixtures = load_fixtures(builtin_set(name))
        assert fixtures, name
        if name in ("kinds", "curation", "unseen2", "unseen3"):
            for f in fixtures:
                assert f.cls, f.id
                for e in f.expected:
                    assert e["kind"] in KINDS, (f.id, e)


def test_unseen3_labels_every_memory_and_balances_its_languages() -> None:
    """The held-out set of docs/extraction.md: every memory fully labelled, eight chats per
    language with at least two noise chats each, and the ids are the file stems."""
    folder = builtin_set("unseen3")
    fixtures = load_fixtures(folder)
    assert sorted(f.id for f in fixtures) == sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))
    for lang in ("en", "zh-TW", "zh-CN"):
        mine = [f for f in fixtures if f.language == lang]
        assert len(mine) == 8 and sum(1 for f in mine if not f.expected and f.cls == "noise") >= 2, lang
    for f in fixtures:
        assert f.project and f.cls and (f.cls == "noise") == (not f.expected), f.id
        for e in f.expected:
            assert 2 <= len(e["must_contain"]) <= 3 and e["kind"] in KINDS and e["category"] in CATEGORIES, (f.id, e)
            assert e["scope"] in ("project", "global") and e["importance_band"] in ("0.9-1.0", "0.7-0.9", "0.5-0.7")
    assert sum(1 for f in fixtures for e in f.expected if e["scope"] == "global") >= 3


def test_curation_fixture_counts_a_contradicting_note_as_wrong(tmp_path: Path) -> None:
    chat = lambda at, text: {"at": at, "turns": [{"role": "user", "text": text}]}  # noqa: E731
    _write(
        tmp_path / "c.json",
        {
            "id": "rev",
            "class": "reversal",
            "chats": [
                chat("2026-11-01T10:00", "From now on always run `yarn lint` before you finish."),
                chat("2026-11-02T10:00", "From now on always run `npm run verify` before you finish."),
            ],
            "expected": [{"must_contain": ["npm run verify"], "kind": "reversal"}],
            "retired": [{"must_contain": ["yarn lint"], "must_not_contain": ["npm run verify"]}],
        },
    )
    (fx,) = load_fixtures(tmp_path)
    assert len(fx.chats) == 2 and fx.chats[1][0] == "2026-11-02T10:00"
    both = [
        MemoryObject("create", "a", "Always run `yarn lint` before you finish.", "user_behavior"),
        MemoryObject("create", "b", "Always run `npm run verify` before you finish.", "user_behavior"),
    ]
    assert (score_fixture(fx, both).tp, score_fixture(fx, both).fp) == (1, 1)
    merged = [MemoryObject("create", "b", "Run `npm run verify` (not yarn lint any more).", "user_behavior")]
    assert score_fixture(fx, merged).fp == 0
    report = evaluate([fx])  # the chats are extracted and curated in order, offline
    assert report.results[0].expected == 1
