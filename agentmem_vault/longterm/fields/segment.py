"""Whole words of a text, from a real Chinese word segmenter (docs/notes.md, Keywords).

``rjieba`` (the jieba-rs binding) segments; it knows Simplified Chinese best, so Traditional text
is folded to Simplified first and every word is mapped back to the text as written by its offsets
(the folding is character for character). Imported on first use only: extraction and evaluation
need it, the sessionStart hook never does (tests/test_hooks_imports.py).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import NamedTuple

from agentmem_vault.model.textnorm import to_simplified


class Word(NamedTuple):
    text: str  # as written (Traditional stays Traditional)
    simplified: str  # the same word folded to Simplified
    start: int
    end: int


# rjieba's one segmenter is not safe across threads ("RuntimeError: Already borrowed" when two MCP
# calls extract at once, docs/mcp.md "Concurrency"): every use holds this lock.
_LOCK = threading.RLock()


@lru_cache(maxsize=1)
def _segmenter():  # type: ignore[no-untyped-def]
    """rjieba's default segmenter, taught the technical vocabulary of the quality gate
    (``templates/quality/tech_terms.txt``: 时间戳, 环境变量, ...) so that those stay whole words."""
    import rjieba  # the segmenter's dictionary loads on first use (benchmarks/bench_fields.py)

    from agentmem_vault.longterm.lexicon import tech_terms

    with _LOCK:
        for term in tech_terms().cjk:
            rjieba.add_word(term, 2000, "n")
    return rjieba


def cut(text: str) -> list[str]:
    with _LOCK:
        return list(_segmenter().cut(text))


def tag(text: str) -> list[tuple[str, str]]:
    with _LOCK:
        return list(_segmenter().tag(text))


@lru_cache(maxsize=4096)
def words(text: str) -> tuple[Word, ...]:
    """The text cut into words (spaces and punctuation are words too), with offsets into ``text``.
    Cached: every keyword of a memory is checked against the words of the same content."""
    simple = to_simplified(text)
    if len(simple) != len(text):  # not char for char after all: segment each character's fold
        simple = "".join(to_simplified(ch)[:1] or ch for ch in text)
    out, pos = [], 0
    for w in cut(simple):
        out.append(Word(text[pos : pos + len(w)], w, pos, (pos := pos + len(w))))
    return tuple(out)


@lru_cache(maxsize=4096)
def boundaries(text: str) -> frozenset[int]:
    """Offsets in ``text`` where one word ends and the next begins (and both ends)."""
    return frozenset({0, len(text)} | {w.start for w in words(text)} | {w.end for w in words(text)})
