"""The Anthropic model behind a small interface: ``extract`` and ``assess`` (docs/extraction.md).

The two prompts are templates (``templates/prompts/``; a vault may override any of them in
``memory/.agentmem/prompts/``). Structured output by a forced tool (``tool_choice={"type": "tool",
...}``) whose ``input_schema`` is the Memory Object schema; the static system prompt carries
``cache_control: ephemeral`` so repeated calls read it from the prompt cache; retries (429, 5xx,
529 overloaded, connection errors) are the SDK's own, honouring ``retry-after``.

Any Anthropic-compatible Messages endpoint works (Ollama, llama.cpp's llama-server, gateways):
a server that rejects ``cache_control`` is asked again without it, one that rejects tools is asked
for JSON in text, and a model that answers in text instead of calling the tool has that text
parsed; either way the caller validates the data with the same schema. This module only turns a
reply into Python data or raises ``LLMError``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, Protocol

from agentmem_vault.errors import AgentmemError, LLMError
from agentmem_vault.fs import read_bytes
from agentmem_vault.longterm.endpoint import LOCAL_KEY, Endpoint, resolve_endpoint
from agentmem_vault.longterm.schema import ASSESS_TOOL_SCHEMA, EXTRACT_TOOL_SCHEMA, MemoryObject, parse_score

EXTRACT_TOOL = "record_memories"
ASSESS_TOOL = "record_assessment"
# each tool's input schema and description
_TOOLS = {
    EXTRACT_TOOL: (
        EXTRACT_TOOL_SCHEMA,
        "Record the explanation, then the memories worth keeping (an empty list when there are none).",
    ),
    ASSESS_TOOL: (ASSESS_TOOL_SCHEMA, "Record the reason first, then the score (1-5)."),
}

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


DEFAULT_SOURCE_DEADLINE = 45.0  # seconds of model calls per source (config llm_source_deadline)

_scope = threading.local()  # the current source's deadline, per worker thread


@contextmanager
def source_deadline(deadline: float, total: float, label: str) -> Iterator[None]:
    """Model calls made inside (on this thread) stop at ``deadline`` (``time.monotonic()``)."""
    old = (getattr(_scope, "deadline", None), getattr(_scope, "total", None), getattr(_scope, "label", None))
    _scope.deadline, _scope.total, _scope.label = deadline, total, label
    try:
        yield
    finally:
        _scope.deadline, _scope.total, _scope.label = old


@contextmanager
def _progress(label: str, deadline: float, total: float, every: float) -> Iterator[None]:
    """While a request waits, one stderr line every ``every`` seconds: a silent server is visible."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            used = time.monotonic() - (deadline - total)  # the source's real time so far
            try:
                sys.stderr.write(f"agentmem: waiting for the model on {label} ({used:.0f} s of {total:g} s)\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                return

    if every > 0:
        threading.Thread(target=run, name="agentmem-llm-progress", daemon=True).start()
    try:
        yield
    finally:
        stop.set()


PROMPT_BYTES = 1 << 20  # a prompt is a few KB


def load_prompt(name: str, override_dir: Path | None = None) -> str:
    """A prompt template: the vault's copy in ``override_dir`` when there is one, else the shipped one."""
    if override_dir is not None:
        p = Path(override_dir) / name
        try:  # vault data: never a link out of the vault (its target would go to the model), a FIFO
            raw = read_bytes(p, limit=PROMPT_BYTES)
            text = (raw or b"").decode("utf-8-sig").replace("\r\n", "\n")
            if text.strip():
                return text
        except UnicodeDecodeError as exc:
            raise LLMError(f"cannot read the prompt override {p}: not UTF-8 text") from exc
        except AgentmemError as exc:
            raise LLMError(f"cannot read the prompt override {p}: {exc.message}") from exc
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


# the token counts of a Usage, in the order of a price tuple
_TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_CACHE_PRICES = ("cache_read", "cache_write")


def estimate_cost(usage: Usage, model: str, prices: dict | None = None) -> float:
    p: tuple[float, ...] = next((v for k, v in _PRICES if k in model), _PRICES[-1][1])
    if prices:
        try:
            p = (float(prices["input"]), float(prices["output"]), *(float(prices.get(k, 0)) for k in _CACHE_PRICES))
        except (KeyError, TypeError, ValueError):
            pass
    tokens = asdict(usage)
    return round(sum(tokens[k] * rate for k, rate in zip(_TOKENS, p, strict=True)) / 1_000_000, 6)


class MemoryModel(Protocol):
    """What the pipeline needs from a model (a fake in tests need not be Anthropic at all)."""

    model: str

    def extract(
        self, conversation: str, *, context: str, existing_titles: list[str], project: str
    ) -> tuple[Any, Usage]: ...

    def assess(self, conversation: str, memory: MemoryObject) -> tuple[Any, Usage]: ...


def _usage_of(resp: Any) -> Usage:
    u = getattr(resp, "usage", None)
    return Usage(1, *(int(getattr(u, k, 0) or 0) for k in _TOKENS))


def _json_from_text(text: str) -> Any:
    t = text.strip()
    m = re.search(r"```(?:json)?\s*(.*?)```", t, re.S)
    if m:
        t = m.group(1).strip()
    return json.loads(t)


# The assessment prompt's own text format: the reason, then "评分：N" on its own line, as models
# write it: "**评分：5**", "评分：5分", "Score: 4/5", "評分：［４］", full-width digits.
_SCORE_LINE = re.compile(
    r"^[\s*_#>]*(?:评分|評分|分数|分數|得分|score|rating)[\s*_]*[:：]\s*[*_\s]*[\[［【(（]?\s*(\S{1,6}?)\s*[\]］】)）]?"
    r"\s*(?:分|points?|pts)?\s*[*_。.!！\s]*$",
    re.I | re.M,
)


def _score_from_text(text: str) -> dict | None:
    for m in reversed(list(_SCORE_LINE.finditer(text))):
        score = parse_score(m.group(1))
        if score is not None:
            return {"reason": text[: m.start()].strip(), "score": score}
    return None


NO_MEMORY = ("no_memory_needed", "no_memory_suggested")
# The extraction prompt's own answer (seed): {"explanation": ..., "memory": "label: text"}
_LABELLED = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*)\s*[:：]\s*(\S.*)$", re.S)


