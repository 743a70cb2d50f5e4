"""Candidate detection over the user's turns (docs/extraction.md, "Offline extraction"): which
pieces of what the user wrote are memories, and of what kind.

Each user turn is cut into paragraphs, list items, sentences and joined items
(``longterm/clauses.py``); each piece is classified by the form of its statement
(``longterm/kinds.py``). A request that announces several items gives one memory per item; items
joined by "and also" / "另外" / "還有" are parallel (a piece without a cue of its own joins the kind
of its neighbours); a decision keeps the sentence that gives its reason, a pitfall the sentence
that gives its fix, a dislike or a request to keep a fact the rule that follows it. A continuation
that only points back ("以後都照這樣做") makes the statement it points at a memory. To-dos and next
actions are session state and never memories.

The result is a list of ``Found``: the content in the user's words, the words it came from, the
kind, and what the statement says about its own reach (``longterm/statement.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agentmem_vault.longterm.clauses import (
    Para,
    announced_count,
    enumeration_items,
    intro_and_body,
    join_items,
    paragraphs,
    starts_with_reason,
)
from agentmem_vault.longterm.cues import cue, has
from agentmem_vault.longterm.filters import specificity_score, substance
from agentmem_vault.longterm.lexicon import generic_names
from agentmem_vault.longterm.kinds import (
    Cue,
    classify,
    folded,
    name_words,
    named_words,
    supplement_parts,
    without_opener,
)
from agentmem_vault.longterm.noise import own_words
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.longterm.wording import clean
from agentmem_vault.model.textnorm import fold

_COMMA = re.compile(r"[，,]")
_AND = re.compile(r",\s+and\s+|[，,]\s*(?:而且|並且|并且)")  # "A, and B" / "A，而且 B"

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
MAX_JOINED = 320  # characters: a statement and the sentences it keeps (reason, fix) stay readable


@dataclass
class Found:
    content: str
    raw: list[str]
    kind: str
    asked: bool
    turn: int
    action: str = "create"  # "delete": a snapshot decision marked [superseded] retires its note


@lru_cache(maxsize=8192)
def anaphoric_only(sentence: str) -> bool:
    """A sentence that only points back ("以後都這樣", "Do it like that from now on")."""
    f = fold(sentence)
    if not has("anaphor", f) or has("asks", f):
        return False
    rest = cue("filler").sub(" ", cue("anaphor").sub(" ", f))
    return substance(rest) <= 4


_NOT_STATED = ("question", "not_memory", "todo")  # cues of what is asked, a look-alike, session state


@lru_cache(maxsize=8192)
def is_statement(s: str) -> bool:
    f = folded(s)
    task = has("task_request", f) and not has("general", f)
    return substance(s) >= 6 and not task and not anaphoric_only(s) and not any(has(c, f) for c in _NOT_STATED)


def _announcer(intro: str) -> bool:
    """An intro that only announces what follows ("One thing though:", "決定了：")."""
    width = len(_CJK.findall(intro)) + 2 * len(intro.split())
    return width <= 16 and specificity_score(intro) == 0


def _body(piece: str) -> str:
    """The piece without an announcing intro before its colon."""
    ib = intro_and_body(piece)
    return ib[1] if ib and _announcer(ib[0]) else piece


def _enumeration(s: str) -> tuple[str, list[str]] | None:
    """(intro, items) when the sentence announces several items ("記住三點：…", "Two rules: …",
    "幫我記幾件事，…")."""
    ib = intro_and_body(s)
    if ib is None:
        m = _COMMA.search(s)
        ib = (s[: m.start()], s[m.end() :]) if m else None
        if ib is None or not has("plural", fold(ib[0])):
            return None
    intro, body = ib
    fi = fold(intro)
    counted = has("plural", fi) and _announces(fi)  # "兩點也是所有專案通用的：A；但是 B"
    if len(intro) > 80 or not (has("enum_intro", fi) or counted) or has("not_memory", fi) or has("question", fi):
        return None
    items = [x for x in enumeration_items(body, has("plural", fi), announced_count(intro)) if substance(x) >= 3]
    return (intro, items) if len(items) >= 2 else None


def _announces(fi: str) -> bool:
    """An intro announcing lasting items: rules, habits, or a reach ("所有專案都適用：", "以後都照這樣：")."""
    return has("enum_intro", fi) or has("scope_all", fi) or has("durable", fi)


def _absorbs(hit: Cue, content: str, nxt: str, said: str) -> bool:
    """Whether the next sentence belongs to this statement: its reason, its fix, the rule a
    dislike or a kept fact leads to, the other half of a correction, a sentence with no force of
    its own, an extension (scope, exception, example) or a pointer back at it."""
    f = fold(nxt)
    if has("ruled_out", f) and (hit.kind == "decision" or has("alternative", folded(content))):
        return True  # "Parcel 也不要", "and MMKV is out too": one more alternative of the choice
    if without_opener(f) != f or not nxt.strip() or (f.startswith("and ") and has("imperative", f[4:])):
        return False  # "Also, …" / "另外 …" / "and drop …" opens a statement of its own
    nc = classify(nxt, said)
    pointer = has("pointer", f) and specificity_score(nxt) == 0
    if starts_with_reason(nxt) or has("extends", f) or pointer:
        own = nc is not None and (nc.kind in ("reversal", "supplement") or nc.kind == "decision" and not pointer)
        return not own and not has("question", f)
    if hit.kind == "preference" and has("rhetorical", folded(content)) and has("directive", f) and substance(nxt) >= 6:
        return True  # after a complaint asked as a question, its remedy ("一律用 const 不行吗？")
    if not is_statement(nxt) and not (hit.kind == "decision" and substance(nxt) >= 6 and not has("question", f)):
        return False
    if nc is None:  # no force of its own: it goes on about this statement (a detail, a story)
        return not nxt.rstrip().endswith((":", "："))
    if nc.asked and not hit.asked and hit.kind != "pitfall":
        return False  # a request of its own (a pitfall's fix is often said "always …")
    if hit.kind == "pitfall":
        return nc.kind in ("rule", "explicit", "correction", "environment")
    directive = nc.kind in ("rule", "correction", "preference")
    if directive and not nc.asked and has("ban", folded(content)) != has("ban", folded(nxt)):
        # a ban and what to do instead, either way round ("We never use inline styles. …"), unless the
        # ban rules out no alternative ("不准用 X") and the other side is bound on its own: two rules
        ban, other = (content, nxt) if has("ban", folded(content)) else (nxt, content)
        return any(has("alternative", fold(c.strip())) for c in _COMMA.split(ban)) or not has("modal", folded(other))
    if hit.kind in ("explicit", "environment") and hit.asked:
        # "Can you remember that the runners have no Docker? Anything with containers has to …":
        # the fact and the rule it leads to are one memory (a rule is complete on its own)
        known = classify(content, said) is not None or is_statement(content)
        return directive and known and not has("rule", folded(content))
    return directive and hit.kind in ("preference", "correction")  # a dislike's remedy


# a user turn: its index, paragraphs, sentences (list items included), what the assistant said
# before, and whether the turn asks (a question, a task, pasted output to look at)
_UserTurn = tuple[int, "tuple[Para, ...]", list[str], str, bool]


def _user_turns(turns: list[Turn]) -> list[_UserTurn]:
    """The user turns as sentences, read once for both passes. Only the user's own lines: a
    pasted warning, log, traceback, quoted doc or chat says "always"/"should" in someone else's
    voice (docs/extraction.md, "Pasted text")."""
    out: list[_UserTurn] = []
    said = ""
    for idx, t in enumerate(turns):
        if t.role != "user":
            said = t.text
            continue
        own = own_words(t.text)
        paras = paragraphs(own)
        flat = [x for p in paras for x in (p.sentences if p.items is None else [p.intro, *p.items]) if x]
        asks = len(own.split()) < len(t.text.split()) or any(has("question", folded(x)) for x in flat)
        asks = asks or any(has("task_request", folded(x)) for x in flat)
        out.append((idx, paras, flat, said, asks))
    return out


def _context(hit: Cue, part: str, asks: bool) -> bool:
    """A sentence of a turn that asks (a question, a task, a paste) that only describes: a symptom
    ("the checkout page only breaks on Safari"), the task's details ("it needs to skip the
    header"). Its rule force, if any, is an adverb or a need of the task, not a general rule."""
    if asks and hit.kind == "environment" and not hit.asked:  # the user's setup, the question's situation
        return not has("env_lead", folded(part))
    if not asks or hit.kind != "rule" or hit.asked:
        return False
    bare = cue("adverb").sub(" ", folded(_body(part)))
    return not (has("general", bare) or has("modal", bare))


