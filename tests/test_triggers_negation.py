"""`say` refuses text that negates a trigger or asks about it (docs/triggers.md, "Negation and
questions"): exit 2 with the phrases it understood, nothing run. The rule is by form, so forms that
appear in no word list and every phrase of the table are checked, not a list of sentences."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem_vault.errors import UsageError
from agentmem_vault.model.triggers import load_phrases, route
from lifecycle_helpers import NOW, index_rows, row, write_index

SID = "2026-05-25-1318-cursor-main-agent"
OLD = "2026-05-01-0900-cursor-main-agent"

NEGATED = [
    "不要整理 memory",
    "別整理 memory",
    "别整理memory",
    "千萬不要清理 memory",
    "請勿封存 memory session " + SID,
    "今天先不整理 memory",
    "沒叫你整理 memory",
    "do not organize memory",
    "don't organize memory",
    "Don’t clean memory",
    "never archive " + SID,
    "you shouldn't organize memory yet",
    "we won't archive memory session " + SID,
    "no need to clean up memory",
    "please never release memory reference " + SID,
]
QUESTIONS = [
    "要整理 memory 嗎？",
    "要不要整理 memory",
    "整理 memory 吗",
    "是否需要封存 memory session " + SID,
    "should I organize memory?",
    "organize memory?",
    "can you archive " + SID + " ?",
]
RUN = [
    "整理 memory",
    "好，整理 memory",
    "不錯，整理 memory",
    "不用問了，整理 memory",
    "I don't mind. organize memory",
    "can you organize memory",
    "organize memory, no questions",
    "整理 memory 吧",
]


@pytest.mark.parametrize("text", NEGATED + QUESTIONS)
def test_negated_or_asked_triggers_are_refused_with_what_was_understood(text: str) -> None:
    with pytest.raises(UsageError) as info:
        route(text)
    err = info.value
    assert err.code == "negated_phrase" and err.exit_code == 2
    assert err.details["phrases"] and "nothing was run" in err.message
    assert err.details["phrases"][0]["phrase"] in err.message


@pytest.mark.parametrize("text", RUN)
def test_a_negation_or_question_elsewhere_does_not_stop_the_trigger(text: str) -> None:
    assert route(text).command == "organize"


PHRASES = [p for p in load_phrases()]


@given(
    p=st.sampled_from(PHRASES),
    lead=st.sampled_from(["不要", "別", "请不要", "千万别", "do not ", "don't ", "never ", "please don't "]),
)
def test_every_phrase_of_the_table_is_refused_after_a_negation(p, lead: str) -> None:
    with pytest.raises(UsageError) as info:
        route(lead + p.text)
    assert info.value.code == "negated_phrase"


@given(p=st.sampled_from(PHRASES), tail=st.sampled_from(["?", "？", " 嗎", "吗？", " ?"]))
def test_every_phrase_of_the_table_is_refused_as_a_question(p, tail: str) -> None:
    with pytest.raises(UsageError) as info:
        route(p.text + tail)
    assert info.value.code == "negated_phrase"


def test_cli_refuses_with_exit_2_and_runs_nothing(cli, vault) -> None:
    write_index(vault, [row(SID, "idle"), row(OLD, summary="有內容", updated="2026-05-02 09:00")])
    board = vault.index_path.read_bytes()
    for text in ["不要整理 memory", "do not organize memory", f"never archive {OLD}", "整理 memory？"]:
        proc = cli("say", text, "--json", vault=vault, env={"AGENTMEM_NOW": NOW})
        assert proc.returncode == 2, proc.stdout + proc.stderr
        err = json.loads(proc.stdout)["error"]
        assert err["code"] == "negated_phrase" and "Traceback" not in proc.stderr
        human = cli("say", text, vault=vault, env={"AGENTMEM_NOW": NOW})
        assert human.returncode == 2 and human.stderr.count("\n") == 1, human.stderr
    assert vault.index_path.read_bytes() == board
    assert set(index_rows(vault)) == {SID, OLD}
    assert not vault.archive_path(OLD).exists()