def _seed_memory(text: str) -> dict | None:
    """One Memory Object from the prompt's "label: text" answer; the fields the answer does not
    carry are left for the field rules (category by what the text says)."""
    from agentmem_vault.longterm.fields.category import category_for

    m = _LABELLED.match(text.strip())
    if m is None:
        return None
    label, body = m.group(1), " ".join(m.group(2).split())
    return {
        "action": "create",
        "title": label.replace("-", " ").replace("_", " "),
        "content": body,
        "category": category_for(body),
        "keywords": [],
        "usage_scenario": [],
        "importance": 0.8,
        "reason": "the model's answer in the extraction prompt's own format",
    }


def normalize_extraction(raw: Any) -> Any:
    """Every answer form the extraction prompt allows, as ``{"memories": [...]}``: the tool's
    input, a bare list, the exact text "no_memory_needed" (quoted or not), and the prompt's own
    JSON ``{"explanation", "memory": "label: text"}`` (one memory or a list of them). Anything
    else comes back unchanged (the caller reports it as not matching the schema)."""
    if isinstance(raw, str):
        if raw.strip().strip("\"'").strip() in NO_MEMORY:
            return {"memories": []}
        one = _seed_memory(raw)
        return {"memories": [one]} if one else raw
    if isinstance(raw, list):
        return {"memories": raw}
    if isinstance(raw, dict) and "memories" not in raw and "memory" in raw:
        said = raw["memory"]
        items = said if isinstance(said, list) else [said]
        out: list[Any] = []
        for item in items:
            if isinstance(item, str) and item.strip().strip("\"'").strip() in NO_MEMORY:
                continue
            out.append((_seed_memory(item) or item) if isinstance(item, str) else item)
        return {"explanation": raw.get("explanation", ""), "memories": out}
    return raw


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
        try:
            return _json_from_text(joined)
        except ValueError as exc:
            if tool == ASSESS_TOOL:
                scored = _score_from_text(joined)
                if scored is not None:
                    return scored
            if tool == EXTRACT_TOOL and any(x in joined for x in NO_MEMORY):
                return {"memories": []}
            if tool == EXTRACT_TOOL and _seed_memory(joined.strip().splitlines()[-1] if joined.strip() else ""):
                return joined.strip().splitlines()[-1]
            raise LLMError("the model replied with text that is not valid JSON", details={"malformed": True}) from exc
    raise LLMError(f"the model did not call {tool}")


