"""The field checks on the model path (docs/notes.md, Fields): the real anthropic client against a
local Messages-API server. The model's category and importance are kept; a lead-in title, fragment
or generic keywords and per-category filler scenarios are replaced; the model's project guess is
never trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem_vault.longterm.extract import extract_sources
from agentmem_vault.longterm.llm import AnthropicModel
from agentmem_vault.longterm.notes import load_notes
from agentmem_vault.longterm.sources import source_for_transcript

from longterm_helpers import FakeMessagesAPI, memory

SAID = "對外 webhook 一律帶 Idempotency-Key，接收端以此去重。"


@pytest.fixture
def api():
    srv = FakeMessagesAPI().start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _no_base_url(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def test_a_models_fields_are_checked(vault, tmp_path: Path, api) -> None:
    api.extract_memories = [
        memory(
            "決定了：對外 webhook 一律帶 Idempotency-Key",
            SAID,
            category="important_decision_experience",
            keywords=["Idempotency-Key", "webhook", "對外", "一律帶", "以此去重", "Note"],
            usage_scenario=["與此使用者協作", "修改 webhook 重送邏輯時"],
            project="some-other-project",
            importance=0.85,
        )
    ]
    chat = tmp_path / "chat.md"
    chat.write_text(f"User: {SAID}\n\nAssistant: 好。\n", encoding="utf-8")
    model = AnthropicModel(api_key="sk-test", model="claude-sonnet-4-6", base_url=api.url, max_retries=1, timeout=10)
    rep = extract_sources(vault, [source_for_transcript(chat)], model=model)
    assert rep.count("create") == 1 and not rep.errors, rep.to_dict()
    (n,) = load_notes(vault)
    assert n.title == "對外 webhook 一律帶 Idempotency-Key"
    assert n.category == "important_decision_experience" and n.importance == 0.85
    assert {"Idempotency-Key", "webhook"} <= set(n.keywords)
    assert not {"對外", "一律帶", "以此去重", "Note"} & set(n.keywords)
    assert n.usage_scenario == ["修改 webhook 重送邏輯時"]
    assert (n.project, n.scope) == ("", "unscoped")  # a text file records no workspace: never the model's guess
