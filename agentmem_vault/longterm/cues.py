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
    return cue(name).search(folded) is not None
