"""What makes a field wrong (docs/notes.md, Fields): a keyword that is a fragment or a generic
word, a usage scenario that names nothing of the note, a title with a lead-in, a relative time or a
dangling colon. The derivation avoids these and the evaluation counts them, with the same tests."""

from __future__ import annotations

import re

from agentmem_vault.longterm.fields import data, segment
from agentmem_vault.longterm.fields.data import CJK, WORDISH, is_generic, subject_words
from agentmem_vault.longterm.fields.title import colon_head
from agentmem_vault.model.textnorm import fold

_LATIN_EDGE = re.compile(r"[A-Za-z0-9_]")


def is_fragment(keyword: str, content: str) -> bool:
    """True when every place the keyword occurs in ``content`` cuts across a word (a start or an end
    inside a word of the segmenter, or inside a Latin word), or when it joins words one of which is
    generic ("一律帶", "喜欢你每次"). A keyword that does not occur is not judged here."""
    k = fold(keyword)
    folded = fold(content)
    if len(folded) != len(content.casefold()):
        return False  # NFKC changed lengths: offsets are not comparable, do not guess
    spots = [i for i in range(len(folded) + 1) if folded.startswith(k, i)]  # overlapping too
    if not spots:
        return False
    edges = segment.boundaries(content)
    inner = [w for w in segment.words(content) if w.simplified.strip()]
    for s in spots:
        e = s + len(k)
        if _LATIN_EDGE.match(folded[s]) and s > 0 and _LATIN_EDGE.match(folded[s - 1]):
            continue
        if _LATIN_EDGE.match(folded[e - 1]) and e < len(folded) and _LATIN_EDGE.match(folded[e]):
            continue
        if s not in edges or e not in edges:
            continue
        parts = [w for w in inner if w.start >= s and w.end <= e and WORDISH.search(w.simplified)]
        if CJK.search(k) and len(parts) > 1 and any(is_generic(w.text) for w in parts):
            continue
        return False
    return True


def bad_keyword(keyword: str, content: str, title: str = "") -> str:
    """Why ``keyword`` is not a keyword ("" when it is one): generic, fragment, title."""
    if is_generic(keyword) or is_fragment(keyword, content):
        return "generic" if is_generic(keyword) else "fragment"
    return "title" if title and fold(keyword) == fold(title) else ""


def is_template(scenario: str, note_text: str) -> bool:
    """A usage scenario that names nothing the note is about (seed filler such as "與此使用者協作"
    shares no word with its note)."""
    return not (subject_words(scenario) & subject_words(note_text))


def title_problems(title: str) -> list[str]:
    """What is wrong with a title: a lead-in, a relative time, a dangling colon."""
    out: list[str] = []
    t = fold(title)
    m = data.title_leadin().match(t)
    if (m and m.end() > 0) or colon_head(title):
        out.append("lead-in")
    if data.pattern("relative_time.txt").search(t):
        out.append("relative time")
    if t.rstrip().endswith((":", "：")):
        out.append("dangling colon")
    return out
