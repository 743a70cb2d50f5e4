"""Offline robustness (docs/extraction.md): continuations join the statement they point at,
enumerated requests give one memory per item, the specificity gate, the vague-phrase data files,
and the offline assessment on the 1-5 scale (extract, then assess, keep >= 4)."""

from __future__ import annotations

import pytest

from agentmem_vault.longterm.assess import assess_offline
from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.filters import quality_reason
from agentmem_vault.longterm.lexicon import _read_list, vague_phrases
from agentmem_vault.longterm.detect import anaphoric_only
from agentmem_vault.longterm.offline import extract_offline
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.model.textnorm import fold


def kept(*turns: tuple[str, str]) -> list[MemoryObject]:
    mems, _, _, _ = memories_from_turns([Turn(r, t) for r, t in turns])
    return mems


@pytest.mark.parametrize(
    "text",
    [
        "以後都照這樣做。",
        "就这么办。",
        "Do it like that from now on.",
        "對，就這樣，以後每次都這樣。",
        "Keep doing it this way.",
        "以后照这个来。",
        "Yep, that's how I want it every time.",
        "所有接口都这样。",
    ],
)
def test_continuations_say_nothing_alone(text):
    assert anaphoric_only(text)


@pytest.mark.parametrize(
    "text",
    [
        "以後都用 pnpm。",
        "Use black like that for every Python file in src/.",
        "這樣寫對嗎？",
        "Is it like that?",
    ],
)
def test_statements_are_not_continuations(text):
    assert not anaphoric_only(text)


@pytest.mark.parametrize(
    "turns,must",
    [
        (
            [
                ("user", "Sort imports with isort, profile black."),
                ("assistant", "Done."),
                ("user", "Do it like that from now on."),
            ],
            "isort",
        ),
        ([("user", "錯誤訊息一律附上 trace_id。"), ("assistant", "好。"), ("user", "以後都照這樣做。")], "trace_id"),
        ([("user", "配置文件统一放在 conf/ 目录。"), ("assistant", "好的。"), ("user", "就这么办。")], "conf/"),
        ([("user", "Name migrations with a date prefix like 2026_01_31_x. Do that from now on.")], "2026_01_31_x"),
    ],
)
def test_a_continuation_joins_its_statement_into_one_memory(turns, must):
    mems = kept(*turns)
    assert len(mems) == 1, [m.content for m in mems]
    assert must in mems[0].content and mems[0].score >= 4  # 5 with "from now on", 4 for a bare "就这么办"


def test_approval_of_a_one_off_instruction_sets_no_rule():
    assert kept(("user", "把 port 改成 8081。"), ("assistant", "改好了。"), ("user", "對，就這樣。")) == []


@pytest.mark.parametrize(
    "text,n",
    [
        ("記住三點：縮進用 2 個空格、變數用 snake_case、函式要有 docstring。", 3),
        (
            "Please remember a few things: use poetry for packaging; keep fixtures in tests/data; never print in library code.",
            3,
        ),
        ("Remember these:\n1. Go 1.22\n2. errors wrapped with %w\n3. no global state", 3),
        ("记住以下几点：第一，接口用 POST；第二，返回 JSON；", 2),
    ],
)
def test_enumerated_requests_give_one_memory_per_item(text, n):
    mems = kept(("user", text))
    assert len(mems) == n, [m.content for m in mems]
    assert all(m.score == 5 for m in mems)


def test_remember_with_two_clauses_and_no_count_is_one_rule():
    (m,) = kept(("user", "Remember: tests must never hit the network; mock HTTP with respx."))
    assert "respx" in m.content and "network" in m.content


def test_vague_phrase_lists_are_data_files_of_50_plus_per_language():
    assert len(_read_list("vague_phrases.zh.txt")) >= 50 and len(_read_list("vague_phrases.en.txt")) >= 50
    assert vague_phrases().hits(fold("程式碼要符合最佳實踐"))  # Traditional folds onto the list


def test_specificity_gate_drops_unspecific_unless_explicit():
    plain = MemoryObject(
        "create",
        "Nice",
        "I prefer that things feel nice and calm overall.",
        "user_behavior",
        score=4,
        signal="preference",
    )
    assert quality_reason(plain) == "no specificity signal and no explicit request"
    plain.signal = "explicit"
    plain.score = 5
    assert quality_reason(plain) is None


@pytest.mark.parametrize(
    "text,score",
    [
        ("記住：以後 commit 訊息用英文。", 5),
        ("From now on use uv instead of pip.", 5),
        ("No, don't use requests. Use httpx with a timeout.", 4),
        ("I prefer 4 spaces for indentation in Python files.", 4),
        ("I prefer things to be a bit nicer overall, you know.", 3),
        ("From now on please write clean code that follows best practices.", 2),
    ],
)
def test_offline_assessment_scale(text, score):
    [m] = extract_offline([Turn("user", text)])
    got, reason = assess_offline(m)
    assert got == score, reason
    assert reason


def test_kept_memories_carry_score_and_reason():
    [m] = kept(("user", "以後回答一律用繁體中文。"))
    assert m.score == 5 and m.assessment_reason
