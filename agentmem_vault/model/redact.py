"""Secrets out of text before it is stored (docs/redaction.md), pure: ``str -> str``.

Every known kind of secret (provider API keys and tokens, AWS keys, private-key blocks,
``password=`` / ``token=`` / ``secret=`` assignments, connection strings with a password) and any
high-entropy token is replaced by ``[REDACTED:<kind>]``. The patterns are data
(``templates/redaction/patterns.txt``); users add their own and list exceptions in the config.
Redacting twice changes nothing, and text without a secret is returned as the very same string:
everything written under ``memory/`` goes through this, so a false positive would change a note.
"""

from __future__ import annotations

import re
from collections import Counter, namedtuple
from functools import lru_cache
from pathlib import PurePath

from agentmem_vault.fastimport import LazyRegex


MARKER = "[REDACTED:{kind}]"
MARKER_RE = LazyRegex(r"\[REDACTED:[a-z0-9-]+\]")  # compiled on first use: the hook rarely needs it

# A high-entropy token: 32+ characters of one "word" of base64/hex-like alphabet, mixing upper
# case, lower case and digits, with at least 4.2 bits of Shannon entropy per character. Git SHAs
# and UUIDs are lower-case hex (at most 4 bits), paths and identifiers are words; an API secret
# from an unknown provider is what is left.
ENTROPY_MIN_LEN = 32
ENTROPY_BITS = 4.2
_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{%d,}={0,2}(?![A-Za-z0-9+/=_-])" % ENTROPY_MIN_LEN)
_RUN = bytes(97 if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/_-") else 32 for i in range(256))
# "sk-ant-...", "xxxx", "****": a placeholder in an example, not a secret
_PLACEHOLDER_RE = LazyRegex(r".*(?:\.\.\.|…)$|([xX*•#])\1*$")


# Named tuples, not NamedTuple/dataclass: this module is on the sessionStart hook's path, which
# never imports typing or dataclasses (docs/performance.md).
Pattern = namedtuple("Pattern", ("kind", "source"))
Finding = namedtuple("Finding", ("kind", "start", "end"))  # one secret in a text
# prefilter: lower-case words, one in every text with a secret of patterns (None: all patterns run)
PatternSet = namedtuple("PatternSet", ("patterns", "prefilter", "multiline"), defaults=(None, frozenset()))
# İ ı ſ K: the only non-ASCII characters re.IGNORECASE matches with an ASCII letter, or that lower()
# makes one or two characters of (tests/test_redaction_scan.py checks every code point)
_CASE_ODD = "\u0130\u0131\u017f\u212a"


@lru_cache(maxsize=256)
def _compiled(source: str) -> re.Pattern[str]:  # on first use: most texts never need the patterns
    return re.compile(source)


@lru_cache(maxsize=4)
def _words_re(words: tuple[str, ...], ignore_case: bool) -> re.Pattern:
    # by first character, the commonest first: each position tries few branches (~6x faster)
    by: dict[str, list[str]] = {}
    for w in sorted(set(words), key=lambda w: ("etaoinshrdlcumwfgypbvkjxqz".find(w[0]) % 99, w)):
        by.setdefault(w[0], []).append(re.escape(w[1:]))
    rx = "|".join(f"{re.escape(c)}(?:{'|'.join(r)})" for c, r in by.items())
    return re.compile("(?i)" + rx) if ignore_case else re.compile(rx.encode("utf-8"))


_searched = 0  # bytes has_word has searched in this process


def has_word(text: str, words: tuple[str, ...]) -> bool:
    """Whether ``text`` holds one of ``words`` (lower-case ASCII or caseless), ignoring case as
    ``re.IGNORECASE`` does; its UTF-8 lower-cased is searched, ~20x faster, unless ``_CASE_ODD``.
    Until a process has searched 4 kB (the hook's few board rows and state lines), each word is
    searched for in turn, which costs less than compiling the pattern; then the pattern, ~5x
    faster per text (a transcript's many turns; docs/performance.md)."""
    global _searched
    if not text.isascii() and any(c in text for c in _CASE_ODD):
        return _words_re(words, True).search(text) is not None
    data = text.encode("utf-8", "surrogatepass").lower()
    _searched += len(data)
    if _searched <= 4096:  # compiling the pattern costs ~0.6 ms, as much as ~40 short texts searched per word
        by = _by_first(words)  # as the pattern does: only the words that start with a byte of the text
        return any(w in data for b in by.keys() & set(data) for w in by[b])
    return _words_re(words, False).search(data) is not None


@lru_cache(maxsize=4)
def _by_first(words: tuple[str, ...]) -> dict[int, list[bytes]]:
    by: dict[int, list[bytes]] = {}
    for w in words:
        by.setdefault(w.encode("utf-8")[0], []).append(w.encode("utf-8"))
    return by


_KIND = LazyRegex(r"[a-z0-9][a-z0-9-]*")


def parse_patterns(text: str, *, where: str = "patterns", validate: bool = True) -> PatternSet:
    """``<kind> <regex>`` lines, ``@prefilter <words>`` and ``@multiline <kinds>`` (``#`` comments,
    blank lines skipped); with ``validate`` a bad line is a ValueError naming it (the caller turns
    it into its own error). The built-in file is checked by the tests instead."""
    out: list[Pattern] = []
    words: dict[str, tuple[str, ...]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        kind, _, rx = s.partition(" ")
        rx = rx.strip()
        if kind in ("@prefilter", "@multiline"):
            words[kind] = tuple(w.lower() for w in rx.split())
            continue
        if validate:
            if not _KIND.fullmatch(kind) or not rx:
                raise ValueError(f"{where} line {n}: expected '<kind> <regular expression>' with a lower-case kind")
            try:
                re.compile(rx)
            except re.error as exc:
                raise ValueError(f"{where} line {n}: {exc}") from exc
        out.append(Pattern(kind, rx))
    return PatternSet(tuple(out), words.get("@prefilter"), frozenset(words.get("@multiline", ())))


@lru_cache(maxsize=1)
def builtin_patterns() -> PatternSet:
    from agentmem_vault.model import template_text

    return parse_patterns(template_text("redaction", "patterns.txt"), where="patterns.txt", validate=False)


def _high_entropy(token: str) -> bool:
    core, n = token.strip("="), len(token.strip("="))
    if n < ENTROPY_MIN_LEN or "/" in core.strip("/") and core.count("/") > 2:
        return False  # a path, not a key
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and sum(c.isdigit() for c in core) >= 3):
        return False
    from math import log2  # only for a token that could be a key: not on the hook path

    return -sum(c / n * log2(c / n) for c in Counter(core).values()) >= ENTROPY_BITS


def find_secrets(
    text: str, patterns: PatternSet | None = None, rules: tuple = ((), ()), only: list | None = None
) -> list[Finding]:
    """The spans to replace, in order, non-overlapping (the first pattern to claim a span wins):
    ``patterns`` (the built-in set by default), then the user's (``rules``: extra patterns,
    exceptions), then high-entropy tokens. Spans an exception matches in full, placeholders
    (``sk-ant-...``, ``xxxx``) and markers are left alone. ``only``: ``(start, end)`` spans between
    blank runs with a line break after a ``|``, where alone the patterns not ``multiline`` and the
    high-entropy scan run (none of their matches crosses such a run: docs/redaction.md)."""
    pset = builtin_patterns() if patterns is None else patterns
    extra, allowed = rules
    taken: list[Finding] = []

    def claim(kind: str, start: int, end: int) -> None:
        v = text[start:end]
        kept = MARKER_RE.fullmatch(v) or _PLACEHOLDER_RE.match(v) or any(a.fullmatch(v) for a in allowed)
        if start < end and not kept and not any(start < f.end and f.start < end for f in taken):
            taken.append(Finding(kind, start, end))

    whole = [(0, len(text))]
    spans = whole if only is None else only
    seen = text if only is None else "\n".join(text[a:b] for a, b in only)
    hit = pset.prefilter is None or has_word(seen, pset.prefilter)
    multi = pset.multiline if only is not None else ()  # over the whole text, unfiltered
    todo = pset.patterns if hit or multi else ()
    run = [(p, whole if p.kind in multi else spans) for p in todo if hit or p.kind in multi]
    for p, where in [*run, *((p, whole) for p in extra)]:
        for a, b in where:
            for m in (rx := _compiled(p.source)).finditer(text, a, b):  # a group named secret: only that
                claim(p.kind, *m.span("secret" if "secret" in rx.groupindex and m.group("secret") is not None else 0))
    long_run = b"a" * ENTROPY_MIN_LEN in seen.encode("utf-8", "surrogatepass").translate(_RUN)
    for a, b in spans if long_run else ():
        for m in _TOKEN_RE.finditer(text, a, b):
            if _high_entropy(m.group()):
                claim("high-entropy", m.start(), m.end())
    return sorted(taken, key=lambda f: f.start)


def redact(text: str, patterns: PatternSet | None = None, rules: tuple = ((), ()), only: list | None = None) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``; the same object when none. A
    marker can bare another secret (a key's tail): passes repeat until one finds none (at most 8)."""
    for _ in range(8):
        found = find_secrets(text, patterns, rules, only)
        if not found:
            break
        for f in reversed(found):
            text = text[: f.start] + MARKER.format(kind=f.kind) + text[f.end :]
        only = None
    return text


# Files below memory/ that are not redacted: caches of files the user wrote into the vault (the
# config's own cache: redacting them would change the settings they mirror), and the daemon's pid
# file, whose run token is how a stop request knows the run (daemon/pidfile.py), not a user secret.
_SKIP_DIRS = ((".agentmem", "cache"),)
_SKIP_FILES = frozenset({(".agentmem", "daemon.pid")})


def applies(rel_to_memory: tuple[str, ...] | PurePath) -> bool:
    """Whether a file at this path below ``memory/`` is redacted when stored."""
    parts = tuple(rel_to_memory.parts if isinstance(rel_to_memory, PurePath) else rel_to_memory)
    return parts[:2] not in _SKIP_DIRS and parts not in _SKIP_FILES


def redact_bytes(data: bytes, rules: tuple = ((), ())) -> bytes:
    """UTF-8 text redacted (the built-in patterns, then the user's ``rules``); anything else (a binary file)
    as it is, and the very same object when nothing is a secret."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    out = redact(text, None, rules)
    return data if out is text else out.encode("utf-8")
