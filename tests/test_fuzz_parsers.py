"""Fuzz harness over every parser of input that arrives from elsewhere (docs/reliability.md,
"Fuzzing"): the board, snapshots, note and snapshot frontmatter, YAML settings, hook payloads, MCP
tool arguments, transcripts, trigger text and the merge driver's inputs. Each must return or raise
the tool's own error (``AgentmemError`` or the format's documented error), never anything else.

Inputs are built from the formats' own fragments (table pipes, headings, fences, YAML anchors and
dates, JSON brackets, CRLF, BOM, CJK, control characters, lone surrogates) mixed with random text,
so that most examples get past the first line of each parser.

CI runs a few dozen examples per parser as part of the normal test run, derandomized like every
property test (tests/conftest.py). The longer run:
``AGENTMEM_FUZZ_EXAMPLES=5000 HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest tests/test_fuzz_parsers.py``.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_vault.errors import AgentmemError, ConfigError
from agentmem_vault.hooks.payloads import HOOKS, decode_stdin, parse_event
from agentmem_vault.longterm import sources
from agentmem_vault.model import merge3, session_props, yamlload
from agentmem_vault.board.table import parse_index
from agentmem_vault.model.notes import parse_note, read_note_bytes
from agentmem_vault.model.snapshot import parse_snapshot
from agentmem_vault.model.triggers import route

EXAMPLES = int(os.environ.get("AGENTMEM_FUZZ_EXAMPLES", "40"))
fuzz = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SID = "2026-06-01-0930-cursor-main-agent"
HEADER = "| Session ID | Agent Name | Topic | Summary | Keywords | Status | Referenced By | Started At | Updated At |\n"
ROW = f"| {SID} | cursor-main-agent | t | s | k | idle | - | 2026-06-01 09:30 | 2026-06-01 09:30 |\n"
FRAGMENTS = [
    HEADER,
    "|---|---|---|---|---|---|---|---|---|\n",
    ROW,
    ROW.strip("|\n") + "\n",  # a row without the outer pipes
    "| a | b |\n",
    "\\|",
    " | ",
    "```\n",
    "~~~\n",
    "---\n",
    "# Session: x\n",
    "## Metadata\n| Field | Value |\n|---|---|\n| Session ID | x |\n",
    "## Current Context\n",
    "## Decisions\n- [superseded] old\n",
    "## Continues From\n- [[" + SID + "]]\n",
    "- item\n",
    "None\n",
    "id: lt-abc123\n",
    "title: t\n",
    "created: 2026-02-30\n",
    "x: &a [*a]\n",
    "y: *a\n",
    "k: [1, {a: b}]\n",
    ": :\n",
    "[" * 200,
    "{" * 50,
    '{"role": "user", "message": {"content": "hi"}}\n',
    '{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}}\n',
    "user: hello\n",
    "assistant: ok\n",
    "\r\n",
    "\ufeff",
    "\x00",
    "\x85",
    "\u2028",
    "\udcff",
    "不要整理 memory",
    "整理這個 session？",
    "封存 memory session ",
    SID,
    "２０２６-06-01-0930-cursor-main-agent",
    "<<<<<<< ours\n",
    "=======\n",
    ">>>>>>> theirs\n",
]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=25).map("".join)
OWN_ERRORS: tuple[type[BaseException], ...] = (AgentmemError,)


def only_own_errors(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except OWN_ERRORS:
        return None


@fuzz
@given(texts)
def test_board(text: str) -> None:
    doc = only_own_errors(parse_index, text)
    if doc is not None:
        assert doc.render() == text  # byte-preserving, whatever it holds
        doc.row_list(), doc.duplicate_ids()


@fuzz
@given(texts)
def test_snapshot(text: str) -> None:
    only_own_errors(parse_snapshot, text)


@fuzz
@given(texts)
def test_note_and_its_frontmatter(text: str) -> None:
    only_own_errors(parse_note, text)
    only_own_errors(read_note_bytes, text.encode("utf-8", "surrogateescape"))


@fuzz
@given(texts)
def test_snapshot_frontmatter(text: str) -> None:
    only_own_errors(session_props.parse_frontmatter, text)
    only_own_errors(session_props.split_text, text)


@fuzz
@given(texts)
def test_yaml_settings(text: str) -> None:
    try:
        yamlload.load(text, ConfigError, "config.yaml")
    except ConfigError:
        pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
payload_fields = st.fixed_dictionaries(
    {},
    optional={
        k: json_values
        for k in ("conversation_id", "session_id", "workspace_roots", "cwd", "transcript_path", "source")
        + ("is_background_agent", "composer_mode", "hook_event_name")
    },
)


@fuzz
@given(
    st.one_of(
        payload_fields.map(lambda d: json.dumps(d).encode()), texts.map(lambda t: t.encode("utf-8", "surrogateescape"))
    ),
    st.sampled_from(sorted(HOOKS)),
)
def test_hook_payloads(data: bytes, hook: str) -> None:
    obj = only_own_errors(decode_stdin, data)
    if obj is not None:
        parse_event(obj, *HOOKS[hook])


@fuzz
@given(texts)
def test_transcripts(text: str) -> None:
    for parse in (
        sources.parse_cursor_jsonl,
        sources.parse_claude_jsonl,
        sources.parse_role_blocks,
        sources.snapshot_turns,
    ):
        res = only_own_errors(parse, text)
        if res is not None:
            sources.bound_turns(res)


@fuzz
@given(texts)
def test_trigger_text(text: str) -> None:
    only_own_errors(route, text)


def _line_merge(o: str, a: str, b: str) -> tuple[str, bool]:
    return a, a == b


@fuzz
@given(texts, texts, texts)
def test_merge_driver_inputs(o: str, a: str, b: str) -> None:
    for merge in (
        lambda: merge3.merge_board(o, a, b, _line_merge),
        lambda: merge3.merge_snapshot_texts(o, a, b),
        lambda: merge3.merge_note_texts(o, a, b, _line_merge),
    ):
        only_own_errors(merge)


def test_merge_driver_process_on_hostile_files(tmp_path: Path) -> None:
    """The driver as git runs it, on files no parser accepts: it falls back, exit 0 or 1."""
    from conftest import run_cli

    o, a, b = tmp_path / "O", tmp_path / "A", tmp_path / "B"
    for kind in ("index", "snapshot", "note"):
        o.write_bytes(b"\xff\xfe" + ("[" * 5000).encode())
        a.write_text("x: &a [*a]\n" + HEADER, encoding="utf-8")
        b.write_text("created: 2026-02-30\n" + ROW, encoding="utf-8")
        proc = run_cli("merge-driver", kind, str(o), str(a), str(b), "f.md", process=True)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr


# -- MCP tool arguments, in process: every tool with arguments of any shape ------------------------


@pytest.fixture(scope="module")
def mcp_front(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("mcp.server.mcpserver")
    from agentmem_vault.vault import Vault
    from agentmem_vault.mcp.registry import ENTRIES, Front
    from agentmem_vault.ops.board import init_vault

    from agentmem_vault.mcp import tools  # noqa: F401  (importing the groups registers them)

    v = Vault(tmp_path_factory.mktemp("mcp") / "vault")
    v.root.mkdir()
    init_vault(v)
    # Tools that ask the client something (its roots) need a live session: the MCP server tests
    # drive those through the SDK's client; here, every tool that answers from its arguments alone.
    plain = [e for e in ENTRIES if e.kind == "tool" and not inspect.iscoroutinefunction(e.fn)]
    return Front(str(v.root), "fuzz-agent", None), plain


def _values_of(tp: Any) -> st.SearchStrategy[Any]:
    """Values of a tool parameter's declared type and bounds: the SDK validates both against the
    schema before a tool runs, so only such values reach a tool -- and any of them can."""
    import types
    import typing

    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        bounds = [m for f in meta for m in getattr(f, "metadata", [])]
        lo = next((m.ge for m in bounds if hasattr(m, "ge")), None)
        hi = next((m.le for m in bounds if hasattr(m, "le")), None)
        if base is int:
            return st.integers(min_value=-(10**15) if lo is None else lo, max_value=10**15 if hi is None else hi)
        return _values_of(base)
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return st.one_of(*(_values_of(a) for a in args))
    if tp is type(None):
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=-(10**15), max_value=10**15)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if typing.get_origin(tp) is list:
        return st.lists(_values_of(args[0]), max_size=5)
    if typing.get_origin(tp) is typing.Literal:
        return st.sampled_from(args)
    return texts


@settings(fuzz, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mcp_tool_arguments(mcp_front, data, monkeypatch: pytest.MonkeyPatch) -> None:
    import typing

    from agentmem_vault.mcp.registry import _bind

    monkeypatch.setenv("AGENTMEM_NOW", "2026-06-01T09:30")
    front, tools = mcp_front
    entry = data.draw(st.sampled_from(tools))
    hints = typing.get_type_hints(entry.fn, include_extras=True)
    names = list(hints)[1:-1]  # after the Front, before the return value
    kwargs = {n: data.draw(_values_of(hints[n]), label=n) for n in names if data.draw(st.booleans())}
    try:
        result = _bind(entry.fn, front, "tool")(**kwargs)  # as the server calls it
    except TypeError:
        return  # a required parameter left out: the SDK refuses that call before the tool runs
    if getattr(result, "is_error", False):
        assert result.structured_content["error"]["code"] != "internal_error", (entry.fn.__name__, kwargs)


def _from_schema(schema: dict, rng: Any) -> Any:
    """A value for a JSON schema property, as a client would send it (strings from FRAGMENTS)."""
    if "anyOf" in schema:
        return _from_schema(rng.choice(schema["anyOf"]), rng)
    kind = schema.get("type")
    if kind == "integer":
        return rng.randint(schema.get("minimum", -(10**12)), schema.get("maximum", 10**12))
    if kind == "number":
        return rng.uniform(-1e6, 1e6)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_from_schema(schema.get("items", {"type": "string"}), rng) for _ in range(rng.randint(0, 3))]
    if kind == "null":
        return None
    if "enum" in schema:
        return rng.choice(schema["enum"])
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 6))).replace("\udcff", "")


def test_mcp_tools_through_the_sdk_client_with_arguments_from_their_schemas(tmp_path: Path) -> None:
    """Every tool (those that ask the client for its roots too) through a real server process and
    the SDK's client, arguments drawn from the schema the client is given (seeded)."""
    pytest.importorskip("mcp.server.mcpserver")
    import random

    from agentmem_vault.ops.board import init_vault
    from agentmem_vault.vault import Vault
    from test_mcp_server import drive

    v = Vault(tmp_path / "vault")
    v.root.mkdir()
    init_vault(v)
    rng = random.Random(22)
    per_tool = max(2, EXAMPLES // 20)

    async def scenario(c: Any) -> list[tuple[str, dict, Any]]:
        bad = []
        tools = (await c.list_tools()).tools
        assert len(tools) >= 14
        for t in tools:
            props = t.input_schema.get("properties", {})
            for _ in range(per_tool):
                args = {
                    k: _from_schema(s, rng)
                    for k, s in props.items()
                    if k in t.input_schema.get("required", []) or rng.random() < 0.6
                }
                r = await c.call_tool(t.name, args)
                err = (r.structured_content or {}).get("error") if r.is_error else None
                if r.is_error and (not isinstance(err, dict) or err.get("code") == "internal_error"):
                    bad.append((t.name, args, r.content[0].text[:300] if r.content else r))
        return bad

    bad = drive(v, scenario)
    assert bad == []