def _task_object(s: str) -> set[str]:
    """What a request to make something now names ("we need a bulk endpoint")."""
    f = folded(s)
    made = cue("task_make").search(f) or cue("task_request").search(f)
    return name_words(f[made.end() :]) if made else set()


def _spec(hit: Cue, part: str, task: set[str]) -> bool:
    """A rule, choice or wish about what the user asked to make in this chat, with no word that
    makes it last: the task's spec (docs/extraction.md, "The spec of what is being made now")."""
    if hit.asked or hit.kind not in ("rule", "decision", "preference", "correction"):
        return False
    f = folded(part)
    if any(has(c, f) for c in ("durable", "scope_all", "scope_project", "decision")):
        return False
    if has("task_spec", f) or has("binding", f):
        return has("task_spec", f)  # "it must …" is the spec; "handler 必須冪等" binds every one
    # its subject after an answer's opener ("可以，…", "sounds good, …"), or an imperative's object
    clauses = [c.strip() for c in re.split(r"[，,:：]", without_opener(f))]
    acked = len(clauses) > 1 and len(_CJK.findall(clauses[0])) < 3 and len(clauses[0].split()) <= 2
    if hit.kind == "correction" and not acked:
        return False  # only "可以，用 X 不要用 Y" agrees with the assistant and asks for a change now
    head = clauses[1] if acked else clauses[0]
    head = head if has("imperative", head) else head[:6] if _CJK.match(head) else head[:24]
    return bool(task & name_words(head))


