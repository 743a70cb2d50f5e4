"""Segmentation of what the user wrote into the pieces that can each be one memory
(docs/extraction.md, "Offline extraction"): paragraphs, list items, sentences, and the items of a
sentence that joins several statements ("…, and also …", "另外 …", "第一…；第二…").

The cuts follow the punctuation of both scripts and never fall inside a statement: not at an
ellipsis ("INSERT ... ON CONFLICT"), not at a colon, not inside backticks, and a clause that gives
the reason or condition of the one before it ("因為…", "because …", "不然…") stays with it. Which
words join, announce or give a reason is cue data (``longterm/cues.py``); this module only cuts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agentmem_vault.longterm.cues import cue, has
from agentmem_vault.longterm.filters import substance
from agentmem_vault.model.textnorm import fold

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# A sentence ends at 。！？ (any run), or at . ! ? followed by a space and a new sentence; never at
# an ellipsis ("..." / "…"), a decimal point, an abbreviation, or inside backticks.
_SENT_END = re.compile(
    r"[。！？]+[」』”）)]?|(?<![.\s])(?<![:：；;，,\s]\d)(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.!?]+(?=\s+\S)"
)
_ENDS = re.compile(r"[。！？.!?]")
# a list item: a bullet, a number, or an ordinal word that opens the line or sentence ("第一，…")
_ORD_WORD = (
    r"(?:第[一二三四五六七八九十]+(?:点|點|条|條)?|(?i:first|second|third|fourth|fifth|finally|lastly))[，,、:：]"
)
_LIST_LINE = re.compile(
    rf"^\s*(?:[-*•・]|\d{{1,2}}[.)）、]|[（(]\d{{1,2}}[)）]|[一二三四五六七八九十][、.．]|{_ORD_WORD})\s*(?P<item>\S.*)$"
)
_TRIM = " \t,，;；。.!！、:："
_COLON = re.compile(r"[:：]")
_BLANK_LINE = re.compile(r"\n\s*\n")
# Quoted text is someone else's words (an error message, a doc): "it says 'remember to ...'".
# A single quote opens and closes only outside a word: "it's because … isn't" quotes nothing.
QUOTED = re.compile(r"(?<!\w)'[^'\n]{3,}'(?!\w)|\"[^\"\n]{3,}\"|“[^”\n]{2,}”|「[^」\n]{2,}」|『[^』\n]{2,}』")


@dataclass(frozen=True)
class Para:
    """One paragraph: its sentences, or an intro and its list items."""

    sentences: tuple[str, ...]
    intro: str = ""
    items: tuple[str, ...] | None = None


def _protect(text: str) -> tuple[str, list[str]]:
    """Inline code hidden behind placeholders so that no cut falls inside it."""
    saved: list[str] = []

    def keep(m: re.Match[str]) -> str:
        saved.append(m.group(0))
        return f"\x00{len(saved) - 1}\x00"

    return re.sub(r"`[^`\n]+`", keep, text), saved


def _restore(text: str, saved: list[str]) -> str:
    if not saved:
        return text
    return re.sub(r"\x00(\d+)\x00", lambda m: saved[int(m.group(1))], text)


def split_sentences(text: str) -> list[str]:
    """The sentences of one paragraph (line breaks end a sentence)."""
    out: list[str] = []
    for line in text.split("\n"):
        if not _ENDS.search(line):
            out.append(line)
            continue
        prot, saved = _protect(line) if "`" in line else (line, [])
        start = 0
        for m in _SENT_END.finditer(prot):
            out.append(_restore(prot[start : m.end()], saved))
            start = m.end()
        out.append(_restore(prot[start:], saved))
    return [" ".join(s.split()) for s in out if s.strip()]


@lru_cache(maxsize=4096)
def paragraphs(text: str) -> tuple[Para, ...]:
    """Paragraphs of the user's own words (``noise.own_words`` has blanked pasted lines)."""
    out: list[Para] = []
    for block in _BLANK_LINE.split(text):
        if not block.strip() or block.lstrip().startswith(("```", "Traceback", 'File "')):
            continue
        lines = [ln for ln in block.splitlines() if ln.strip()]
        listed = [(i, m["item"]) for i, m in ((i, _LIST_LINE.match(ln)) for i, ln in enumerate(lines)) if m]
        if len(listed) >= 2:
            first = listed[0][0]
            intro = " ".join(" ".join(lines[:first]).split())
            items = tuple(x.strip(_TRIM) for _, x in listed)
            out.append(Para(tuple(split_sentences("\n".join(lines[:first]))), intro, items))
            rest = [ln for i, ln in enumerate(lines) if i > listed[-1][0]]
            if rest:
                out.append(Para(tuple(split_sentences("\n".join(rest)))))
            continue
        out.append(_ordinal_items(tuple(split_sentences(block))))
    return tuple(out)


