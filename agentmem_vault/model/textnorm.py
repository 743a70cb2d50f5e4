"""Text folding and tokens for matching Chinese (Traditional or Simplified) and English text.

``fold`` = NFKC + case-fold + Traditional->Simplified (character level) + collapsed whitespace, so
``註冊 Memory`` and ``注册 memory`` compare equal. ``tokenize`` gives Latin word tokens (stopwords
dropped) and CJK character bigrams (plus single characters for one-character runs).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from agentmem_vault.model import template_text


def _pairs(name: str) -> list[list[str]]:
    """The lines of ``templates/textnorm/<name>.txt`` split on whitespace (``#`` lines are notes):
    the word lists are data, not code."""
    text = template_text("textnorm", f"{name}.txt")
    return [ln.split() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """The English words ``tokenize`` drops."""
    return frozenset(w for line in _pairs("stopwords") for w in line)


_WS_RE = re.compile(r"\s+")
_LATIN_RE = re.compile(r"[0-9a-z_]+(?:[.\-+#][0-9a-z_]+)*")
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")


@lru_cache(maxsize=1)
def _t2s_table() -> dict[int, str]:
    from hanziconv import charmap  # small data module: two aligned strings

    pairs = zip(charmap.traditional_charmap, charmap.simplified_charmap, strict=False)
    # then the pairs it lacks or maps unlike everyday Taiwan/HK usage
    return {ord(t): s for t, s in [*pairs, *_pairs("traditional_simplified")] if t != s}


def to_simplified(text: str) -> str:
    return text.translate(_t2s_table())


@lru_cache(maxsize=256)  # a pure function: extraction folds each sentence once per cue it asks
def fold(text: str) -> str:
    """NFKC, case-fold, Traditional->Simplified, whitespace collapsed and stripped."""
    t = unicodedata.normalize("NFKC", text or "").casefold()
    t = to_simplified(t)
    return _WS_RE.sub(" ", t).strip()


def tokenize(text: str, *, fold_first: bool = True) -> list[str]:
    """Latin words (stopwords dropped) and CJK bigrams; a lone CJK character is its own token."""
    t = fold(text) if fold_first else text
    out: list[str] = []
    stop = stopwords()
    for m in _LATIN_RE.finditer(t):
        w = m.group(0)
        if w not in stop and (len(w) > 1 or w.isdigit()):
            out.append(w)
    for m in _CJK_RE.finditer(t):
        run = m.group(0)
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


# -- Taiwan/Hong Kong vs mainland vocabulary (additive; used by recall) ------------------------------


@lru_cache(maxsize=1)
def _terms() -> tuple[dict[str, str], re.Pattern[str]]:
    """Words that differ, not just their characters (``templates/textnorm/regional_terms.txt``),
    and the pattern finding them, longest first."""
    terms = {a: b for a, b in _pairs("regional_terms")}
    return terms, re.compile("|".join(sorted(map(re.escape, terms), key=len, reverse=True)))


def normalize_terms(folded: str) -> str:
    """Map Taiwan/HK words to their mainland equivalents in text already passed through ``fold``."""
    terms, rx = _terms()
    return rx.sub(lambda m: terms[m.group(0)], folded)
