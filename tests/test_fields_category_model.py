"""The learned category scorer and the importance rules the round's held-out set found wrong
(docs/notes.md, Fields: category, importance; Labels)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_vault.longterm.fields.category import category_for
from agentmem_vault.longterm.fields.derive import derive_offline
from agentmem_vault.longterm.fields.importance import importance_for
from agentmem_vault.longterm.schema import CATEGORIES, MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.longterm.statement import Statement

ROOT = Path(__file__).resolve().parent.parent


def derived(turns: list[Turn], said: str, kind: str) -> MemoryObject:
    m = MemoryObject(action="create", title="x", content=said, category="", signal=kind, evidence=said)
    m.statement = Statement(kind=kind, order=len(turns) - 1)
    return derive_offline(m, turns=turns)


def test_the_model_file_knows_the_eleven_categories() -> None:
    from agentmem_vault.longterm.fields.category import model

    prior, weights, _ = model()
    assert set(prior) == set(CATEGORIES) and len(weights) > 1000


def test_a_library_named_in_a_rule_on_how_code_or_tests_use_it_is_not_the_stack_choice() -> None:
    assert category_for("Sqlx queries go through the `query!` macros, no raw strings", "rule") == (
        "development_code_specification"
    )
    assert category_for("测试也要用 Postgres，sqlite 跑不了 JSONB", "rule") == "development_test_specification"
    assert category_for("日志统一用 structlog", "rule") == "project_tech_stack"  # the choice itself


def test_a_red_line_is_in_the_rule_not_in_its_reason() -> None:
    said = "我們決定所有 module 一律 pin 到 git tag，不准再用 ref=main。原因是那次 main 改壞，prod 差點被 destroy。"
    assert 0.7 <= importance_for("decision", said) < 0.9
    assert importance_for("rule", "never run terraform apply against prod") >= 0.9


def test_the_name_of_a_production_artifact_is_no_red_line() -> None:
    said = "The production image is built from `docker/Dockerfile.prod`; don't add build tools to that stage."
    assert 0.7 <= importance_for("rule", said) < 0.9
    assert importance_for("rule", "don't touch the production database") >= 0.9


def test_the_band_follows_what_the_statement_turned_out_to_be() -> None:
    """A rule the detector read as a pitfall is a rule (0.7-0.9), not experience."""
    said = "Commit messages are conventional commits, and never add yourself as a co-author."
    m = derived([Turn("user", said)], said, "pitfall")
    assert m.category == "development_practice_specification" and 0.7 <= m.importance < 0.9


def test_the_user_revising_a_rule_of_their_own_corrects_nobody() -> None:
    turns = [
        Turn("user", "Log with print in this repo for now."),
        Turn("assistant", "OK, I'll use print."),
        Turn("user", "Actually, scratch what I said about print: use the logging module."),
    ]
    assert 0.7 <= derived(turns, turns[-1].text, "reversal").importance < 0.9
    said = "等等，剛剛 anyhow 那條要改，library crate 裡面不要用 anyhow，改用 thiserror。"
    turns = [Turn("user", "錯誤處理用 anyhow。"), Turn("assistant", "好，我用 anyhow 寫了。"), Turn("user", said)]
    assert 0.7 <= derived(turns, said, "reversal").importance < 0.9


def test_telling_the_assistant_what_it_just_did_wrong_is_a_correction() -> None:
    said = "你刚才改完就说好了，结果我一跑 tsc 一片红。以后你改完代码都先自己跑一遍 lint 和类型检查。"
    turns = [Turn("user", "改一下表单"), Turn("assistant", "改好了。"), Turn("user", said)]
    assert derived(turns, said, "rule").importance >= 0.9
    said = "You renamed a response field and the mobile app broke. Never rename a public field without a version bump."
    turns = [Turn("user", "add it"), Turn("assistant", "Added, and renamed total to amount."), Turn("user", said)]
    assert derived(turns, said, "rule").importance >= 0.9
    # the chat need not show the assistant's turn: the words say what it did
    said = "你刚才改完就说好了，结果我一跑 tsc 一片红。以后改完先自己跑 lint。"
    assert derived([Turn("user", said)], said, "convention").importance >= 0.9
    # "你说得对" agrees with the assistant
    said = "你说得对，金额字段统一用 decimal。"
    turns = [Turn("user", "金额怎么存"), Turn("assistant", "建议用 decimal。"), Turn("user", said)]
    assert derived(turns, said, "rule").importance < 0.9


@pytest.mark.parametrize("how", ["--sets", "--held-out"])
def test_the_training_script_refuses_a_held_out_set(tmp_path: Path, how: str) -> None:
    out = tmp_path / "m.tsv"
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train_categories.py"), how, "unseen6", "--out", str(out)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    assert p.returncode == 2 and "refused" in p.stderr and not out.exists()


@pytest.mark.parametrize("damage", ["missing", "not a count", "no @docs", "a zero prior"])
def test_a_damaged_or_missing_counts_file_is_a_clear_error(vault, cli, monkeypatch, tmp_path, damage) -> None:
    """A broken install (the counts file gone, hand-edited, cut short): `extract` names the file
    and says to reinstall, exit 1, never a traceback (was: ValueError / FileNotFoundError)."""
    import os

    from agentmem_vault.longterm.fields import category

    shipped = Path(category.__file__).parents[3] / "templates" / "fields"
    bad = tmp_path / "model.tsv"
    text = (shipped / category.MODEL).read_text(encoding="utf-8")
    docs = next(ln for ln in text.splitlines() if ln.startswith("@docs"))
    bad.write_text(
        {
            "missing": "",
            "not a count": text.replace("=", "=x", 1),
            "no @docs": text.replace(docs + "\n", ""),
            "a zero prior": text.replace(docs, re.sub(r"=\d+", "=0", docs, count=1)),
        }[damage],
        encoding="utf-8",
    )
    if damage == "missing":
        bad.unlink()
    monkeypatch.setattr(category, "MODEL", os.path.relpath(bad, shipped))
    category.model.cache_clear()
    category.category_for.cache_clear()
    chat = tmp_path / "chat.txt"
    chat.write_text("user: We always use structlog for logging in this repo, never print.\nassistant: OK.\n")
    try:
        got = cli("extract", "--file", str(chat), "--offline", vault=vault)
    finally:
        category.model.cache_clear()
        category.category_for.cache_clear()
    assert got.returncode == 1 and "Traceback" not in got.stderr, got.stderr
    assert "category_model.tsv" in got.stderr or "model.tsv" in got.stderr
    assert "reinstall agentmem" in got.stderr


def test_the_cue_lists_best_category_is_a_feature_of_its_own() -> None:
    """The words of a machine ("開發機", "Ubuntu") are the environment's; the cue list's answer,
    how to hand the user commands, is what the statement is (docs/notes.md, Category)."""
    from agentmem_vault.longterm.fields.category import features

    said = "我的開發機是 Ubuntu，給我的指令請用 apt 的寫法。"
    assert features(said, "environment")["top:user_communication"] > 0
    assert category_for(said, "environment") == "user_communication"


@pytest.mark.parametrize(
    "said",
    [
        "Going with Redis for sessions, since every pod needs to see the same ones.",
        "快取這塊評估了 Redis 跟 Memcached 兩個選項，用 Redis。",
    ],
)
def test_weighing_alternatives_is_a_decision_whatever_it_names(said: str) -> None:
    assert category_for(said, "rule") == "important_decision_experience"


def test_a_rules_story_in_its_reason_does_not_make_it_a_pitfall() -> None:
    said = "Always set a timeout on outgoing HTTP calls - a hung call silently froze the worker last week."
    assert category_for(said, "rule") == "development_code_specification"
    # a pitfall is still read with its cause
    assert category_for("Uploads hang on the VPN, the root cause is the proxy's MTU.", "pitfall") == (
        "common_pitfalls_experience"
    )


ASKED = [
    Turn("user", "加一下設定頁的路由。"),
    Turn("assistant", "路由加好了。總結一下我做了什麼：1. 加了路由 2. 加了元件"),
]


@pytest.mark.parametrize(
    "said",
    [
        "我很煩你每次開頭都先誇一句「好問題」，直接回答就好。",
        "你老是把整个文件贴出来，以后只给 diff。",
        "Let's settle the layout once so I stop repeating it in every review: routers live in src/routers/.",
    ],
)
def test_a_complaint_about_a_habit_is_a_preference_not_a_correction(said: str) -> None:
    assert 0.7 <= derived([*ASKED, Turn("user", said)], said, "preference").importance < 0.9


@pytest.mark.parametrize(
    "said",
    [
        "唉，不對。金額在這裡一律用整數分存，不能用 float 加。",
        "其他都行。但錯誤那塊不行，要用 fmt.Errorf 加 %w 包起來。",
        "Ugh, no. Money is never a float here; keep amounts as integer cents.",
        "Looks fine mostly, but that errors.New with string concat - don't. Wrap with fmt.Errorf and %w.",
    ],
)
def test_a_correction_may_open_with_an_interjection_or_what_was_fine(said: str) -> None:
    assert derived([*ASKED, Turn("user", said)], said, "correction").importance >= 0.9


def test_a_habit_complained_of_in_a_correcting_turn_stays_a_preference() -> None:
    said = "I can't stand it when you rename my variables while fixing something else. Keep the diff to what I asked."
    turn = "Ugh, no. A few things. Don't use raw SQL here. And " + said
    m = derived([*ASKED, Turn("user", turn)], said, "preference")
    assert 0.7 <= m.importance < 0.9