class AnthropicModel:
    def __init__(
        self,
        *,
        api_key: str | None,
        model: str,
        assess_model: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
        max_tokens: int = 4096,
        deadline_seconds: float = DEFAULT_SOURCE_DEADLINE,
        progress_seconds: float = 10.0,
        auth_token: str | None = None,
        prompts_dir: Path | None = None,
        prompt_caching: bool = True,
        tool_mode: str = "auto",
    ) -> None:
        import anthropic  # deferred: the offline path never pays for it

        if tool_mode not in ("auto", "tool", "json"):
            raise LLMError(f"llm_tool_mode must be auto, tool or json (not {tool_mode!r})")
        self._anthropic = anthropic
        self.max_retries = max_retries
        self.timeout = timeout
        self.deadline_seconds = deadline_seconds
        self.progress_seconds = progress_seconds
        self.model = model
        self.assess_model = assess_model or model
        self.max_tokens = max_tokens
        # Explicit credentials always (longterm/endpoint.py): given none, the SDK would read the
        # user's ANTHROPIC_API_KEY itself and send it wherever base_url points.
        self._client_args: dict[str, Any] = {"api_key": api_key, "auth_token": auth_token, "base_url": base_url}
        if api_key is None and auth_token is None:
            self._client_args["api_key"] = LOCAL_KEY
        self.prompt_caching = prompt_caching
        self.tool_mode = tool_mode  # "auto": forced tool, JSON in text once the server refuses tools
        self._extract_system = load_prompt("extract_system.md", prompts_dir)
        self._assess_system = load_prompt("assess_system.md", prompts_dir)
        self._extract_user = Template(load_prompt("extract_user.md", prompts_dir))
        self._assess_user = Template(load_prompt("assess_user.md", prompts_dir))

    def _create(self, *, model: str, system: str, user: str, tool: str) -> Any:
        """A compatible server that does not know prompt caching or tools may refuse the request
        outright (HTTP 400): ask again without caching, then for JSON in text. What worked is
        kept for the following calls."""
        schema, description = _TOOLS[tool]
        while True:
            sys_block: dict[str, Any] = {"type": "text", "text": system}
            if self.prompt_caching:
                sys_block["cache_control"] = {"type": "ephemeral"}
            kw: dict[str, Any] = {"model": model, "max_tokens": self.max_tokens, "system": [sys_block]}
            if self.tool_mode == "json":
                kw["messages"] = [{"role": "user", "content": user + _json_instruction(tool, schema)}]
            else:
                kw["tools"] = [{"name": tool, "description": description, "input_schema": schema}]
                kw["tool_choice"] = {"type": "tool", "name": tool}
                kw["messages"] = [{"role": "user", "content": user}]
            try:
                return self._send(**kw)
            except self._anthropic.BadRequestError:
                if self.prompt_caching:
                    self.prompt_caching = False
                elif self.tool_mode == "auto":
                    self.tool_mode = "json"
                else:
                    raise

    def _send(self, **kw: Any) -> Any:
        """One request, retried (429, 5xx, 529, connection errors; ``retry-after`` honoured) but
        never past the current source's deadline (docs/reliability.md): each attempt's timeout is
        what is left of it, and a server that accepts and never answers costs at most the
        deadline, not timeout x retries. Progress goes to stderr while a request is waiting."""
        a = self._anthropic
        deadline = getattr(_scope, "deadline", None) or time.monotonic() + self.deadline_seconds
        label = getattr(_scope, "label", None) or "the model call"
        total = getattr(_scope, "total", None) or self.deadline_seconds
        attempt = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0.05:
                raise LLMError(
                    f"no answer from the model for {label} within the {total:g} s deadline "
                    "(llm_source_deadline); it is retried next run",
                    code="llm_timeout",
                )
            with _progress(label, deadline, total, self.progress_seconds):
                try:
                    return _within(self._attempt(kw, min(self.timeout, left)), left)
                except TimeoutError:
                    continue  # the deadline passed mid-reply: the check above says so
                except a.APIStatusError as exc:
                    if exc.status_code not in (408, 409, 429) and exc.status_code < 500:
                        raise
                    err: Exception = exc
                except a.APIConnectionError as exc:  # includes timeouts
                    err = exc
            attempt += 1
            if attempt > self.max_retries:
                raise err
            wait = min(8.0, 0.5 * 2 ** (attempt - 1))
            try:
                wait = float(getattr(getattr(err, "response", None), "headers", {}).get("retry-after") or wait)
            except (TypeError, ValueError):
                pass
            time.sleep(max(0.0, min(wait, deadline - time.monotonic() - 0.1)))

    async def _attempt(self, kw: dict[str, Any], timeout: float) -> Any:
        # A client per attempt: an async client belongs to the event loop that made it.
        async with self._anthropic.AsyncAnthropic(**self._client_args, max_retries=0, timeout=timeout) as client:
            return await client.messages.create(**kw)

    def _call(self, *, model: str, system: str, user: str, tool: str) -> tuple[Any, Usage]:
        a = self._anthropic
        try:
            resp = self._create(model=model, system=system, user=user, tool=tool)
        except a.APIStatusError as exc:
            raise LLMError(f"model call failed: HTTP {exc.status_code} {_short(exc)}") from exc
        except a.APIConnectionError as exc:
            raise LLMError(f"model call failed: {_short(exc)}") from exc
        except (a.APIError, ValueError) as exc:  # includes replies that are not valid JSON at all
            raise LLMError(f"model reply unusable: {_short(exc)}") from exc
        usage = _usage_of(resp)
        try:
            return tool_input(resp, tool), usage
        except LLMError as exc:
            exc.details["usage"] = usage.to_dict()
            raise

    def extract(
        self, conversation: str, *, context: str, existing_titles: list[str], project: str
    ) -> tuple[Any, Usage]:
        titles = "\n".join(f"- {t}" for t in existing_titles) or "(无)"
        user = self._extract_user.safe_substitute(
            conversation=conversation, context=context or "(无)", existing_titles=titles, project=project or "(未知)"
        )
        return self._call(model=self.model, system=self._extract_system, user=user, tool=EXTRACT_TOOL)

    def assess(self, conversation: str, memory: MemoryObject) -> tuple[Any, Usage]:
        # the assessment prompt quotes the memory as "label: text", the extraction prompt's format
        mem = f"{memory.title}: {memory.content}".replace("\n", " ")
        user = self._assess_user.safe_substitute(conversation=conversation, memory=mem)
        return self._call(model=self.assess_model, system=self._assess_system, user=user, tool=ASSESS_TOOL)


