"""The model path with the two prompts (docs/extraction.md), against a local Messages-API stub
with the real anthropic client: the requests carry the prompts' content, every candidate is
assessed, scores below 4 are dropped, score and reason land in the note; the same with a server
that answers in text, one that refuses tools and prompt caching, prompt overrides from the vault,
and a local-model configuration (llm_base_url / llm_model, ANTHROPIC_AUTH_TOKEN)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem_vault.longterm.extract import extract_sources
from agentmem_vault.config import set_user_setting
from agentmem_vault.vault import user_config_dir
from agentmem_vault.longterm.llm import AnthropicModel, endpoint_from, model_from_config
from agentmem_vault.longterm.notes import load_notes
from agentmem_vault.longterm.sources import source_for_transcript

from longterm_helpers import FakeMessagesAPI, memory

CHAT = (
    "User: From now on use pnpm instead of npm in this repo.\n\n"
    "Assistant: OK.\n\n"
    "User: And keep functions under 50 lines.\n\n"
    "Assistant: Noted.\n"
)
CANDIDATES = [
    memory("Use pnpm", "Use pnpm instead of npm for every package operation in this repo."),
    memory(
        "Small functions",
        "Keep functions under 50 lines.",
        category="development_code_specification",
        keywords=["functions"],
    ),
    memory(
        "Project structure",
        "Frontend code goes in components/, backend code in services/.",
        category="project_introduction",
        keywords=["components"],
    ),
]
SCORES = {"Use pnpm": 5, "Small functions": 4, "Project structure": 3}

# What the seed prompts say, and must still say in the requests.
EXTRACT_MARKS = (
    "<目标>",
    "给定一段用户与助手的对话",
    "<正面标准>",
    "用户明确要求记住的任何内容",
    "<负面标准>",
    "纯粹来自助手对话而非用户对话的信息",
    "基本的软件工程原则，如关注点分离、DRY",
    "refactor-target: utils.ts 中的 calculateTotal",
    "settings-gating-pattern",
    "function-size-preference: 将函数控制在50行以内",
    "frontend-layout: 代码库的前端使用 Tailwind CSS",
    "no_memory_needed",
    "explanation",
)
ASSESS_MARKS = (
    "你是一名知识极其渊博的软件工程师AI助手",
    "与编程和软件工程领域相关",
    "如果用户表达了不满或纠正了助手",
    "<examples_rated_negatively>",
    "（过于明显且模糊——评分1）",
    "<examples_rated_neutral>",
    "project-structure",
    "<examples_rated_positively>",
    "（明确的工作流程偏好——评分5）",
    "倾向于给较低的评分",
    "若不确定或记忆处于边缘状态，评3分",
    "若用户明确要求记住某件事，则无论内容如何，都评5分",
    "“评分：[分数]”",
    "先填 reason",
)


@pytest.fixture
def api():
    srv = FakeMessagesAPI().start()
    srv.extract_memories = CANDIDATES
    srv.assess_score = lambda req: next(v for k, v in SCORES.items() if f'"{k}:' in req["messages"][0]["content"])
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(k, raising=False)


def _chat(tmp_path: Path) -> Path:
    p = tmp_path / "chat.md"
    p.write_text(CHAT, encoding="utf-8")
    return p


def _model(api: FakeMessagesAPI, **kw) -> AnthropicModel:
    return AnthropicModel(
        api_key="sk-test", model="claude-sonnet-4-6", base_url=api.url, max_retries=0, timeout=10, **kw
    )


def _system(req: dict) -> str:
    return " ".join(b["text"] for b in req["system"])


def _check_run(vault, api, rep) -> None:
    assert not rep.errors, rep.errors
    extract = api.answered("extract")
    assess = api.answered("assess")
    assert len(extract) == 1 and len(assess) == 3  # every candidate is assessed once
    for mark in EXTRACT_MARKS:
        assert mark in _system(extract[0]), mark
    assert "use pnpm instead of npm" in extract[0]["messages"][0]["content"]
    for req in assess:
        for mark in ASSESS_MARKS:
            assert mark in _system(req), mark
        user = req["messages"][0]["content"]
        assert "<conversation_context>" in user and "keep functions under 50 lines" in user
    assert {t for t in SCORES if any(f'"{t}:' in r["messages"][0]["content"] for r in assess)} == set(SCORES)
    notes = {n.title: n for n in load_notes(vault)}
    assert set(notes) == {"Use pnpm", "Small functions"}  # the 3 is dropped
    assert notes["Use pnpm"].score == 5 and notes["Small functions"].score == 4
    assert all(n.assessment_reason for n in notes.values())
    assert any("assessed 3 < 4" in s["reason"] for s in rep.skipped)


def test_forced_tool_shape(vault, tmp_path, api):
    rep = extract_sources(vault, [source_for_transcript(_chat(tmp_path))], model=_model(api))
    _check_run(vault, api, rep)
    req = api.answered("extract")[0]
    assert req["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert list(req["tools"][0]["input_schema"]["properties"])[:2] == ["explanation", "memories"]
    assess = api.answered("assess")[0]
    assert list(assess["tools"][0]["input_schema"]["properties"]) == ["reason", "score"]  # explanation before score


def test_text_shape_is_parsed_and_validated_the_same(vault, tmp_path, api):
    api.shape = "text"
    rep = extract_sources(vault, [source_for_transcript(_chat(tmp_path))], model=_model(api))
    _check_run(vault, api, rep)
    notes = {n.title: n for n in load_notes(vault)}
    assert "具体且可操作" in notes["Use pnpm"].assessment_reason


def test_server_without_tools_or_caching_gets_json_in_text(vault, tmp_path, api):
    api.shape = "no-tools"
    model = _model(api)
    rep = extract_sources(vault, [source_for_transcript(_chat(tmp_path))], model=model)
    _check_run(vault, api, rep)
    assert model.prompt_caching is False and model.tool_mode == "json"
    assert api.statuses[:2] == [400, 400]  # asked once with caching + tools, once with tools only
    for req in api.answered("extract") + api.answered("assess"):
        assert "tools" not in req and "JSON Schema" in req["messages"][0]["content"]
        assert all("cache_control" not in b for b in req["system"])


def test_schema_violations_in_text_are_skipped(vault, tmp_path, api):
    api.shape = "text"
    api.extract_memories = [{"title": "x", "content": "no category here at all", "action": "create"}]
    rep = extract_sources(vault, [source_for_transcript(_chat(tmp_path))], model=_model(api))
    assert load_notes(vault) == [] and any("schema" in s["reason"] for s in rep.skipped)


def test_prompt_override_from_the_vault(vault, tmp_path, api):
    d = vault.state_dir / "prompts"
    d.mkdir(parents=True)
    (d / "assess_system.md").write_text("OVERRIDDEN 评分 值得记住 rubric", encoding="utf-8")
    cfg = {"llm_model": "qwen3-coder"}
    set_user_setting("llm_base_url", api.url)  # the user's choice (a vault's own needs an opt-in)
    model = model_from_config(cfg, endpoint_from(cfg), prompts_dir=d)
    extract_sources(vault, [source_for_transcript(_chat(tmp_path))], model=model)
    assess = api.answered("assess")
    assert assess and all(_system(r) == "OVERRIDDEN 评分 值得记住 rubric" for r in assess)
    assert "<目标>" in _system(api.answered("extract")[0])  # the others stay the shipped ones


def test_local_model_config_and_auth_token(vault, tmp_path, api, monkeypatch):
    (vault.state_dir).mkdir(parents=True, exist_ok=True)
    vault.config_path.write_text(f"llm_base_url: {api.url}\nllm_model: qwen3-coder\n", encoding="utf-8")
    # a server named by the vault needs the user's opt-in (docs/reliability.md, the trust boundary)
    user_config_dir().mkdir(parents=True, exist_ok=True)
    (user_config_dir() / "config.yaml").write_text("llm_allow_vault_base_url: true\n", encoding="utf-8")
    rep = extract_sources(vault, [source_for_transcript(_chat(tmp_path))])
    assert rep.mode == "model" and not rep.errors
    assert {r["body"]["model"] for r in api.requests} == {"qwen3-coder"}
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "ollama")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    cfg: dict = {}
    endpoint = endpoint_from(cfg)
    assert endpoint is not None and endpoint.auth_token == "ollama" and endpoint.base_url == api.url
    model_from_config(cfg, endpoint).extract("User: hi", context="", existing_titles=[], project="")
    assert api.requests[-1]["headers"].get("Authorization") == "Bearer ollama"
