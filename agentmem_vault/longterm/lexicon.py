"""Word lists the extractor and the quality gate read (docs/extraction.md): vague phrases per
language, general engineering principles, technical vocabulary, and the wording that marks pasted
tool output (severity words, fixed line starts). They are data files under ``templates/quality/``
(shipped with the package) so that they can be reviewed and extended without touching code.

Phrase lists: Chinese entries are written in Simplified; matching folds Traditional first
(``textnorm.fold``); English entries match as whole words, case-insensitively. The pasted-output
lists are read as written (case matters: "WARNING" is a log level, "Warning" may be the user's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from agentmem_vault.model.textnorm import fold

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _read_list(name: str) -> tuple[str, ...]:
    text = (resources.files("agentmem_vault.templates") / "quality" / name).read_text(encoding="utf-8")
    out: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if line:
            out.append(fold(line))
    return tuple(dict.fromkeys(out))


def _read_literal(name: str) -> tuple[str, ...]:
    """Entries exactly as written, one a line; only lines starting with "# " (or a lone "#") are
    comments, so that an entry may itself start with "#" ("##[" of a CI log)."""
    text = (resources.files("agentmem_vault.templates") / "quality" / name).read_text(encoding="utf-8-sig")
    out = [ln.strip() for ln in text.splitlines()]
    return tuple(dict.fromkeys(x for x in out if x and x != "#" and not x.startswith("# ")))


@dataclass(frozen=True)
class PhraseList:
    """Phrases split into CJK (substring match) and Latin (whole-word match, one regex)."""

    cjk: tuple[str, ...]
    latin: tuple[str, ...]
    latin_re: re.Pattern[str] | None

    @classmethod
    def of(cls, phrases: tuple[str, ...]) -> "PhraseList":
        cjk = tuple(p for p in phrases if _CJK.search(p))
        latin = tuple(sorted((p for p in phrases if not _CJK.search(p)), key=len, reverse=True))
        rx = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(p) for p in latin) + r")(?![\w-])") if latin else None
        return cls(cjk, latin, rx)

    def hits(self, folded: str) -> list[str]:
        """Entries found in ``folded`` (already ``fold``-ed text)."""
        out = [p for p in self.cjk if p in folded]
        if self.latin_re is not None:
            out += [m.group(0) for m in self.latin_re.finditer(folded)]
        return out


@lru_cache(maxsize=None)
def vague_phrases() -> PhraseList:
    return PhraseList.of(_read_list("vague_phrases.zh.txt") + _read_list("vague_phrases.en.txt"))


@lru_cache(maxsize=None)
def generic_principles() -> PhraseList:
    return PhraseList.of(_read_list("generic_principles.txt"))


@lru_cache(maxsize=None)
def tech_terms() -> PhraseList:
    return PhraseList.of(_read_list("tech_terms.txt"))


@lru_cache(maxsize=None)
def specificity_patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in _read_literal("specificity.txt"))


@lru_cache(maxsize=None)
def tool_names() -> frozenset[str]:
    return frozenset(_read_list("tool_names.txt"))


@lru_cache(maxsize=None)
def generic_names() -> frozenset[str]:
    return frozenset(_read_list("generic_names.txt"))


@lru_cache(maxsize=None)
def injection_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(why, pattern) of the instructions a note must never carry (``injection.txt``)."""
    return tuple(
        (w.strip(), re.compile(p.strip(), re.I))
        for w, p in (x.split(" :: ", 1) for x in _read_literal("injection.txt"))
    )


@lru_cache(maxsize=None)
def pasted_forms() -> re.Pattern[str]:
    """The line starts of pasted text (``pasted_forms.txt``), one alternation."""
    return re.compile("|".join(f"(?:{p})" for p in _read_literal("pasted_forms.txt")))


@lru_cache(maxsize=None)
def pasted_locations() -> re.Pattern[str]:
    """The file / line locations that open a pasted line (``pasted_locations.txt``)."""
    return re.compile(r"^\s*(?:" + "|".join(_read_literal("pasted_locations.txt")) + ")")


@lru_cache(maxsize=None)
def log_levels() -> tuple[str, ...]:
    """Severity words that open a line of tool output ("WARNING", "warning", "錯誤")."""
    return _read_literal("log_levels.txt")


@lru_cache(maxsize=None)
def log_levels_weak() -> tuple[str, ...]:
    """Severity words that count only where pasted output continues ("Warning", "Caused by")."""
    return _read_literal("log_levels_weak.txt")


@lru_cache(maxsize=None)
def output_starts() -> tuple[str, ...]:
    """Fixed line starts of program output ("Traceback (most recent call last)", "npm WARN")."""
    return _read_literal("output_starts.txt")
