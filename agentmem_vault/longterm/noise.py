"""Strip what carries no knowledge (docs/extraction.md): before a model sees a conversation, tool-call
blocks, long hashes, base64 / data URIs and over-long log lines (``strip_noise``); before the
offline extractor reads a user's message, the lines the user pasted rather than wrote
(``own_words``: tool output, logs, tracebacks, quoted docs and chats, code)."""

from __future__ import annotations

import re
from functools import lru_cache

from agentmem_vault.longterm.lexicon import log_levels, log_levels_weak, output_starts, pasted_forms, pasted_locations

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


# -- pasted text in a user's message (docs/extraction.md, "Pasted text") ------------------------------
# A user who pastes a pip warning, a linter report, a traceback, a CI log, a README paragraph or a
# colleague's chat has not said those words: "it is recommended to use a virtual environment",
# "Do not use bare except", "> Always run make lint" are the tool's or the author's rules. The
# offline extractor reads only the user's own lines; these rules say which lines are pasted, by
# their form (never by the wording of one tool): fenced or indented code, "> " quotes, shell
# prompts, leading timestamps, file:line:col locations and stack frames, exception lines,
# severity tags (word lists in templates/quality/), and the indented lines that continue them.

_FENCE = re.compile(r"^\s*(?:```|~~~)")
# Java/JS stack frames: "at com.x.App.main(App.java:12)", "at Object.<anonymous> (/app/x.js:3:9)"
_FRAME = re.compile(
    r"^\s*at (?:\S[^()\n]{0,200}\((?:[^()\s]{1,300}:\d+(?::\d+)?|Native Method|Unknown Source)\)|[^\s()]{1,300}:\d+:\d+)\s*$"
)
# The forms are all at the start of a line: only its head is examined, so that a pasted line of
# megabytes (minified code, a base64 blob) costs no more than a short one.
_HEAD = 400
_GUTTER_NEEDS_INDENT = re.compile(r"^\|")  # "| a | b |" at column 0 is a Markdown table, the user's
_DIFF_HEADER = re.compile(r"^(?:@@ -\d|diff --git |--- a/|\+\+\+ b/)")
_DIFF_LINE = re.compile(r"^[-+ \\]")
_INDENTED_CODE = re.compile(r"^(?: {4,}|\t)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•・]|\d{1,2}[.)）、]|[（(]\d{1,2}[)）])\s")


def _alternation(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


@lru_cache(maxsize=None)
def _level_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], tuple[str, ...]]:
    """(strong tag, weak tag, bracketed tag, fixed starts), built from the data files."""
    levels, weak = log_levels(), log_levels_weak()
    caps = tuple(w for w in levels if w.isupper())
    other = tuple(w for w in levels if not w.isupper())
    # "[main] WARN  c.e.App - ...": a logger's bracketed thread or module name may come first
    strong = re.compile(
        rf"^\s*(?:\[[^\]\n]{{1,40}}\]\s*)*"
        rf"(?:(?:{_alternation(caps)})(?=[\s:\]\[!]|$)|(?:{_alternation(other)})(?=[:：\[]))"
    )
    weak_re = re.compile(rf"^\s*(?:{_alternation(weak)})\s*[:：]")
    bracket = re.compile(rf"^\s*(?:##)?[\[【]\s*(?:{_alternation(levels + weak)})\s*[\]】]", re.I)
    return strong, weak_re, bracket, output_starts()


def _starts_with_output(line: str, starts: tuple[str, ...]) -> bool:
    s = line.lstrip()
    for lit in starts:
        if s.startswith(lit):
            nxt = s[len(lit) : len(lit) + 1]
            if not (lit[-1].isalnum() and (nxt.isalnum() or nxt == "_")):
                return True
    return False


def _pasted_on_its_own(line: str) -> bool:
    """A line whose form alone says it was pasted (output, log, quote, prompt, code)."""
    strong, _weak, bracket, starts = _level_patterns()
    head = line[:_HEAD]
    if pasted_locations().match(head) and not _GUTTER_NEEDS_INDENT.match(head):
        return True
    if _INDENTED_CODE.match(head) and not _LIST_ITEM.match(head):
        return True
    return bool(
        (len(line) <= _HEAD and _FRAME.match(line))
        or pasted_forms().match(head)
        or _DIFF_HEADER.match(head)
        or strong.match(head)
        or bracket.match(head)
        or _starts_with_output(head, starts)
    )


def pasted_lines(text: str) -> list[bool]:
    """For each line of ``text`` (``str.splitlines``): was it pasted rather than written by the user?

    A fenced block is pasted from fence to fence (to the end when it is never closed). Within a run
    of lines with no blank line between, pasted output continues on a line that is indented or
    opens with a weak severity word ("Warning:", "Caused by:"), a weak-word line right before
    pasted output belongs to it, and after a diff header every "+", "-", " " line is the diff."""
    _strong, weak, _bracket, _starts = _level_patterns()
    lines = text.splitlines()
    out: list[bool] = []
    fenced = False
    diff = False  # inside a diff hunk (until a blank line)
    prev = False  # the line before (no blank line between) was pasted
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            out.append(True)
            prev = True
            continue
        if fenced:
            out.append(True)
            continue
        if not line.strip():
            out.append(False)
            prev = diff = False
            continue
        diff = diff or bool(_DIFF_HEADER.match(line[:_HEAD]))
        pasted = (
            _pasted_on_its_own(line)
            or (diff and bool(_DIFF_LINE.match(line)))
            or (prev and (line[:1].isspace() or bool(weak.match(line[:_HEAD]))))
        )
        out.append(pasted)
        prev = pasted
    # "Error: Cannot find module 'x'" followed by its stack frames: the message is output too
    for i in range(len(lines) - 2, -1, -1):
        if not out[i] and out[i + 1] and lines[i + 1].strip() and weak.match(lines[i][:_HEAD]):
            out[i] = True
    return out


@lru_cache(maxsize=4096)  # a message recurs across chats ("continue", injected context): read once
def own_words(text: str) -> str:
    """``text`` with the pasted lines blanked: each becomes an empty line, so that what the user
    wrote before and after a paste are separate paragraphs and never one sentence."""
    lines = text.splitlines()
    flags = pasted_lines(text)
    return "\n".join("" if f else ln for ln, f in zip(lines, flags, strict=True))