def _verdict_only(f: str) -> bool:
    """A folded clause that only opens a correction and judges the last answer."""
    rest = cue("verdict").sub(" ", cue("correction").sub(" ", f))
    return substance(cue("scope_project").sub(" ", cue("filler").sub(" ", rest))) <= 2


def _directs(s: str, said: str) -> bool:
    """A sentence that says what to do: a rule, a correction, a preference, or an imperative."""
    hit = classify(s, said)
    return (hit is not None and hit.kind in ("rule", "explicit", "correction", "preference")) or (
        has("imperative", folded(s))
    )


def _two_kinds(part: str, said: str) -> list[str]:
    """ "A, and B" / "A，而且 B" as two statements (docs/extraction.md, "One memory per item"): of
    different kinds (a fact and a rule), or B bound on its own and about something else."""
    m = _AND.search(part)
    cause_fix = any(has(c, folded(part)) for c in ("fix_label", "pitfall_cause"))  # one pitfall
    if m is None or cause_fix or _CJK.search(part) and "and" in m.group(0):
        return [part]
    head, tail = part[: m.start()], part[m.end() :]
    a, b = classify(_body(head), said), classify(tail, said)
    ft = folded(tail)
    if not specificity_score(head) or not (specificity_score(tail) or has("binding", ft)) or b is None:
        return [part]  # "but please remember this, and …": a request that only points on
    alone = ("environment", "rule", "explicit", "preference")  # a decision's second half is its own
    kinds = a is not None and a.kind != b.kind and {a.kind, b.kind} <= set(alone) and not _CJK.search(part)
    own = has("binding", ft) and not has("back_ref", ft) and not name_words(head) & name_words(tail) - generic_names()
    return [head, tail] if kinds or own and b.kind in alone and (a is not None or is_statement(head)) else [part]