def _within(coro: Coroutine[Any, Any, Any], seconds: float) -> Any:
    """Run ``coro`` for at most ``seconds`` of wall-clock time, TimeoutError after that. The HTTP
    client's timeouts are per read, so a server sending one byte every 2 s never trips them
    (docs/reliability.md); cancelling the request does."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(asyncio.wait_for(coro, seconds))
    from concurrent.futures import ThreadPoolExecutor  # called from inside an event loop

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(coro, seconds)).result()


def _short(exc: BaseException) -> str:
    s = " ".join(str(exc).split())
    return s[:300]


def _json_instruction(tool: str, schema: dict) -> str:
    extra = (
        "\n若写不出 JSON，也可以先写理由，然后在下一行以“评分：[分数]”的格式返回分数。" if tool == ASSESS_TOOL else ""
    )
    return (
        "\n\n不要调用工具。只输出一个 JSON 对象（不要有其他文字），它必须符合以下 JSON Schema：\n"
        + json.dumps(schema, ensure_ascii=False)
        + extra
    )


def endpoint_from(cfg: dict, where: Path | None = None) -> Endpoint | None:
    """The model endpoint for a vault config, or None (offline): the environment and the user
    config are the user's choices, the vault's config is not (longterm/endpoint.py)."""
    from agentmem_vault.config import user_config
    from agentmem_vault.vault import user_config_dir

    return resolve_endpoint(
        cfg,
        user_config(),
        os.environ,
        vault_config_path=where or "memory/.agentmem/config.yaml",
        user_config_path=user_config_dir() / "config.yaml",
    )


def _flag(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "off")
    return bool(value)


def model_from_config(cfg: dict, endpoint: Endpoint, *, prompts_dir: Path | None = None) -> AnthropicModel:
    """The model for a vault config and its resolved endpoint (``endpoint_from``). A token is sent
    as a bearer token, the way gateways and Ollama expect it."""
    model = str(cfg.get("llm_model") or cfg.get("model") or "claude-sonnet-4-6")
    return AnthropicModel(
        api_key=endpoint.api_key,
        auth_token=endpoint.auth_token,
        model=model,
        assess_model=cfg.get("assess_model") or None,
        base_url=endpoint.base_url,
        max_retries=int(cfg.get("max_retries", 4)),
        timeout=float(cfg.get("llm_timeout", 120.0)),
        deadline_seconds=float(cfg.get("llm_source_deadline", DEFAULT_SOURCE_DEADLINE)),
        progress_seconds=float(cfg.get("llm_progress_seconds", 10.0)),
        prompts_dir=prompts_dir,
        prompt_caching=_flag(cfg.get("llm_prompt_caching"), True),
        tool_mode=str(cfg.get("llm_tool_mode") or "auto"),
    )
