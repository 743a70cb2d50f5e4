"""The word lists and patterns the field rules read: data files under ``templates/fields/``
(shipped with the package), reviewed and extended without touching code. Chinese entries are
written in Simplified; lookups fold Traditional first (``textnorm.fold``)."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from agentmem_vault.model.textnorm import fold


def _lines(name: str) -> list[str]:
    try:
        text = (resources.files("agentmem_vault.templates") / "fields" / name).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:  # a broken install: say which file, never a traceback
        raise damaged(name, exc) from exc
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def damaged(name: str, why: object) -> Exception:
    from agentmem_vault.errors import AgentmemError

    return AgentmemError(f"templates/fields/{name} cannot be read ({why}); reinstall agentmem", code="install_damaged")


@lru_cache(maxsize=None)
def generic_words() -> frozenset[str]:
    """Words that are never a keyword (folded)."""
    return frozenset(fold(w) for ln in _lines("generic_keywords.txt") for w in ln.split())


@lru_cache(maxsize=None)
def title_leadin() -> re.Pattern[str]:
    """A lead-in at the start of a folded title, with the separator after it: the announcements and
    asides of ``title_leadins.txt``, and any word that joins a further item or opens a numbered one
    ("另外", "by the way", "Second,", "第二"), the extractor's own join and ordinal cues, since a title
    is one statement standing alone (docs/notes.md, Fields)."""
    from agentmem_vault.longterm.cues import cue

    alts = "|".join(
        f"(?:{p})" for p in (pattern("title_leadins.txt").pattern, cue("join").pattern, cue("ordinal").pattern)
    )
    return re.compile(rf"^(?:{alts})\s*[:：,，;；\-—–]?\s*", re.I)


@lru_cache(maxsize=None)
def pattern(name: str) -> re.Pattern[str]:
    """The regular expressions of a data file, one alternative per line."""
    return re.compile("|".join(f"(?:{p})" for p in _lines(name)), re.I)


@lru_cache(maxsize=None)
def section(name: str, part: str) -> re.Pattern[str]:
    """The regular expressions of the ``[part]`` section of a data file, one alternative per line."""
    lines: dict[str, list[str]] = {}
    current = ""
    for ln in _lines(name):
        if ln.startswith("[") and ln.endswith("]"):
            current = ln[1:-1]
        else:
            lines.setdefault(current, []).append(ln)
    return re.compile("|".join(f"(?:{p})" for p in lines[part]), re.I)


CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
WORDISH = re.compile(r"[\w\u3400-\u9fff\uf900-\ufaff]")


def is_generic(keyword: str) -> bool:
    """A stop word or generic word, a lone CJK character, a bare number or a single letter."""
    k = fold(keyword).strip()
    return not k or k in generic_words() or len(k) == 1 or k.isdigit()


def subject_words(text: str) -> set[str]:
    """The words of ``text`` that name something (folded): segmenter words and identifiers that
    are not generic."""
    from agentmem_vault.longterm.fields.segment import words

    return {k for w in words(text) if (k := fold(w.text).strip()) and WORDISH.search(k) and not is_generic(k)}