class _Scan:
    """One pass over the user's turns; ``found`` collects the candidates in order."""

    def __init__(self, first_turn: int, told: "set[tuple[int, int]] | None" = None) -> None:
        self.told = told or set()  # (turn, sentence) already part of an incident (``incidents``)
        self.first_turn = first_turn
        self.found: list[Found] = []
        self.made: dict[tuple[int, int], Found] = {}
        self.user_turns: list[tuple[int, list[str]]] = []  # earlier user turns, as sentences
        self.said = ""  # what the assistant said last: a correction corrects it
        self.asks = False  # the turn asks something (``_context``)
        self.task: set[str] = set()  # the words of what the user asked to make in this source

    def emit(self, content: str, raw: list[str], hit: Cue, idx: int, at: list[int]) -> Found | None:
        content = content.strip()
        if not content:
            return None
        f = Found(content, raw, hit.kind, hit.asked, idx)
        self.found.append(f)
        for k in at:
            self.made[(idx, k)] = f
        return f

    def run(self, user: "list[_UserTurn]") -> list[Found]:
        for idx, paras, flat, said, asks in user:
            self.said, self.asks = said, asks
            self.task |= {w for x in flat for w in _task_object(x)}
            if idx >= self.first_turn:
                self.turn(idx, paras, flat)
            self.user_turns.append((idx, flat))
        return self.found

    def turn(self, idx: int, paras: "tuple[Para, ...]", flat: list[str]) -> None:
        k = 0
        for p in paras:
            if p.items is not None:
                self.items(idx, p.intro, p.items, k)
                k += len(p.sentences) + len(p.items) if not p.intro else 1 + len(p.items)
                continue
            self.sentences(idx, p.sentences, k, flat)
            k += len(p.sentences)

    def items(self, idx: int, intro: str, items: "list[str] | tuple[str, ...]", k: int) -> None:
        """A list after an intro: every item is a memory when the intro asks for them to be kept
        or announces rules; otherwise each item stands on its own."""
        fi = fold(intro)
        if has("todo", fi) or has("todo_intro", fi):
            return  # a to-do, plan or question list is session state (docs/extraction.md)
        head = classify(f"{intro}:", self.said) if intro else None
        announced = bool(intro) and _announces(fi) and not has("question", fi)
        # "以後都照這樣：", "this applies in every repo:": the user asks for the items to hold
        asked = bool(head and head.asked) or announced and (has("durable", fi) or has("scope_all", fi))
        for j, item in enumerate(items):
            hit = classify(item, self.said)
            if hit is None and announced and substance(item) >= 3 and not has("question", folded(item)):
                kind = "explicit" if asked else "preference" if has("pref_noun", fi) else "rule"
                hit = Cue(kind, 5 if asked else 4, 0.9, asked)
            elif hit is not None and head is not None and head.asked and not hit.asked:
                hit = Cue(hit.kind, 5, 0.9, True)
            if hit is not None:
                self.emit(clean(item), [intro, item], hit, idx, [k + 1 + j])

    def sentences(self, idx: int, sents: "tuple[str, ...]", k0: int, flat: list[str]) -> None:
        i = 0
        while i < len(sents):
            s, (j, lead) = sents[i], self.corrected(sents, i)
            if (idx, k0 + i) in self.told or has("todo", folded(s)):
                i += 1
            elif j >= i:  # "No. <what is so> … <the rule>.": one correction, said after its opener
                hit = Cue("correction", 4, 0.8)
                said = " ".join(clean(x) for x in [lead, *sents[i + 1 : j + 1]] if x)
                while j + 1 < len(sents) and _absorbs(hit, said, sents[j + 1], self.said):
                    j, said = j + 1, f"{said} {clean(sents[j + 1])}"
                self.emit(said, list(sents[i : j + 1]), hit, idx, list(range(k0 + i, k0 + j + 1)))
                i = j + 1
            elif anaphoric_only(s):
                continue_statement(self, s, idx, k0 + i, flat)
                i += 1
            elif (enum := _enumeration(s)) is not None:
                self.items(idx, enum[0], enum[1], k0 + i - 1)
                i += 1
            else:
                i = self.statement(idx, sents, i, k0)

    def corrected(self, sents: "tuple[str, ...]", i: int) -> tuple[int, str]:
        """After a correction opener ("No.", "不對喔。", "no, that's wrong for this project.", "這樣不行，…"):
        the index of the correction's last sentence (-1: none) and what the opener's sentence says
        after it (docs/extraction.md, "A correction after its opener")."""
        f = folded(sents[i])
        if not self.said or not has("correction", f):
            return -1, ""
        cut = _COMMA.search(sents[i])
        opener = f if _verdict_only(f) or cut is None else folded(sents[i][: cut.start()])
        lead = sents[i][cut.end() :].strip() if opener is not f and cut is not None else ""
        if not _verdict_only(opener) or lead and _directs(lead, self.said):
            return -1, ""  # "No, it was my network." / "No, use X" (a correction of its own)
        ahead = [j for j in range(i + 1, min(i + 4, len(sents))) if is_statement(sents[j])]
        j = next((j for j in ahead if _directs(sents[j], self.said)), -1)
        # "Should I run force-unlock?" - "NO. don't. <why>": a refusal of what the assistant offered
        nxt = folded(sents[i + 1]) if i + 1 < len(sents) else ""
        refused = self.said.rstrip().endswith(("?", "？")) and has("ban", nxt) and len(nxt.split()) <= 2
        judged = has("verdict", opener) or refused
        if j < 0 and judged:  # what is so, said with something specific
            j = i if lead and specificity_score(lead) else next((a for a in ahead if specificity_score(sents[a])), -1)
        return j, lead

    def parallel(self, idx: int, sents: "tuple[str, ...]", i: int, k0: int) -> Cue | None:
        """A request opened by a join word right after a statement is one more of the same kind
        ("I hate X. Also keep the imports sorted with isort please."); a task ("also please fix
        the typo") or a question is not."""
        f = folded(sents[i])
        prev = self.made.get((idx, k0 + i - 1))
        rest = without_opener(f)
        if prev is None or rest == f or prev.kind not in ("preference", "correction", "rule", "explicit"):
            return None
        request = has("polite", rest) or has("imperative", rest)
        if not request or not is_statement(rest) or has("one_off_scope", rest) or has("task_request", rest):
            return None
        return Cue(prev.kind, 4, 0.8, False)

    def statement(self, idx: int, sents: "tuple[str, ...]", i: int, k0: int) -> int:
        """The memories of sentence ``i`` (and of the sentences it keeps); the next index."""
        parts = [x for p in join_items(sents[i]) for x in _two_kinds(p, self.said)]
        hits = [
            h if h is None or not (_context(h, p, self.asks) or _spec(h, p, self.task)) else None
            for p in parts
            for h in [classify(p, self.said)]
        ]
        base = next((h for h in hits if h is not None), None)
        if base is None:
            base = self.parallel(idx, sents, i, k0)
        if base is None:
            return i + 1
        start = i
        for j, part in enumerate(parts):
            hit = hits[j] or (Cue(base.kind, base.score, base.importance, False) if is_statement(part) else None)
            if hit is None:
                continue
            raw = [part]
            # a complaint has no intro: "could you not add type: ignore everywhere?"
            content = clean(part if has("rhetorical", folded(part)) else _body(part))
            fp = folded(part)
            ruled_out = hit.kind == "decision" and has("decision_form", fp) and not has("decision", fp)
            if j == 0 and i > 0 and (has("extends", fp) or ruled_out) and (idx, k0 + i - 1) not in self.made:
                # "no emoji. Not in replies, not in commit messages.": the sentence it extends;
                # "We start with X. No Y until …": the choice an alternative ruled out goes with
                raw, content = [sents[i - 1], *raw], f"{clean(_body(sents[i - 1]))} {content}"
                start = i - 1
            bare = substance(cue("filler").sub(" ", cue("explicit").sub(" ", fold(content)))) <= 4
            if (len(content) < 4 or hit.asked and bare) and i + 1 < len(sents):
                # "記住：", "Remember:", "可以記一下嗎？" alone: what to keep follows
                i += 1
                raw.append(sents[i])
                content = clean(sents[i])
            while j == len(parts) - 1 and i + 1 < len(sents) and len(content) + len(sents[i + 1]) <= MAX_JOINED:
                if not _absorbs(hit, content, sents[i + 1], self.said):
                    break
                i += 1
                raw.append(sents[i])
                content = f"{content} {clean(sents[i]) if not starts_with_reason(sents[i]) else sents[i]}"
            self.emit(content, raw, hit, idx, list(range(k0 + start, k0 + i + 1)))
        return i + 1


