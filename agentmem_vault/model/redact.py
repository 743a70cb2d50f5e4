"""Secrets out of text before it is stored (docs/redaction.md), pure: ``str -> str``.

Every known kind of secret (provider API keys and tokens, AWS keys, private-key blocks,
``password=`` / ``token=`` / ``secret=`` assignments, connection strings with a password) and any
high-entropy token is replaced by ``[REDACTED:<kind>]``. The patterns are data
(``templates/redaction/patterns.txt``); users add their own and list exceptions in the config.
Redacting twice changes nothing (a marker is never a secret), and text without a secret is
returned as the very same string: the writer calls this on everything it writes under
``memory/``, so a false positive would change a user's note.
"""

from __future__ import annotations

import re
from collections import Counter, namedtuple
from collections.abc import Iterable
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
# "sk-ant-...", "xxxx", "****": a placeholder in an example, not a secret
_PLACEHOLDER_RE = LazyRegex(r".*(?:\.\.\.|…)$|([xX*•#])\1*$")


# Named tuples, not NamedTuple/dataclass: this module is on the sessionStart hook's path, which
# never imports typing or dataclasses (docs/performance.md).
class Pattern(namedtuple("Pattern", ("kind", "source"))):
    __slots__ = ()

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.source)


@lru_cache(maxsize=256)
def _compiled(source: str) -> re.Pattern[str]:
    # compiled on first use: most texts pass the prefilter and never need the patterns, and the
    # sessionStart hook writes one row (docs/performance.md)
    return re.compile(source)


Finding = namedtuple("Finding", ("kind", "start", "end"))  # one secret in a text
# ``prefilter``: a regex every secret matches, or None (every pattern runs on every text)
PatternSet = namedtuple("PatternSet", ("patterns", "prefilter"))


_KIND = LazyRegex(r"[a-z0-9][a-z0-9-]*")


def parse_patterns(text: str, *, where: str = "patterns", validate: bool = True) -> PatternSet:
    """``<kind> <regex>`` lines and an optional ``@prefilter <regex>`` (``#`` comments, blank lines
    skipped); with ``validate`` a bad line is a ValueError naming it (the caller turns it into its
    own error). The built-in file is checked by the tests instead, so the hook compiles nothing it
    does not use."""
    out: list[Pattern] = []
    pre: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        kind, _, rx = s.partition(" ")
        rx = rx.strip()
        if validate:
            if kind != "@prefilter" and (not _KIND.fullmatch(kind) or not rx):
                raise ValueError(f"{where} line {n}: expected '<kind> <regular expression>' with a lower-case kind")
            try:
                re.compile(rx)
            except re.error as exc:
                raise ValueError(f"{where} line {n}: {exc}") from exc
        if kind == "@prefilter":
            pre = rx
        else:
            out.append(Pattern(kind, rx))
    return PatternSet(tuple(out), pre)


@lru_cache(maxsize=1)
def builtin_patterns() -> PatternSet:
    from agentmem_vault.model import template_text

    text = template_text("redaction", "patterns.txt")
    return parse_patterns(text, where="templates/redaction/patterns.txt", validate=False)


def _entropy(s: str) -> float:
    n = len(s)
    from math import log2  # only for a long token: not on the hook path

    return -sum(c / n * log2(c / n) for c in Counter(s).values())


def _high_entropy(token: str) -> bool:
    core = token.strip("=")
    if len(core) < ENTROPY_MIN_LEN or "/" in core.strip("/") and core.count("/") > 2:
        return False  # a path, not a key
    has = (any(c.isupper() for c in core), any(c.islower() for c in core), sum(c.isdigit() for c in core) >= 3)
    return all(has) and _entropy(core) >= ENTROPY_BITS


def find_secrets(
    text: str, patterns: PatternSet | None = None, extra: Iterable[Pattern] = (), allow: Iterable[re.Pattern[str]] = ()
) -> list[Finding]:
    """The spans to replace, in order, non-overlapping (the first pattern to claim a span wins):
    ``patterns`` (the built-in set by default), then ``extra`` (the user's), then high-entropy
    tokens. Spans whose text an ``allow`` expression matches in full, placeholders (``sk-ant-...``,
    ``xxxx``) and markers are left alone."""
    pset = builtin_patterns() if patterns is None else patterns
    allowed = list(allow)
    taken: list[Finding] = []

    def claim(kind: str, start: int, end: int) -> None:
        value = text[start:end]
        if start >= end or MARKER_RE.fullmatch(value) or _PLACEHOLDER_RE.match(value):
            return
        if any(a.fullmatch(value) for a in allowed):
            return
        if any(start < f.end and f.start < end for f in taken):
            return
        taken.append(Finding(kind, start, end))

    run: list[Pattern] = list(extra)
    if pset.prefilter is None or _compiled(pset.prefilter).search(text):
        run = [*pset.patterns, *run]
    for p in run:
        for m in p.regex.finditer(text):
            if "secret" in p.regex.groupindex and m.group("secret") is not None:
                claim(p.kind, m.start("secret"), m.end("secret"))
            else:
                claim(p.kind, m.start(), m.end())
    for m in _TOKEN_RE.finditer(text):
        if _high_entropy(m.group()):
            claim("high-entropy", m.start(), m.end())
    return sorted(taken, key=lambda f: f.start)


def redact(
    text: str, patterns: PatternSet | None = None, extra: Iterable[Pattern] = (), allow: Iterable[re.Pattern[str]] = ()
) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``; the same object when none."""
    found = find_secrets(text, patterns, extra, allow)
    if not found:
        return text
    out: list[str] = []
    at = 0
    for f in found:
        out += [text[at : f.start], MARKER.format(kind=f.kind)]
        at = f.end
    out.append(text[at:])
    return "".join(out)


# Files below memory/ that are not redacted: caches of files the user wrote into the vault (the
# config's own cache: redacting them would change the settings they mirror), and the daemon's pid
# file, whose run token is how a stop request knows the run (daemon/pidfile.py), not a user secret.
_SKIP_DIRS = ((".agentmem", "cache"),)
_SKIP_FILES = frozenset({(".agentmem", "daemon.pid")})


def applies(rel_to_memory: tuple[str, ...] | PurePath) -> bool:
    """Whether a file at this path below ``memory/`` is redacted when stored."""
    parts = tuple(rel_to_memory.parts if isinstance(rel_to_memory, PurePath) else rel_to_memory)
    return parts[:2] not in _SKIP_DIRS and parts not in _SKIP_FILES


def redact_bytes(data: bytes, extra: Iterable[Pattern] = (), allow: Iterable[re.Pattern[str]] = ()) -> bytes:
    """UTF-8 text redacted (the built-in patterns, then ``extra``); anything else (a binary file)
    as it is, and the very same object when nothing is a secret."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    out = redact(text, None, extra, allow)
    return data if out is text else out.encode("utf-8")
