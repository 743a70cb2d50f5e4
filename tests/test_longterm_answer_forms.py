"""The answer forms the seed's own prompts ask for, read by the model path (docs/extraction.md,
"Models and compatible servers"): "no_memory_needed" quoted or bare, the extraction prompt's
{"explanation", "memory": "label: text"}, score lines as models write them; a malformed answer is
skipped with its reason and not asked again on every later run. The real anthropic client
against a local Messages-API server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem_vault.longterm.extract import extract_sources
from agentmem_vault.longterm.llm import AnthropicModel
from agentmem_vault.longterm.notes import load_notes
from agentmem_vault.longterm.sources import source_for_transcript

from longterm_helpers import FakeMessagesAPI, api, memory, no_base_url, text_reply, tool_reply

PNPM = "From now on use pnpm instead of npm in this repo."
pytestmark = pytest.mark.usefixtures("no_base_url")
__all__ = ["api", "no_base_url"]  # the fixtures, imported for pytest


def _model(api: FakeMessagesAPI) -> AnthropicModel:
    return AnthropicModel(api_key="sk-test", model="claude-sonnet-4-6", base_url=api.url, max_retries=0, timeout=10)


def _run(vault, tmp_path: Path, api: FakeMessagesAPI):
    p = tmp_path / "chat.md"
    if not p.exists():
        p.write_text(f"User: {PNPM}\n\nAssistant: OK.\n", encoding="utf-8")
    return extract_sources(vault, [source_for_transcript(p)], model=_model(api))


@pytest.mark.parametrize("answer", ['"no_memory_needed"', "no_memory_needed", '{"memory": "no_memory_needed"}'])
def test_no_memory_needed_in_every_form_is_an_answer_not_an_error(vault, tmp_path, api, answer):
    api.script = [text_reply(answer)]
    rep = _run(vault, tmp_path, api)
    assert not rep.errors and not rep.skipped and load_notes(vault) == [], rep.to_dict()
    calls = len(api.requests)
    again = _run(vault, tmp_path, api)  # recorded: a later run does not pay for it again
    assert again.sources[0]["status"] == "unchanged" and len(api.requests) == calls


@pytest.mark.parametrize("as_tool", [False, True])
def test_the_extraction_prompts_own_json_form(vault, tmp_path, api, as_tool):
    said = {
        "explanation": "It is a stated, reusable tool choice; no negative criterion applies.",
        "memory": "prefer-pnpm: Use pnpm instead of npm for every package operation in this repo.",
    }
    api.script = [tool_reply("record_memories", said) if as_tool else text_reply(json.dumps(said))]
    rep = _run(vault, tmp_path, api)
    assert not rep.errors, rep.to_dict()
    (n,) = load_notes(vault)
    assert "Use pnpm instead of npm" in n.content and n.title == "prefer pnpm"


@pytest.mark.parametrize(
    "line,score",
    [
        ("**评分：5**", 5),
        ("评分：5分", 5),
        ("Score: 4/5", 4),
        ("評分：５", 5),
        ("**Score:** 4", 4),
        ("评分：[4]", 4),
    ],
)
def test_score_lines_as_models_write_them(vault, tmp_path, api, line, score):
    good = memory("Use pnpm", "Use pnpm instead of npm for every package operation in this repo.")
    api.script = [
        tool_reply("record_memories", {"explanation": "none violated", "memories": [good]}),
        text_reply(f"它不同于负面示例：具体且可操作，是明确的技术选择。\n{line}"),
    ]
    rep = _run(vault, tmp_path, api)
    assert not rep.skipped and not rep.errors, rep.to_dict()
    (n,) = load_notes(vault)
    assert n.score == score


def test_a_malformed_answer_is_skipped_with_its_reason_and_not_retried_forever(vault, tmp_path, api):
    api.script = [text_reply("Sure! Here are the memories: {memories: [oops")]
    rep = _run(vault, tmp_path, api)
    assert not rep.errors and load_notes(vault) == []
    assert "not valid JSON" in rep.skipped[0]["reason"], rep.to_dict()
    calls = len(api.requests)
    again = _run(vault, tmp_path, api)
    assert again.sources[0]["status"] == "unchanged" and len(api.requests) == calls


def _seed_note(vault, tmp_path: Path, api: FakeMessagesAPI, title: str, content: str) -> None:
    api.script = [tool_reply("record_memories", {"explanation": "ok", "memories": [memory(title, content)]})]
    p = tmp_path / "first.md"
    p.write_text(f"User: {content}\n\nAssistant: OK.\n", encoding="utf-8")
    assert not extract_sources(vault, [source_for_transcript(p)], model=_model(api)).errors


def test_the_curator_sees_the_full_text_and_its_merged_update_keeps_the_core_rule(vault, tmp_path, api):
    core = "Always wrap database calls in `with session_scope():` so that every session is closed."
    _seed_note(vault, tmp_path, api, "Wrap database calls in session_scope", core)
    merged = f"{core} Background jobs too: each job opens its own session_scope."
    upd = memory("Wrap database calls in session_scope", merged, action="update")
    api.script = [tool_reply("record_memories", {"explanation": "a supplement", "memories": [upd]})]
    p = tmp_path / "second.md"
    p.write_text("User: Adding to the session_scope rule: background jobs too.\n\nAssistant: OK.\n", encoding="utf-8")
    rep = extract_sources(vault, [source_for_transcript(p)], model=_model(api))
    assert not rep.errors, rep.to_dict()
    prompt = json.dumps(api.calls("record_memories")[-1]["messages"], ensure_ascii=False)
    assert "so that every session is closed" in prompt  # the note's full text, not only its title
    (n,) = [x for x in load_notes(vault) if x.active]
    assert n.content == merged and n.history and n.history[0].text == core


def test_a_reversal_retires_the_old_rule_even_when_the_model_only_creates_the_new_one(vault, tmp_path, api):
    _seed_note(vault, tmp_path, api, "Run yarn lint before finishing", "From now on run `yarn lint` before you finish.")
    new = memory("Run npm run verify before finishing", "Run `npm run verify` before you finish a change.")
    api.script = [tool_reply("record_memories", {"explanation": "new rule", "memories": [new]})]
    p = tmp_path / "second.md"
    p.write_text(
        "User: Forget the yarn lint rule, we switched to `npm run verify`. Run that before finishing.\n\n"
        "Assistant: OK.\n",
        encoding="utf-8",
    )
    rep = extract_sources(vault, [source_for_transcript(p)], model=_model(api))
    assert not rep.errors, rep.to_dict()
    active = [x.title for x in load_notes(vault) if x.active]
    assert active == ["Run npm run verify before finishing"], active
