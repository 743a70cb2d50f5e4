"""A note's title is the rule itself (docs/notes.md, Title): short, searchable, in the user's own
language and script; no lead-in ("決定了：", "Note:", "跟你說一下", "A couple of things"), no
relative time ("上週", "this sprint"), never cut at a colon, and the whole rule kept: a prohibition
keeps the alternative that goes with it ("不要用 requests" keeps "改用 httpx")."""

from __future__ import annotations

import re

from agentmem_vault.longterm.fields import data
from agentmem_vault.longterm.wording import capitalise
from agentmem_vault.model.textnorm import fold

MAX_WIDTH = 70.0  # in Latin characters; a CJK character counts 1.75 (about 40 of them)
SOFT_WIDTH = 44.0  # longer than this, the title keeps its first clauses only
_SENTENCE_END = re.compile(r"[。！？；;\n]|(?<=[^\s.])[.!?](?=\s|$)")
_CLAUSE = re.compile(
    r"[，,、]\s*|\s[—–]\s|\s(?=(?:so|because|since|which|unless|otherwise|but|and)\s)|(?<=[^\d\s]),(?=\S)", re.I
)
_PROHIBITION, _ALTERNATIVE, _DIRECTIVE, _COMPLAINT, _EXAMPLE, _CONDITION, _DANGLING, _KEPT_ALTERNATIVE = (
    data.section("title_words.txt", name)
    for name in ("prohibition", "alternative", "directive", "complaint", "example", "condition", "dangling", "kept")
)
# a colon that ends a head ("For the deploy script here: always run …"), not "02:00" or "python:3.11"
_HEAD_COLON = re.compile(r"：|:(?=\s)")
_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|\s+|`[^`]*`|[^\s\u3400-\u9fff\uf900-\ufaff]+")
_TRIM = " ,，:：;；、—–-(（[「『\"'.…"


def width(s: str) -> float:
    return sum(1.75 if data.CJK.match(ch) else 1.0 for ch in s)


def _fold_map(text: str) -> tuple[str, list[int]]:
    """``text`` folded character by character (so that offsets map back) and, for each folded
    character, the index of the character it came from."""
    folded = [" " if ch.isspace() else fold(ch) or ch for ch in text]
    return "".join(folded), [i for i, f in enumerate(folded) for _ in f]


def _orig(where: list[int], text: str, folded_pos: int) -> int:
    return where[folded_pos] if folded_pos < len(where) else len(text)


def strip_leadins(text: str) -> str:
    """``text`` without the lead-ins it opens with (repeatedly: "OK, note: …")."""
    prev, t = None, text.strip()
    while prev != t and t:
        prev, (f, where) = t, _fold_map(t)
        if (m := data.title_leadin().match(f)) and m.end():
            t = t[_orig(where, t, m.end()) :].strip(_TRIM + " ") or t
    return t


def strip_relative_time(text: str) -> str:
    """``text`` without relative time words ("上週", "this sprint") and the space they leave."""
    out = text
    for _ in range(5):
        f, where = _fold_map(out)
        if not (m := data.pattern("relative_time.txt").search(f)):
            break
        head, tail = out[: _orig(where, out, m.start())].rstrip(), out[_orig(where, out, m.end()) :].lstrip()
        glue = " " if head and tail and not (data.CJK.match(head[-1]) or data.CJK.match(tail[0])) else ""
        out = (head + glue + tail).strip().lstrip(_TRIM + "的")
    return out


def _tidy(t: str) -> str:
    prev = None
    while prev != t:
        prev = t
        for q in ("`", '"'):  # a quote the cut left open loses its opening mark
            if t.count(q) % 2:
                i = t.rfind(q)
                t = t[:i] + t[i + 1 :]
        for o, c in (("(", ")"), ("（", "）"), ("[", "]"), ("「", "」"), ("『", "』"), ("【", "】"), ("《", "》")):
            i = t.rfind(o)
            if i >= 0 and t.find(c, i) < 0:
                t = t[:i]
        t = _DANGLING.sub("", t.rstrip(_TRIM)).rstrip(_TRIM)
        t = re.sub(r"(?<=[\u3400-\u9fff])[的和或与與及把被在了]$", "", t)
    return t


def _fit(text: str, limit: float) -> str:
    """The longest run of whole tokens from the start of ``text`` within ``limit``."""
    out, used = "", 0.0
    for tok in _TOKEN.findall(text):
        if (used := used + width(tok)) > limit:
            break
        out += tok
    return out


def _split(text: str, at: re.Pattern[str], *, keep: bool) -> list[str]:
    """``text`` cut where ``at`` matches; with ``keep`` each cut keeps its separator at the start
    of the next part (a clause keeps its comma), else the separator is dropped (a sentence end)."""
    parts, last = [], 0
    for m in at.finditer(text):
        parts.append(text[last : m.start()])
        last = m.start() if keep else m.end()
    return [*parts, text[last:]]


def _clauses(sentence: str) -> list[str]:
    return [p for p in _split(sentence, _CLAUSE, keep=True) if p.strip(_TRIM)]


