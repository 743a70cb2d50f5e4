"""What kind of statement a piece of what the user wrote is (docs/extraction.md, "Offline
extraction"): an explicit request, a rule, a preference or dislike, a correction of the
assistant, a decision, a pitfall, an environment fact, a convention stated as a plan, a reversal
or a supplement of an earlier rule (``longterm/statement.py``) — or nothing.

Kinds are recognised by the form of the statement (a modal, an imperative with a general word,
"X, not Y", a symptom with its cause, a choice between alternatives, a request to keep …), with
the words of each form in cue files (``templates/cues/``), and the words that set a statement's
reach ("this project", "every project", "this file", "for now") are kept with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agentmem_vault.longterm.clauses import QUOTED
from agentmem_vault.longterm.cues import cue, has
from agentmem_vault.longterm.filters import specificity_score
from agentmem_vault.longterm.lexicon import generic_names
from agentmem_vault.model.textnorm import fold, tokenize

_ALSO = re.compile(r"(?:and )?also\b")

# kind -> (assessment-stage signal strength, importance the offline extractor proposes)
WEIGHTS: dict[str, tuple[int, float]] = {
    "explicit": (5, 0.9),
    "correction": (4, 0.8),
    "decision": (4, 0.8),
    "convention": (4, 0.8),
    "rule": (4, 0.8),
    "reversal": (4, 0.8),
    "supplement": (4, 0.8),
    "pitfall": (4, 0.75),
    "environment": (4, 0.75),
    "preference": (4, 0.7),
}


@dataclass(frozen=True)
class Cue:
    kind: str
    score: int
    importance: float
    asked: bool = False  # the user asked for it to be kept ("remember", "from now on")


def _cue(kind: str, asked: bool = False) -> Cue:
    score, imp = WEIGHTS[kind]
    return Cue(kind, 5 if asked else score, max(imp, 0.9) if asked else imp, asked)


@lru_cache(maxsize=8192)
def folded(sentence: str) -> str:
    """The sentence as the cues read it: quotes blanked, folded."""
    return fold(QUOTED.sub(" ", sentence))


@lru_cache(maxsize=8192)  # as folded: classify and the incident scan ask for it per sentence
def without_opener(f: str) -> str:
    """Folded text without the join word that opens it ("Also, …", "另外…", "還有…"): it only
    links the sentence to the one before."""
    m = cue("join").match(f) or _ALSO.match(f)
    return f[m.end() :].lstrip(" ,，:：;；") if m else f


def _not_a_but_b(f: str, context: str) -> bool:
    m = cue("not_a_but_b").match(f)
    return bool(
        cue("not_a_but_b_verb").match(f) or (m and len(m["old"].strip()) >= 2 and m["old"].strip() in fold(context))
    )


def _form_kind(f: str, context: str) -> str | None:
    """The kind by the statement's form, strongest first (a decision or a pitfall told as a
    rule is still a decision or a pitfall)."""
    if has("reversal", f) and has("reversal_names", f):
        return "reversal"
    if (has("supplement", f) or has("supplement_add", f)) and has("reversal_names", f) or cue("supplement").match(f):
        return "supplement"  # naming a rule, or opening the sentence ("補充一下：…", "Adding to that, …")
    if has("pitfall", f) or (has("pitfall_cause", f) and has("pitfall_symptom", f)):
        return "pitfall"
    if has("decision", f) or has("decision_form", f):
        return "decision"
    if has("convention", f):
        return "convention"
    if has("correction", f) or (context and (has("correction_any", f) or _not_a_but_b(f, context))):
        return "correction"
    if has("preference", f):
        return "preference"
    if has("env_lead", f) or has("environment", f) or _setup_fact(f):
        return "environment"
    # an imperative, also after an intro that sets its reach ("a general thing, any project: put …")
    imperative = any(has("imperative", x.lstrip()) for x in (f, f.partition(":")[2], f.partition(",")[2]))
    if has("rule", f) or has("never_always", f) or (imperative and (has("general", f) or has("scope_all", f))):
        return "rule"
    if has("polite", f) and has("general", f) or has("quantified", f) and not has("pitfall_symptom", f):
        return "rule"  # ... or a plain statement of every thing of a kind ("nobody calls time.Now()")
    if has("rule_weak", f) and (has("general", f) or has("scope_project", f) or context or has("consequence", f)):
        return "rule"
    if has("correction_any", f):
        return "rule"  # "use X instead of Y" said without anything to correct
    return None


def _setup_fact(f: str) -> bool:
    """The user's setup as the subject, a state verb and a named thing ("our staging database is
    Postgres 14"); not a passing state ("today", "CI is failing again")."""
    quiet = not has("scope_temporary", f) and not has("pitfall_symptom", f)
    head, colon, body = f.partition(":")
    subject = has("env_subject", f) or bool(colon and len(head) <= 24 and has("env_subject", body.strip()))
    return subject and quiet and specificity_score(f) > 0