def continue_statement(scan: _Scan, s: str, idx: int, k: int, flat: list[str]) -> None:
    """Join an anaphoric continuation to the statement it points at (same turn first, then the
    user's previous turn): make that statement's candidate explicit, or create it."""
    durable = has("durable", fold(s))
    target: list[tuple[int, int, str]] = []
    for j in range(k - 1, -1, -1):
        if j < len(flat) and is_statement(flat[j]):
            target = [(idx, j, flat[j])]
            break
    if not target and scan.user_turns:
        pidx, psent = scan.user_turns[-1]
        stmts = [(pidx, j, x) for j, x in enumerate(psent) if is_statement(x)]
        target = stmts if sum(len(x) for _, _, x in stmts) <= 240 else stmts[-1:]
    if not target:
        return
    existing = [scan.made[(t, j)] for t, j, _ in target if (t, j) in scan.made]
    if existing:
        existing[-1].asked = existing[-1].asked or durable
        existing[-1].raw.append(s)
        return
    text = " ".join(x for _, _, x in target)
    if (not durable and not has("approval_general", fold(text))) or has("not_memory", fold(text)):
        return  # "對，就這樣" after a one-off instruction approves the task, it sets no rule
    content = " ".join(clean(x) for _, _, x in target)
    hit = Cue("explicit", 5, 0.9, True) if durable else Cue("preference", 4, 0.7, False)
    made = scan.emit(content, [text, s], hit, idx, [])
    if made is not None:
        for t, j, _ in target:
            scan.made[(t, j)] = made


