"""The offline extractor's cue words, read from data files under ``templates/cues/``
(docs/extraction.md, "Offline extraction"): each file is one cue, each line one alternative of a
regular expression over folded text (lower case, Simplified Chinese). The engine asks for a cue
by name and never holds its words, so a missed wording is fixed in a data file that a reviewer
can read, not in code.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Iterator


def _lines(name: str) -> list[str]:
    text = (resources.files("agentmem_vault.templates") / "cues" / f"{name}.txt").read_text(encoding="utf-8-sig")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("# ") and ln.strip() != "#"]


@lru_cache(maxsize=None)
def cue(name: str) -> re.Pattern[str]:
    """The compiled cue ``name`` (``templates/cues/<name>.txt``)."""
    lines = _lines(name)
    if not lines:
        raise ValueError(f"cue file {name}.txt is empty")
    return re.compile("|".join(f"(?:{ln})" for ln in lines))


@lru_cache(maxsize=1024)  # a pure function of the two: the rules ask about one sentence many times
def has(name: str, folded: str) -> bool:
    """Whether cue ``name`` occurs in ``folded`` (text already ``textnorm.fold``-ed)."""
    return _screen(name).search(folded) is not None and cue(name).search(folded) is not None


@lru_cache(maxsize=None)
def _screen(name: str) -> re.Pattern[str]:
    """Words one of which every match of cue ``name`` holds ("": not known), cheaper to find (docs/performance.md)."""
    words = _needs(parts := _PART.finditer(cue(name).pattern + ")"))
    return re.compile("|".join(map(re.escape, words)) if words and next(parts, None) is None else "")


_PART = re.compile(
    r"(?P<open>\((?:\?P<\w+>|\?:|(?!\?)))|(?P<aside>\((?:\?<?[=!]|\?[aiLmsux-]+:))|(?P<bar>\|)"
    r"|(?P<run>(?:[^\\()|[{?*+.^$](?![?*+{]))+)|(?:(?P<close>\))|\[(?P<set>[^]\\^-][^]\\-]*)\]|[^\\()|[{?*+]"
    r"|\\\W|\[\^?\]?(?:\\.|[^]])*\]|\\[bBdDsSwWAZ]|\\\d+|\(\?P=\w+\))(?P<q>(?:[?*+]|\{\d*(?:,\d*)?\})[?+]?)?|(?P<odd>.)"
)


def _needs(parts: Iterator[re.Match[str]], aside: bool = False) -> set[str] | None:
    """The plain words one of which every match of the alternatives up to their group's ")" holds (None: not
    known, the group may be absent or is ``aside``); an odd part (a form not known) ends every group early."""
    alts: set[str] | None = set()
    best: set[str] | None = None  # this alternative's most telling needed word(s): the longest
    for t in parts:
        atom = {t["run"]} if t["run"] else set(t["set"]) if t["set"] and not t["q"] else None
        atom = _needs(parts, bool(t["aside"])) if t["open"] or t["aside"] else atom
        best = max(filter(None, (best, atom)), key=lambda w: min(map(len, w)), default=None)
        if t["bar"] or t["close"] or t["odd"]:
            alts = None if alts is None or best is None or t["odd"] else alts | best
            if not t["bar"]:
                return None if t["q"] or aside else alts
            best = None
    return None  # a group without its ")"
