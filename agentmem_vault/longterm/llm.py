"""The Anthropic model behind a small interface: ``extract`` and ``assess``.

Structured output by a forced tool (``tool_choice={"type": "tool", ...}``) whose ``input_schema``
is the Memory Object schema; the static system prompt carries ``cache_control: ephemeral`` so
repeated calls read it from the prompt cache; retries (429, 5xx, 529 overloaded, connection
errors) are the SDK's own, honouring ``retry-after``. Whatever comes back is still validated by
the caller: this module only turns a reply into Python data or raises ``LLMError``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from importlib import resources
from string import Template
from typing import Any, Protocol

from agentmem_vault.errors import AgentmemError, LLMError  # noqa: F401 - LLMError re-exported
from agentmem_vault.longterm.schema import ASSESS_TOOL_SCHEMA, EXTRACT_TOOL_SCHEMA, MemoryObject

EXTRACT_TOOL = "record_memories"
ASSESS_TOOL = "record_assessment"

# USD per million tokens: input, output, cache read, cache write (5-minute). Config key
# ``prices: {input: .., output: .., cache_read: .., cache_write: ..}`` overrides.
_PRICES: tuple[tuple[str, tuple[float, float, float, float]], ...] = (
    ("opus-4-5", (5.0, 25.0, 0.50, 6.25)),
    ("opus-4-6", (5.0, 25.0, 0.50, 6.25)),
    ("opus", (15.0, 75.0, 1.50, 18.75)),
    ("haiku-4", (1.0, 5.0, 0.10, 1.25)),
    ("haiku", (0.80, 4.0, 0.08, 1.0)),
    ("sonnet", (3.0, 15.0, 0.30, 3.75)),
)


def load_prompt(name: str) -> str:
    return (resources.files("agentmem_vault.templates") / "prompts" / name).read_text(encoding="utf-8")


@dataclass
class Usage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, other: "Usage") -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def estimate_cost(usage: Usage, model: str, prices: dict | None = None) -> float:
    p = None
    if prices:
        try:
            p = (float(prices["input"]), float(prices["output"]), float(prices.get("cache_read", 0)), float(prices.get("cache_write", 0)))
        except (KeyError, TypeError, ValueError):
            p = None
    if p is None:
        p = next((v for k, v in _PRICES if k in model), _PRICES[-1][1])
    cost = (
        usage.input_tokens * p[0]
        + usage.output_tokens * p[1]
        + usage.cache_read_input_tokens * p[2]
        + usage.cache_creation_input_tokens * p[3]
    ) / 1_000_000
    return round(cost, 6)


class MemoryModel(Protocol):
    """What the pipeline needs from a model (a fake in tests need not be Anthropic at all)."""

    model: str

    def extract(self, conversation: str, *, context: str, existing_titles: list[str], project: str) -> tuple[Any, Usage]: ...

    def assess(self, conversation: str, memory: MemoryObject) -> tuple[Any, Usage]: ...


def _usage_of(resp: Any) -> Usage:
    u = getattr(resp, "usage", None)
    if u is None:
        return Usage(calls=1)
    return Usage(
        calls=1,
        input_tokens=int(getattr(u, "input_tokens", 0) or 0),
        output_tokens=int(getattr(u, "output_tokens", 0) or 0),
        cache_read_input_tokens=int(getattr(u, "cache_read_input_tokens", 0) or 0),
        cache_creation_input_tokens=int(getattr(u, "cache_creation_input_tokens", 0) or 0),
    )


def _json_from_text(text: str) -> Any:
    t = text.strip()
    m = re.search(r"```(?:json)?\s*(.*?)```", t, re.S)
    if m:
        t = m.group(1).strip()
    return json.loads(t)


def tool_input(resp: Any, tool: str) -> Any:
    """The forced tool's input, or JSON in a text block as a fallback; LLMError otherwise."""
    blocks = getattr(resp, "content", None) or []
    texts: list[str] = []
    for b in blocks:
        if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == tool:
            data = getattr(b, "input", None)
            if isinstance(data, str):  # some proxies hand the arguments back as a string
                try:
                    data = json.loads(data)
                except ValueError as exc:
                    raise LLMError(f"the model's {tool} arguments are not valid JSON") from exc
            return data
        if getattr(b, "type", None) == "text":
            texts.append(getattr(b, "text", "") or "")
    if texts:
        joined = "\n".join(texts)
        if "no_memory_needed" in joined:
            return {"memories": []} if tool == EXTRACT_TOOL else None
        try:
            return _json_from_text(joined)
        except ValueError as exc:
            raise LLMError("the model replied with text that is not valid JSON") from exc
    raise LLMError(f"the model did not call {tool}")