def _ordinal_items(sents: tuple[str, ...]) -> Para:
    """Sentences opened by ordinals after an intro ("先說我的偏好。第一，…。第二，…") are the
    intro's list: each item runs to the next ordinal."""
    starts = [i for i, x in enumerate(sents) if i and _LIST_LINE.match(x)]
    if len(starts) < 2:
        return Para(sents)
    items = [" ".join(sents[a:b]) for a, b in zip(starts, [*starts[1:], len(sents)], strict=True)]
    items = [m["item"].strip(_TRIM) for m in map(_LIST_LINE.match, items) if m]
    return Para(sents[: starts[0]], " ".join(sents[: starts[0]]), tuple(items))


def starts_with_reason(clause: str) -> bool:
    return cue("reason_lead").search(fold(clause.strip(_TRIM))) is not None


def _join_cuts(s: str) -> list[int]:
    """Offsets where a join word ("另外", "and also", "plus,") starts a further statement: after a
    clause boundary, never at the very start (there it only opens the sentence)."""
    f = fold(s)
    cuts: list[int] = []
    for m in cue("join").finditer(f):
        before = f[: m.start()].rstrip()
        if m.start() == 0 or not before:
            continue
        if _names_more(f[m.end() :]):
            continue  # "…, plus the admin CLI, …": one more thing of this statement, no new item
        if before[-1] in ",，;；、" or (before.endswith(" and") and m.group(0).startswith("also")):
            cut = len(before) - (4 if before.endswith(" and") else 1)
            cuts.append(cut + 1 if before[-1] in ",，;；、" else cut)
    return cuts


_FORCE = ("modal", "rule", "never_always", "imperative", "enum_intro")


def _names_more(after: str) -> bool:
    """The words after a join word name one more thing (a noun phrase: "the headers", "一句「…」")
    rather than start a clause: no force of their own up to the next clause boundary."""
    head = " ".join(QUOTED.sub(" ", re.split(r"[,，;；:：。.!?！？]", after.lstrip(" ,，:："), maxsplit=1)[0]).split())
    return has("fragment_head", head) and not any(has(c, head) for c in _FORCE)


def _cut(s: str, cuts: list[int]) -> list[str]:
    parts, start = [], 0
    for c in sorted(set(cuts)):
        parts.append(s[start:c])
        start = c
    parts.append(s[start:])
    return [p.strip(_TRIM) for p in parts if p.strip(_TRIM)]


@lru_cache(maxsize=8192)
def _join_items(sentence: str) -> tuple[str, ...]:
    cuts = _join_cuts(sentence)
    return tuple(_merge_reasons(_cut(sentence, cuts))) if cuts else (sentence.strip(),)


def join_items(sentence: str) -> list[str]:
    """A sentence cut where a join word adds a further statement; reason clauses stay."""
    return list(_join_items(sentence))


