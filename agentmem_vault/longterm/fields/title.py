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
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_SENTENCE_END = re.compile(r"[。！？；;\n]|(?<=[^\s.])[.!?](?=\s|$)")
_CLAUSE = re.compile(
    r"[，,、]\s*|\s[—–]\s|\s(?=(?:so|because|since|which|unless|otherwise|but|and)\s)|(?<=[^\d\s]),(?=\S)", re.I
)
_PROHIBITION = re.compile(
    r"不要|别|不能|不准|不许|禁止|禁用|不用|\b(?:don'?t|do not|never|no|not|stop|avoid|banned|forbidden|not allowed)\b",
    re.I,
)
_ALTERNATIVE = re.compile(r"改用|改成|换成|換成|而是|用|\b(?:use|using|instead|prefer|switch to)\b", re.I)
_DIRECTIVE = re.compile(
    r"要|必须|必須|一律|统一|統一|不要|别|別|禁止|不准|不許|不许|改用|用|请|請|只|以后|以後|之后|之後|今后|今後|直接|"
    r"\b(?:always|never|must|should|use|don'?t|do not|only|keep|put|run|prefer|avoid|need|needs|from now on|going forward|"
    r"ha(?:ve|s) to|give me|show me|"
    r"banned|forbidden|not allowed)\b",
    re.I,
)
# a complaint states the problem, the sentence after it the rule ("我真的很受不了…。以后直接给结论")
_COMPLAINT = re.compile(
    r"受不了|讨厌|討厭|烦死|煩死|很烦|很煩|烦你|煩你|特别烦|特別煩|\b(?:i (?:really )?hate|i'?m tired of|ugh|i can'?t stand|bugs me|annoys me)\b",
    re.I,
)
# an example ("像 usr、cfg 這種", "e.g. …") illustrates the rule before it and is never the rule
_EXAMPLE = re.compile(r"^[\s,，、]*(?:像|例如|比如|譬如|such as|like|e\.g\.|for example)", re.I)
# a condition alone ("When you add a CLI flag") is not yet a rule: it keeps the clause it governs
_CONDITION = re.compile(r"^[\s,，]*(?:when|whenever|if|before|after|once|unless|如果|若|当|當|每次|每当|每當)\b", re.I)
# a colon that ends a head ("For the deploy script here: always run …"), not "02:00" or "python:3.11"
_HEAD_COLON = re.compile(r"：|:(?=\s)")
_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|\s+|`[^`]*`|[^\s\u3400-\u9fff\uf900-\ufaff]+")
_DANGLING = re.compile(
    r"(?:\s+(?:a|an|the|and|or|but|to|of|for|with|in|on|at|by|from|as|so|than|that|which|when|if|because|instead|not|is|are|be|"
    r"before|after|until|unless|without|into|onto|over|under|via|per|about|then|it'?s|it is|that'?s))+$",
    re.I,
)
_TRIM = " ,，:：;；、—–-(（[「『\"'.…"


def width(s: str) -> float:
    return sum(1.75 if _CJK.match(ch) else 1.0 for ch in s)


def _fold_map(text: str) -> tuple[str, list[int]]:
    """``text`` folded character by character (so that offsets map back) and, for each folded
    character, the index of the character it came from."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        f = " " if ch.isspace() else fold(ch) or ch
        out.append(f)
        where += [i] * len(f)
    return "".join(out), where


def _orig(where: list[int], text: str, folded_pos: int) -> int:
    return where[folded_pos] if folded_pos < len(where) else len(text)


def strip_leadins(text: str) -> str:
    """``text`` without the lead-ins it opens with (repeatedly: "OK, note: …")."""
    prev = None
    t = text.strip()
    while prev != t and t:
        prev = t
        f, where = _fold_map(t)
        m = data.title_leadin().match(f)
        if m and m.end():
            rest = t[_orig(where, t, m.end()) :].strip(_TRIM + " ")
            t = rest or t
    return t


def strip_relative_time(text: str) -> str:
    """``text`` without relative time words ("上週", "this sprint") and the space they leave."""
    out = text
    for _ in range(5):
        f, where = _fold_map(out)
        m = data.relative_time().search(f)
        if not m:
            break
        head, tail = out[: _orig(where, out, m.start())].rstrip(), out[_orig(where, out, m.end()) :].lstrip()
        glue = " " if head and tail and not (_CJK.match(head[-1]) or _CJK.match(tail[0])) else ""
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
    out: list[str] = []
    used = 0.0
    for tok in _TOKEN.findall(text):
        w = width(tok)
        if used + w > limit:
            break
        out.append(tok)
        used += w
    return "".join(out)


def _split(text: str, at: re.Pattern[str], *, keep: bool) -> list[str]:
    """``text`` cut where ``at`` matches; with ``keep`` each cut keeps its separator at the start
    of the next part (a clause keeps its comma), else the separator is dropped (a sentence end)."""
    parts: list[str] = []
    last = 0
    for m in at.finditer(text):
        parts.append(text[last : m.start()])
        last = m.start() if keep else m.end()
    parts.append(text[last:])
    return parts


def _clauses(sentence: str) -> list[str]:
    return [p for p in _split(sentence, _CLAUSE, keep=True) if p.strip(_TRIM)]


def _has_alternative(text: str) -> bool:
    """Says what to do instead: "改用 httpx", "use httpx" (not the "use" of "don't use")."""
    for m in _ALTERNATIVE.finditer(text):
        if not _PROHIBITION.search(text[max(0, m.start() - 8) : m.start()]):
            return True
    return False


def _sentences(text: str) -> list[str]:
    return [x.strip() for x in _split(text, _SENTENCE_END, keep=False)]


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


# the alternative the extractor keeps with a rule whose sentence lost it ("Use httpx (instead of
# requests here).", "统一用 pathlib（而不是用 os.path）"): part of the whole rule, kept in the title
_KEPT_ALTERNATIVE = re.compile(
    r"\s*[(（](?:instead of|rather than|not|而不是|不是|不用)[^()（）]*[)）]\s*[.。]?\s*$", re.I
)


def title_for(content: str) -> str:
    """The rule of ``content`` as a title (see the module doc)."""
    text = " ".join(content.split())
    kept_alt = _KEPT_ALTERNATIVE.search(text)
    if kept_alt and kept_alt.start() > 0:
        title = title_for(text[: kept_alt.start()])
        extra = kept_alt.group(0).strip().rstrip(".。")
        return title + (" " if extra[0] == "(" else "") + extra if width(title + extra) <= MAX_WIDTH * 1.2 else title
    text = strip_leadins(strip_relative_time(strip_leadins(text)))
    sentences = [x for x in _sentences(text) if x.strip(_TRIM)] or [text]
    # the rule, not the complaint, the question or the story before it: the first sentence that
    # directs ("Do you really have to add a docstring to every helper? Private helpers don't need
    # one." is titled by its answer; a question with no such answer is its own rule)
    asked = {x for x in sentences if re.search(re.escape(x) + r"\s*[?？]", text)}
    first = next(
        (x for x in sentences if _DIRECTIVE.search(x) and not _COMPLAINT.search(x) and x not in asked),
        sentences[0],
    )
    rest = sentences[sentences.index(first) + 1 :]
    if _COMPLAINT.search(first) and width(first) > SOFT_WIDTH:  # "我很受不了你每次都貼整個檔案，之後只給 diff"
        parts = _clauses(first)
        rule = next(
            (
                i
                for i, c in enumerate(parts)
                if i and _DIRECTIVE.search(c) and not _COMPLAINT.search(c) and not _EXAMPLE.match(c)
            ),
            0,
        )
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