class AnthropicModel:
    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        assess_model: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
        max_tokens: int = 4096,
    ) -> None:
        import anthropic  # deferred: the offline path never pays for it

        self._anthropic = anthropic
        self.model = model
        self.assess_model = assess_model or model
        self.max_tokens = max_tokens
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout)
        self._extract_system = load_prompt("extract_system.md")
        self._assess_system = load_prompt("assess_system.md")
        self._extract_user = Template(load_prompt("extract_user.md"))
        self._assess_user = Template(load_prompt("assess_user.md"))

    def _call(self, *, model: str, system: str, user: str, tool: str, schema: dict, description: str) -> tuple[Any, Usage]:
        a = self._anthropic
        try:
            resp = self.client.messages.create(
                model=model,
                max_tokens=self.max_tokens,
                system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                tools=[{"name": tool, "description": description, "input_schema": schema}],
                tool_choice={"type": "tool", "name": tool},
                messages=[{"role": "user", "content": user}],
            )
        except a.APIStatusError as exc:
            raise LLMError(f"model call failed: HTTP {exc.status_code} {_short(exc)}") from exc
        except a.APIConnectionError as exc:
            raise LLMError(f"model call failed: {_short(exc)}") from exc
        except a.APIError as exc:  # includes replies that are not valid JSON at all
            raise LLMError(f"model reply unusable: {_short(exc)}") from exc
        except ValueError as exc:
            raise LLMError(f"model reply unusable: {_short(exc)}") from exc
        usage = _usage_of(resp)
        try:
            return tool_input(resp, tool), usage
        except LLMError as exc:
            exc.details["usage"] = usage.to_dict()
            raise

    def extract(self, conversation: str, *, context: str, existing_titles: list[str], project: str) -> tuple[Any, Usage]:
        titles = "\n".join(f"- {t}" for t in existing_titles) or "(none)"
        user = self._extract_user.safe_substitute(
            conversation=conversation, context=context or "(none)", existing_titles=titles, project=project or "(unknown)"
        )
        return self._call(
            model=self.model, system=self._extract_system, user=user, tool=EXTRACT_TOOL, schema=EXTRACT_TOOL_SCHEMA,
            description="Record the durable memories found in the conversation (an empty list when there are none).",
        )

    def assess(self, conversation: str, memory: MemoryObject) -> tuple[Any, Usage]:
        mem = json.dumps({"title": memory.title, "content": memory.content, "category": memory.category}, ensure_ascii=False)
        user = self._assess_user.safe_substitute(conversation=conversation, memory=mem)
        return self._call(
            model=self.assess_model, system=self._assess_system, user=user, tool=ASSESS_TOOL, schema=ASSESS_TOOL_SCHEMA,
            description="Record how worth remembering the memory is (1-5) and why.",
        )


def _short(exc: BaseException) -> str:
    s = " ".join(str(exc).split())
    return s[:300]


def api_key_from(cfg: dict) -> str | None:
    return os.environ.get("ANTHROPIC_API_KEY") or (str(cfg["anthropic_api_key"]) if cfg.get("anthropic_api_key") else None)


def model_from_config(cfg: dict, api_key: str) -> AnthropicModel:
    return AnthropicModel(
        api_key=api_key,
        model=str(cfg.get("model") or "claude-sonnet-4-6"),
        assess_model=cfg.get("assess_model") or None,
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or cfg.get("anthropic_base_url") or None,
        max_retries=int(cfg.get("max_retries", 4)),
        timeout=float(cfg.get("llm_timeout", 120.0)),
    )