def classify(sentence: str, context: str = "") -> Cue | None:
    """Which kind of statement (if any) makes this user sentence worth remembering.

    ``context`` is what the assistant said just before: a correction corrects it, and
    "不是 A，是 B" is a correction only when A is in it."""
    f = without_opener(folded(sentence))
    if context and cue("not_a_but_b").match(f):
        return _classify(f, context)  # depends on what the assistant said: not cached
    return _classify_cached(f, bool(context))


@lru_cache(maxsize=8192)
def _classify_cached(f: str, after_assistant: bool) -> Cue | None:
    # the same sentence recurs across chats ("好，繼續", "Thanks"): classified once per process
    return _classify(f, "…" if after_assistant else "")


def _classify(f: str, context: str) -> Cue | None:
    if not f.strip() or has("not_memory", f) or has("reported", f) or has("pasted_inline", f):
        return None
    asked = has("explicit", f) or has("never_always", f)
    question = has("question", f)
    if question and has("rhetorical", f) and not has("one_off_scope", f):
        # "can you not add those summaries every time?" is "don't add them again": a dislike the
        # user wants to hold from now on, like "别再 …"
        return _cue("preference", asked=True)
    if question and not (asked and (has("request_question", f) or has("task_request", f))):
        return None
    kind = _form_kind(f, context)
    if kind is None and not asked:
        return None
    if kind == "correction" and has("correction", f):
        rest = cue("correction").sub("", f, count=1)
        named = re.match(r"[\s,]*not\s+\S*[\w`.]\S*", rest) is not None  # "No, not pytest.mark.skip."
        if not _form_kind(rest, "") and not has("directive", rest) and not _not_a_but_b(f, context) and not named:
            return None  # "No, it was my network." / "不是這樣，是我的網路斷了"
    if kind not in ("reversal", "supplement") and not asked:
        if has("one_off_scope", f) or ((has("task_request", f) or has("task_make", f)) and not has("general", f)):
            return None
    if kind in ("environment", "pitfall") and not asked and has("scope_temporary", f):
        return None  # "FYI I'll be away tomorrow": a passing state
    if kind == "environment" and not asked and has("pitfall_symptom", f) and not has("pitfall_cause", f):
        if not has("modal", f):  # "…一定要裝 cu121，裝錯不會報錯": the setup and its rule
            return None  # "the dev server keeps crashing": a problem to look at, not the setup
    if kind == "decision" and not asked and (_announces_only(f) or has("undecided", f)):
        return None  # "推播那件事後來跟 PM 討論完了": the decision itself comes later, if at all
    if asked and kind in (None, "rule"):
        kind = "explicit"  # a rule the user asked to hold from now on is their explicit request
    return _cue(kind or "explicit", asked)


def _announces_only(f: str) -> bool:
    """One clause naming a topic and ending with the word that it was settled ("选型的事定下来了")."""
    last = max(cue("decision").finditer(f), key=lambda m: m.end(), default=None)
    if last is None or f[last.end() :].strip(" 了啦的。.!！~"):
        return False
    return not re.search(r"[,，;；:：]", f[: last.start()]) and has("announce", f)