def _has_alternative(text: str) -> bool:
    """Says what to do instead: "改用 httpx", "use httpx" (not the "use" of "don't use")."""
    return any(not _PROHIBITION.search(text[max(0, m.start() - 8) : m.start()]) for m in _ALTERNATIVE.finditer(text))


def _rule(text: str) -> bool:
    """Directs, and is neither a complaint nor an example."""
    return bool(_DIRECTIVE.search(text)) and not _COMPLAINT.search(text) and not _EXAMPLE.match(text)


def _at_colon(text: str) -> tuple[str, str]:
    """``text`` split at its first colon that ends a head (outside backticks), or ("", "")."""
    spans = [m.span() for m in re.finditer(r"`[^`]*`", text)]
    at = next((m for m in _HEAD_COLON.finditer(text) if not any(a <= m.start() < b for a, b in spans)), None)
    return (text[: at.start()], text[at.end() :].strip()) if at else ("", "")


def colon_head(text: str) -> str:
    """The part of ``text`` before its first colon when it only leads to the rule after it: an
    announcement ("Going to make it a team convention:", "踩過一個坑："), or a head that directs
    nothing before a tail that does ("For the deploy script here: always run …"); "" otherwise."""
    head, tail = _at_colon(text)
    if width(tail) < 8 or not head.strip():
        return ""
    if data.pattern("title_announcements.txt").search(fold(head)):
        return head
    return head if _DIRECTIVE.search(tail) and not _DIRECTIVE.search(head) else ""


def _scope_only(clause: str) -> bool:
    """A clause that only says where the rule holds ("不論在哪一個專案", "No matter which project it
    is", "Whatever repo we're in"): the note's scope says it, the title need not."""
    f = fold(clause)
    rest = data.pattern("scope_every_project.txt").sub(" ", data.pattern("scope_this_project.txt").sub(" ", f))
    return rest != f and not data.subject_words(rest)


def title_for(content: str) -> str:
    """The rule of ``content`` as a title (see the module doc)."""
    text = " ".join(content.split())
    kept_alt = _KEPT_ALTERNATIVE.search(text)
    if kept_alt and kept_alt.start() > 0:
        title = title_for(text[: kept_alt.start()])
        extra = kept_alt.group(0).strip().rstrip(".。")
        return title + (" " if extra[0] == "(" else "") + extra if width(title + extra) <= MAX_WIDTH * 1.2 else title
    text = strip_leadins(strip_relative_time(strip_leadins(text)))
    sentences = [x.strip() for x in _split(text, _SENTENCE_END, keep=False) if x.strip(_TRIM)] or [text]
    # the rule, not the complaint, the question or the story before it: the first sentence that
    # directs ("Do you really have to add a docstring to every helper? Private helpers don't need
    # one." is titled by its answer; a question with no such answer is its own rule)
    asked = {x for x in sentences if re.search(re.escape(x) + r"\s*[?？]", text)} if re.search("[?？]", text) else set()
    first = next((x for x in sentences if _rule(x) and x not in asked), sentences[0])
    rest = sentences[sentences.index(first) + 1 :]
    if _COMPLAINT.search(first) and width(first) > SOFT_WIDTH:  # "我很受不了你每次都貼整個檔案，之後只給 diff"
        parts = _clauses(first)
        rule = next((i for i, c in enumerate(parts) if i and _rule(c)), 0)
        first = "".join(parts[rule:]).strip(_TRIM) if rule else first
    first = strip_leadins(first)
    head, tail = _at_colon(first)
    if colon_head(first):
        first = strip_leadins(tail)
    elif head and _DIRECTIVE.search(head) and not _DIRECTIVE.search(tail):
        first = head  # "We always set `retries=0`: a retried charge can bill twice": the reason goes
    parts = _clauses(first)
    while len(parts) > 1 and _scope_only(parts[0]):
        parts = parts[1:]
    first = "".join(parts).strip(_TRIM)
    if rest and _PROHIBITION.search(first) and not _has_alternative(first) and _has_alternative(rest[0]):
        alt = strip_leadins(rest[0])
        first = f"{first.rstrip(_TRIM)}; {alt[:1].lower() + alt[1:] if alt[:2].istitle() else alt}"  # "Don't use requests; use httpx instead"
    if width(first) > SOFT_WIDTH:
        clauses = _clauses(first)
        kept = clauses[0]
        for nxt in clauses[1:]:
            # a prohibition keeps its alternative; otherwise add clauses while short
            # a condition alone ("When X", "When X, it's") keeps the clauses it governs
            needs = (_PROHIBITION.search(kept) and not _has_alternative(kept) and _has_alternative(nxt)) or (
                _CONDITION.match(kept) and len(kept[len(clauses[0]) :].split()) < 3
            )
            if (needs and width(kept + nxt) <= MAX_WIDTH * 1.2) or width(kept + nxt) <= SOFT_WIDTH:
                kept += nxt
            else:
                break
        first = kept
    if width(first) > MAX_WIDTH * 1.2:
        first = _fit(first, MAX_WIDTH)
    t = _tidy(first.strip())
    if not t:
        t = _tidy(_fit(text, MAX_WIDTH))
    return capitalise(t.lstrip(_TRIM))