def _merge_reasons(parts: list[str]) -> list[str]:
    out: list[str] = []
    for p in parts:
        # a reason joins the clause before it; a bare condition ("你推薦的時候") the one after it
        if out and (starts_with_reason(p) or cue("condition_end").search(fold(out[-1]))):
            out[-1] = f"{out[-1]}，{p}" if _CJK.search(out[-1][-1:]) else f"{out[-1]}, {p}"
        else:
            out.append(p)
    return out


_COUNT = {w: n for n, ws in ((2, "two both couple 2 两 二"), (3, "three 3 三"), (4, "four 4 四")) for w in ws.split()}
_COUNT_WORD = re.compile(r"\b(two|both|couple|three|four|[234])\b|([两二三四])\s*(?:点|件|条|项|个|句|原则|规矩)")


def announced_count(intro: str) -> int:
    """How many items an intro announces ("Two things", "記住三點"); 0 when it does not say."""
    m = _COUNT_WORD.search(fold(intro))
    return _COUNT.get((m.group(1) or m.group(2)) if m else "", 0)


def enumeration_items(body: str, plural: bool, count: int = 0) -> list[str]:
    """The items of what follows an intro that announces several ("記住三點：A、B、C",
    "Two things: A, and B"); [] when the body is one statement. ``count``: how many the intro
    announced, which decides between two ways of cutting ("A, and B, C" is two items when two
    were announced)."""
    flat = " ".join(body.split())
    prot, saved = _protect(flat)
    cjk = _CJK.search(flat) is not None

    def split(sep: "str | re.Pattern[str]") -> list[str]:
        return [_restore(x.strip(_TRIM), saved) for x in re.split(sep, prot) if x.strip(_TRIM)]

    parts = split(cue("ordinal"))
    if len(parts) >= 2:
        return _merge_reasons(parts)
    if plural or len(join_items(flat)) >= 2:
        # every boundary at once: "A；B；还有就是 C" is three items, not "A；B" and C
        parts = _merge_reasons([p for x in split(r"[；;]") for p in join_items(x)])
        if len(parts) >= 2:
            return parts
    if cjk:
        # "A 用 x、B 用 y、C 用 z": clauses with their own verb are items even without a count word
        parts = split("、")
        if len(parts) >= 2 and all(len(_CJK.findall(x)) >= 3 and has("clause_verb", fold(x)) for x in parts):
            if _verb_sides(parts):  # not "不用 X，顏色、間距全部用 Y": 、 there joins two nouns
                return parts
    if not plural:
        return []
    if cjk:
        for sep in (r"、", r"[，,]\s*(?:(?:and|or)\s+)?"):
            parts = _merge_reasons(split(sep))
            if len(parts) >= 2 and all(has("clause_verb", fold(x)) or re.search(r"[A-Za-z]{3}", x) for x in parts):
                return parts
        return []
    # "A, and B"; bare commas only for a list of three or more ("A, B, and C")
    cuts = [
        parts
        for sep, least in ((r",\s*(?:and\s+)?", 3), (r",\s*and\s+", 2))
        if len(parts := _merge_reasons(split(sep))) >= least and all(len(x.split()) >= 2 for x in parts)
    ]
    exact = [p for p in cuts if len(p) == count]
    return (exact or cuts or [[]])[0]


def _verb_sides(parts: list[str]) -> bool:
    """Each 、 of a list of clauses has a clause with its own verb on both sides (up to the
    nearest comma), not a bare noun ("按鈕、表格")."""
    sides = [(re.split(r"[，,]", a)[-1], re.split(r"[，,]", b)[0]) for a, b in zip(parts, parts[1:], strict=False)]
    return all(has("clause_verb", fold(x)) and substance(x) >= 3 for pair in sides for x in pair)


def intro_and_body(sentence: str) -> tuple[str, str] | None:
    """A sentence "intro: body" whose intro only announces (short, before the first colon)."""
    m = _COLON.search(sentence)
    if m is None:
        return None
    intro, body = sentence[: m.start()], sentence[m.end() :]
    if not body.strip() or len(intro) > 80:
        return None
    return intro.strip(), body.strip()