# narrowest first: "in this repo, … everywhere" is this repo's rule
_REACH = (
    ("scope_temporary", "temporary"),
    ("scope_file", "file"),
    ("scope_project", "project"),
    ("scope_all", "all_projects"),
)


def scope_words(text: str) -> tuple[tuple[str, ...], str]:
    """The words of ``text`` that set its reach, as written, and their reading
    (project / all_projects / file / temporary, or "" when the words say nothing)."""
    f = fold(text)
    words: list[str] = []
    reach = ""
    for name, what in _REACH:
        for m in cue(name).finditer(f):
            w = text[m.start() : m.end()] if len(text) == len(f) else m.group(0)
            if w.strip() and w.strip() not in words:
                words.append(w.strip())
                reach = reach or what
    return tuple(words), reach


_CLAUSE = re.compile(r"[，,；;。！？!?:：]+|\.(?=\s|$)|\s[—–-]\s")


def retraction_parts(text: str) -> tuple[str, str, str]:
    """(what is taken back, what replaces it, the clauses that only replace) in a statement that
    reverses an earlier rule: "之前那條「完成前要跑 yarn lint」作廢，以後改成跑 npm run verify" ->
    ("之前那條「完成前要跑 yarn lint」作廢", "以後改成跑 npm run verify", "以後改成跑 npm run verify").
    The first part names the earlier rule; the second is "" when the statement only takes it back
    ("we switched to Y" is in both: it retracts and names the new rule at once)."""
    back: list[str] = []
    rest: list[str] = []
    only: list[str] = []
    for clause in (c.strip() for c in _CLAUSE.split(text)):
        if not clause:
            continue
        f = fold(clause)
        takes_back = has("reversal", f) or (has("reversal_names", f) and not has("supplement", f))
        if not back and not takes_back and not re.search(r"[a-z0-9]", f) and len(f) <= 5:
            continue  # "等等，我想了一下，…": what opens the reversal says nothing of either rule
        if takes_back and not (rest and not back):
            # "we switched to Y" retracts and replaces at once: its words name the new rule too
            back.append(clause)
            if has("replacement", f):
                rest.append(clause)
        else:
            rest.append(clause)
            only.append(clause)
    sep = "，" if _has_cjk(text) else ", "
    return sep.join(back), sep.join(rest), sep.join(only)


def name_words(text: str) -> set[str]:
    return {t for t in tokenize(text) if len(t) >= 2}


def supplement_parts(text: str) -> tuple[str, str]:
    """(the head that names the rule, what is added) of "補充 X 那條：…" / "adding to the X rule: …"."""
    colon = re.search(r"[:：]", text) or re.search(r"[，,；;]", text)
    return (text[: colon.start()], text[colon.end() :].strip()) if colon else (text, "")


def named_words(text: str, kind: str) -> set[str]:
    """The words with which a supplement or a reversal names the earlier rule ("補充超時那條" ->
    超時; "之前那條「完成前要跑 yarn lint」作廢" -> yarn, lint, …)."""
    if kind == "supplement":  # no bigram across the cue's edge ("补充一下" -> "充一")
        head = cue("supplement_add").sub(" ", cue("supplement").sub(" ", fold(supplement_parts(text)[0])))
        return name_words(head) - generic_names()
    return name_words(retraction_parts(text)[0]) - generic_names()


def reason_and_alternatives(text: str) -> tuple[str, tuple[str, ...]]:
    """The clause that gives a statement's reason or condition ("因為多一個依賴不值得", "since it
    has to run offline"), and the clauses that name alternatives not chosen ("不用 Redis 鎖")."""
    reason = ""
    alternatives: list[str] = []
    for clause in (c.strip() for c in re.split(r"[，,；;。.!?！？]+\s*", text)):
        f = fold(clause)
        if not clause:
            continue
        if not reason and has("reason_lead", f) and not has("alternative", f):
            reason = clause
        elif has("alternative", f):
            alternatives.append(clause)
    return reason, tuple(alternatives)


def _has_cjk(text: str) -> bool:
    return re.search(r"[\u3400-\u9fff]", text) is not None
