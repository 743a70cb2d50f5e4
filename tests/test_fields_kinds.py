"""The field rules by kind of statement (docs/notes.md, Fields): every development fixture of
``eval-fields/`` says one kind of statement five ways in each language, and the note's category,
scope and importance band follow from what the statement is, whatever the detector found."""

from __future__ import annotations

import pytest

from agentmem_vault.longterm.evaluate import builtin_set, evaluate, load_fixtures
from agentmem_vault.longterm.fields.derive import apply_fields
from agentmem_vault.longterm.fields.evaluation import band_label, band_of
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.scope import apply_scope
from agentmem_vault.longterm.statement import Statement

FIXTURES = load_fixtures(builtin_set("fields"))


@pytest.mark.parametrize("as_rule", [False, True], ids=["labelled-kind", "read-as-a-rule"])
@pytest.mark.parametrize("fx", FIXTURES, ids=[f.id for f in FIXTURES])
def test_each_kind_is_filed_by_what_it_is(fx, as_rule) -> None:
    """With the labelled kind, and with the detector reading the statement as a plain rule (as it
    does with a tip said as "下次 … 先看 …" or a decision announced as "這是上個月定的：…")."""
    (exp,) = fx.expected
    holds = [
        i
        for i, t in enumerate(fx.turns)
        if t.role == "user" and all(w.lower() in t.text.lower() for w in exp["must_contain"])
    ]
    at = holds[-1]  # the statement, not a question before it that names the same things
    said, kind = fx.turns[at].text, "rule" if as_rule else exp["kind"]
    m = MemoryObject(action="create", title="x", content=said, category="", signal=kind, evidence=said)
    m.statement = Statement(kind=kind, order=at)
    apply_scope(apply_fields([m], fx.turns, offline=True)[0], fx.project)
    if exp.get("category"):
        assert m.category == exp["category"]
    assert (m.scope == "global") == (exp["scope"] == "global")
    if exp.get("importance_band"):
        assert band_of(m.importance) == band_label(exp["importance_band"]), m.importance


def test_the_kinds_set_in_five_ways_per_language() -> None:
    per = {}
    for fx in FIXTURES:
        per.setdefault((fx.id.rsplit("-", 2)[0], fx.language), []).append(fx)
    assert per and all(len(v) == 5 for v in per.values())
    assert {lang for _, lang in per} == {"en", "zh-TW", "zh-CN"}
    figs = evaluate(FIXTURES).field_figures()["all"]
    assert figs["category_accuracy"] >= 0.9 and figs["scope_accuracy"] == 1.0
    assert figs["importance_band_accuracy"] >= 0.95 and figs["keywords_bad_share"] <= 0.05


def test_a_statement_is_found_in_its_turn_whatever_the_spacing_the_detector_gave_it() -> None:
    """The detector may join a turn's sentences with a space ("不對喔。 時間…"); the correction
    lead of the turn still counts."""
    from agentmem_vault.longterm.sources import Turn

    said = "不對喔。 時間一律用 UTC 存，不要存手機的本地時間。"
    turns = [
        Turn("user", "幫我寫存訂位的方法"),
        Turn("assistant", "用手機本地時間存就可以。"),
        Turn("user", said.replace(" ", "")),
    ]
    m = MemoryObject(action="create", title="x", content=said, category="", signal="correction", evidence=said)
    m.statement = Statement(kind="correction", order=2)
    assert apply_fields([m], turns, offline=True)[0].importance >= 0.9