MAX_INCIDENT = 640  # characters: symptom, cause and fix of one incident
_INCIDENT_TURNS = 3  # user turns an incident's story may take (the lead's and two more)


def _incident_role(s: str, said: str) -> str:
    """What a sentence of an incident's story is: "fix" (what fixed it, or what to do when it
    comes back), "cause" (a statement of what happened), or "" (a question, a task, filler)."""
    f = folded(s)
    if has("fix_label", f):  # "fix was to …" is no task request
        return "fix"
    if substance(s) < 6 or has("question", f) or has("task_request", f) or has("todo", f):
        return ""
    if has("pitfall_fix", f):  # before the look-alikes: "if you ever see it again, check …"
        return "fix"
    ib = intro_and_body(s)
    if ib and has("pitfall", fold(ib[0])) and substance(ib[1]) >= 6:
        return "fix"  # "這個坑是這樣的：<what to do>", "lesson: <what to do>"
    hit = classify(s, said)
    if has("not_memory", f):
        return ""
    return "fix" if hit is not None and hit.kind in ("rule", "explicit", "correction") else "cause"


def incidents(turns: "list[_UserTurn]", first_turn: int) -> tuple[list[Found], set[tuple[int, int]]]:
    """Pitfalls told over several sentences or turns: a lead ("昨天 API 一直 502 的原因找到了",
    "found out why the export kept dying", a pitfall's own lead), then the user's cause and fix,
    in the same turn or the next ones (the assistant's questions in between). One memory joins
    symptom, cause and fix; the (turn, sentence) pairs it used are left out of the other scan."""
    user = [(idx, flat, said) for idx, _, flat, said, _ in turns]
    found: list[Found] = []
    used: set[tuple[int, int]] = set()
    u = 0
    while u < len(user):
        idx, sents, said = user[u]
        lead = next((k for k, x in enumerate(sents) if _incident_lead(x, said)), None) if idx >= first_turn else None
        # no lead, but a fix said as one ("fix was to …", "改法：…") or a fix after the user's
        # symptom: the cause and fix of this turn alone
        fixes = [x for x in sents if _fix(x, True)] if lead is None and idx >= first_turn and said else []
        after = bool(fixes) and u > 0 and any(has("pitfall_symptom", fold(x)) for x in user[u - 1][1])  # quoted too
        alone = any(_fix(x, after) for x in fixes)
        if lead is None and not alone:
            u += 1
            continue
        parts: list[tuple[int, int, str, str]] = []
        for v in range(u, u + 1 if alone else min(u + _INCIDENT_TURNS, len(user))):
            vdx, vs, vsaid = user[v]
            told = [(vdx, k, x, "lead" if (v, k) == (u, lead) else _incident_role(x, vsaid)) for k, x in enumerate(vs)]
            told = [t for t in told if t[3] and (v > u or alone or t[1] >= (lead or 0))]
            if v > u and "fix" in {r for *_, r in parts}:
                told = [t for t in told if t[3] == "fix"]  # after its fix, only "if it comes back, …"
            if v > u and not told:
                break  # "ok, thanks": the story ended
            parts += told
        parts = _story(parts, said)
        roles = [r for *_, r in parts]
        if "fix" not in roles or not ({"cause", "lead"} & set(roles[: roles.index("fix")])):
            u += 1
            continue
        content = ""
        for *_, x, role in parts:
            if role == "lead" and not _tells(x) or len(content) + len(x) > MAX_INCIDENT:
                continue  # a lead that names no symptom or cause only announces ("postmortem notes …")
            content = _joined(content, clean(_body(x)))
        last = parts[-1][0]
        found.append(Found(content, [x for *_, x, _ in parts], "pitfall", False, last))
        used |= {(t, k) for t, k, *_ in parts}
        u = next((w for w in range(u, len(user)) if user[w][0] > last), len(user))
    return found, used


