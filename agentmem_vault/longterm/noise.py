"""Strip what carries no knowledge before a model sees it (docs/extraction.md, layer 1): tool-call
blocks, long hashes, base64 / data URIs, over-long log lines."""

from __future__ import annotations

import re

_TOOL_BLOCK_RE = re.compile(
    r"<(tool_call|tool_use|tool_result|invoke|function_call|function_results|antml:invoke|antml:function_calls)\b[^>]*>"
    r".*?</\1>",
    re.S | re.I,
)
_FENCED_TOOL_RE = re.compile(r"```(?:tool|tool_call|json tool_call)\n.*?```", re.S)
_DATA_URI_RE = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]{16,}")
_HASH_RE = re.compile(r"\b[0-9a-f]{32,}\b", re.I)
_BASE64_RE = re.compile(r"(?<![\w/+])[A-Za-z0-9+/]{40,}={0,2}(?![\w/+])")
MAX_LINE = 500
KEEP_LINE = 120


def _shorten(match: re.Match[str]) -> str:
    line = match.group(0)
    return f"{line[:KEEP_LINE]}... [truncated {len(line)} chars]"


def strip_noise(text: str) -> str:
    t = _TOOL_BLOCK_RE.sub("[tool call]", text)
    t = _FENCED_TOOL_RE.sub("[tool call]", t)
    t = _DATA_URI_RE.sub("[data uri]", t)
    t = _HASH_RE.sub("[hash]", t)
    # Only runs that look like encoded data: a path such as a/b/c has separators too, so require
    # some digits or both cases, which prose and paths rarely have in 40 characters.
    t = _BASE64_RE.sub(lambda m: "[base64]" if _looks_encoded(m.group(0)) else m.group(0), t)
    t = re.sub(rf"^.{{{MAX_LINE},}}$", _shorten, t, flags=re.M)
    return t


def _looks_encoded(s: str) -> bool:
    digits = sum(c.isdigit() for c in s)
    upper = sum(c.isupper() for c in s)
    lower = sum(c.islower() for c in s)
    return digits >= 3 and upper >= 3 and lower >= 3