def _story(parts: list[tuple[int, int, str, str]], said: str) -> list[tuple[int, int, str, str]]:
    """An incident's story ends at a sentence that opens a statement of its own ("另外 …", "by the
    way, …"; "also, the fix was …" goes on) or, after the fix, tells a second incident:
    that one is a memory of its own, with its own scope (docs/extraction.md, "Round 3 held-out unseen5")."""
    fixed = False
    for n, (_, _, x, role) in enumerate(parts):
        f = folded(x)
        if n and (without_opener(f) != f and not has("fix_label", f) or fixed and _incident_lead(x, said)):
            return parts[:n]
        fixed = fixed or role == "fix"
    return parts


def _fix(s: str, after_symptom: bool) -> bool:
    f = folded(s)
    return has("fix_label", f) or (after_symptom and has("pitfall_fix", f) and not has("question", f))


def _joined(a: str, b: str) -> str:
    """Two sentences as one text (no space after CJK punctuation)."""
    return f"{a}{b}" if not a or a[-1] in "。！？；：，" else f"{a} {b}"


def _tells(lead: str) -> bool:
    """A lead that says something itself (the symptom: "found out why the export kept dying"), not
    one that only announces or asks ("postmortem notes for yesterday, help me tidy them up")."""
    f = folded(lead)
    if has("task_request", f) or re.search(r"\bhelp me\b|帮我|帮忙|麻烦", f):
        return False
    return substance(cue("incident").sub(" ", f)) >= 6


def _incident_lead(s: str, said: str) -> bool:
    f = folded(s)
    if has("question", f) or has("not_memory", f):
        return False
    hit = classify(s, said)
    return has("incident", f) or (hit is not None and hit.kind == "pitfall")


def _snapshot_decision(turn: Turn, idx: int) -> Found | None:
    """A ``## Decisions`` item of a snapshot: a decision whatever its wording; a superseded one
    retires the note it produced."""
    text = " ".join(own_words(turn.text).split())
    if not text or has("todo", fold(text)):
        return None
    gone = turn.section == "superseded"
    content = clean(re.sub(r"^\[(?:superseded|已取代)\]\s*", "", text, flags=re.I))
    return Found(content, [text], "decision", False, idx, action="delete" if gone else "create")


def find_statements(turns: list[Turn], *, first_turn: int = 0, recorded: bool = False) -> list[Found]:
    """Every candidate statement of the user turns at index >= ``first_turn`` (earlier turns
    are context for continuations and corrections). ``recorded``: the turns are a session
    snapshot's, whose Decisions items are decisions whatever their wording."""
    plain: list[Turn] = []
    snapshot: list[Found] = []
    for idx, t in enumerate(turns):
        if recorded and t.section in ("decision", "superseded"):
            f = _snapshot_decision(t, idx) if idx >= first_turn else None
            snapshot += [f] if f is not None else []
            plain.append(Turn("assistant", ""))  # keeps the indices of the other turns
        else:
            plain.append(t if t.section != "superseded" else Turn("assistant", ""))
    user = _user_turns(plain)
    told, used = incidents(user, first_turn)
    found = _Scan(first_turn, used).run(user)
    return _follow_in_source(sorted(found + told + snapshot, key=lambda f: f.turn))


def _follow_in_source(found: list[Found]) -> list[Found]:
    """A supplement of a statement of the same source (the one it names, else the last) is added
    to it; a reversal replaces the one it names (docs/extraction.md, "A supplement in the same chat")."""
    out: list[Found] = []
    for f in found:
        words = named_words(" ".join(f.raw), f.kind) if f.kind in ("supplement", "reversal") else set()
        # "補充一下：…", "Adding to that: …", "再補一條剛才那個規則：…" name no rule: the user's last statement
        bare = not words or not has("reversal_names", fold(" ".join(f.raw)))
        last = out[-1] if out and f.kind == "supplement" and bare else None
        target = next((g for g in reversed(out) if g.kind != "reversal" and _named(words, g.content)), last)
        if target is not None and f.kind == "supplement":
            target.content, target.raw = (
                _joined(target.content, clean(supplement_parts(" ".join(f.raw))[1]) or f.content),
                target.raw + f.raw,
            )
            continue
        if target is not None:
            out.remove(target)
        out.append(f)
    return out


def _named(words: set[str], content: str) -> bool:
    """``words`` name something of ``content`` (a Latin word may be inflected: "error" / "errors")."""
    have = name_words(content)
    return bool(words & have) or any(len(w) >= 4 and t.startswith(w) for w in words for t in have)
