"""Every field of a found memory at once (docs/notes.md, Fields): the pure functions of this
package applied to one ``MemoryObject``. The offline extractor's memories get all of them; a
model's memories keep the model's category and importance and get their title, keywords and usage
scenarios checked (a lead-in, a fragment keyword or a filler scenario is replaced)."""

from __future__ import annotations

import re
from functools import lru_cache

from agentmem_vault.longterm.cues import has
from agentmem_vault.longterm.fields.category import DEFAULT, category_for
from agentmem_vault.longterm.fields.data import pattern, section
from agentmem_vault.longterm.fields.checks import bad_keyword, is_template, title_problems
from agentmem_vault.longterm.fields.importance import asks_to_remember, importance_for
from agentmem_vault.longterm.fields.keywords import MAX_KEYWORDS, keywords_for
from agentmem_vault.longterm.fields.scenarios import scenarios_for
from agentmem_vault.longterm.fields.title import title_for
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.model.textnorm import fold

# a question starts where a sentence (or an earlier question) ends: without the anchor every
# position of a long unpunctuated turn starts a scan to its end (quadratic, docs/reliability.md's limits)
_ASKED = re.compile(r"(?:^|(?<=[。！？!?\n吗呢嗎]))[^。！？!?\n]*(?:[?？]|[吗呢嗎](?=\s*[，,。]|\s*$))")
_ASKS = re.compile(r"[?？]\s*$|[吗呢]\s*[。.]?\s*$")

_SENTENCE_END = re.compile(r"[。！？!?\n]|\.(?=\s)")


def _said_around(turns: list[Turn], evidence: str) -> tuple[str, str, str, str]:
    """(the user turn holding ``evidence``, up to it: what follows is its reason or the next item,
    never a correction of it; the assistant's turn before it; the sentence ending with ``evidence``;
    the user's next turn); "" for what is unknown (the sentence: ``evidence`` itself). Spacing
    aside: the extractor may join sentences of a turn with a space ("不對喔。 時間…")."""
    probe = "".join(evidence.split())[:40]  # found in the turn's non-space characters: no regex per memory
    for i, t in enumerate(turns):
        if t.role == "user" and probe and (k := "".join(t.text.split()).find(probe)) >= 0:
            at = [j for j, ch in enumerate(t.text) if not ch.isspace()][k]
            starts = [m.end() for m in _SENTENCE_END.finditer(t.text, 0, at)]
            before = next((p.text for p in reversed(turns[:i]) if p.role == "assistant"), "")
            after = next((n.text for n in turns[i + 1 :] if n.role == "user"), "")
            return t.text[:at] + evidence, before, t.text[starts[-1] if starts else 0 : at] + evidence, after
    return "", "", evidence, ""


@lru_cache(maxsize=4096)  # a pure function of the words: a filler answer precedes many rules
def corrects_assistant(evidence: str, assistant_said: str, *, choosing: bool = False) -> bool:
    """The user corrects what the assistant just did: after an assistant turn, a correction lead
    ("不對，…", "No, …"), and unless the user is ``choosing`` (a decision: "Checkout, not Elements"
    after the assistant laid out both, "這個定下來就別再搖擺了") a ban on doing it again ("不要再加 …",
    "stop putting them there") or a rejection of something the assistant's turn named ("don't use
    requests" after "I used requests")."""
    said = fold(evidence)
    if section("statement_words.txt", "told_back").match(said):
        return True  # "你刚才改完就说好了，结果…": the words say what the assistant did
    if not assistant_said or _ASKS.search(assistant_said.strip()):
        return False  # answering the assistant's question is not correcting it
    # after an opener too: "Ugh, no.", "其他都行。但錯誤那塊不行" (``correction_openers.txt``)
    lead = any(
        pattern("correction_leads.txt").match(s) for s in (said, pattern("correction_openers.txt").sub("", said, 1))
    )
    if lead or choosing or pattern("correction_repeats.txt").search(said):
        return lead or not choosing  # a choice is corrected by a lead only
    before = fold(assistant_said)
    named = (m["what"].rstrip(".").lower() for m in section("statement_words.txt", "negated").finditer(said))
    # a word of the assistant's turn ("edit" of "I edited", a path's folder), never a part of one:
    # "not in the db" names no "in" of "styling"
    end = r"(?:e?s|e?d|ing)?(?![\w-])"
    return any(
        len(w) >= 2 and re.search(rf"(?<![\w.-]){re.escape(w)}{end if w[-1].isalnum() else ''}", before) for w in named
    )


def _reason(kind: str, asked: bool, corrected: bool) -> str:
    if asked or corrected:
        return "the user explicitly asked for this to be kept" if asked else "the user corrected the assistant"
    stated = kind if kind in ("preference", "decision") else "rule"
    return "the user recorded a pitfall" if kind == "pitfall" else f"the user stated a {stated}"


_TURNED_OUT = {"common_pitfalls_experience": "pitfall", "important_decision_experience": "decision"}
_CLAIMS = re.compile(r"explicitly asked|corrected the assistant", re.I)


@lru_cache(maxsize=4096)
def _text_fields(content: str, category: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Title, keywords and usage scenarios: functions of the content (and category) alone, so a
    rule the user restates in many chats is segmented and titled once per process."""
    title = title_for(content)
    keywords = keywords_for(content, title)
    return title, tuple(keywords), tuple(scenarios_for(content, category, keywords))


def category_text(m: MemoryObject) -> str:
    """What the category is read from: the memory's own words (an item of an enumeration is filed
    by what it says, not by its siblings) and the lead-in that introduces it ("這是上個月定的：…")."""
    words = m.evidence or m.content
    lead = words[: words.find(m.content[:20])] if m.content else ""
    return lead + m.content if len(lead) <= 40 and lead.rstrip()[-1:] in ":：" else m.content


def derive_offline(m: MemoryObject, *, turns: list[Turn] | None = None, recorded: bool = False) -> MemoryObject:
    """Fill category, importance, title, keywords and usage scenarios of an offline memory, and
    make its reasons say what happened (no "asked to remember" without such a request)."""
    st = getattr(m, "statement", None)  # longterm/statement.py, once the extractor fills it
    kind = st.kind if st is not None else m.signal
    recorded = recorded or bool(st is not None and st.recorded)
    words = m.evidence or m.content
    turn = (turns or [])[st.order] if st is not None and 0 <= st.order < len(turns or []) else None
    snapshot_decision = recorded and getattr(turn, "section", "") in ("decision", "superseded")
    if snapshot_decision:
        kind = "decision"  # a snapshot's Decisions item is a decision, whatever its wording
    turn_text, before, sentence, after = _said_around(turns or [], words)
    # a dislike asked as a question ("Could you not rewrite my whole file every time?") is a
    # preference, neither a request from now on nor a correction ("Can you make sure … from now
    # on?" still asks for it)
    words, turn_text, sentence = (
        _ASKED.sub(lambda q: " " if section("statement_words.txt", "dislike").search(fold(q[0])) else q[0], t)
        for t in (words, turn_text, sentence)
    )
    # the turn's opening ("Ugh, tabs again. Spaces please") may carry the correction of its rule,
    # not of a further item joined after it ("…不要再用 any。還有 import 路徑請用 @/")
    joined = has("join", fold(sentence)[:12])
    m.category = "important_decision_experience" if snapshot_decision else category_for(category_text(m), kind)
    # what the statement turned out to be decides the band and what corrects: a rule about a
    # pitfall is experience; a choice between options the assistant laid out corrects nobody
    # (a "pitfall" filed as a rule is a rule); a user revising a rule of their own corrects nobody
    band_kind = _TURNED_OUT.get(m.category) or ("rule" if kind in _TURNED_OUT.values() else kind)
    choosing = band_kind == "decision"
    corrected = not (
        section("statement_words.txt", "own_revision").search(fold(turn_text or words))
        or section("statement_words.txt", "habit").search(fold(words))  # a preference, in any turn
    ) and (
        corrects_assistant(words, before, choosing=choosing)
        or bool(turn_text and not joined and corrects_assistant(turn_text, before, choosing=choosing))
    )
    # an item of "Remember that X, and also that Y" is asked for by the sentence that holds it
    said = sentence if asks_to_remember(sentence) else words
    # so is one the user's next turn asks for by pointing back ("对，这条帮我记住", "記一下這個坑：")
    said += " " + (back[0] if (back := section("statement_words.txt", "asked_after").match(fold(after))) else "")
    asked = asks_to_remember(said)
    m.importance = importance_for(band_kind, words, corrects_assistant=corrected, recorded=recorded, request=said)
    m.title, keywords, scenarios = _text_fields(m.content, m.category)
    m.keywords, m.usage_scenario = list(keywords), list(scenarios)
    m.reason = (
        "recorded as a decision in the session snapshot" if snapshot_decision else _reason(kind, asked, corrected)
    )
    if _CLAIMS.search(m.assessment_reason or "") and not (asked or corrected):
        m.assessment_reason = f"A specific rule the user stated ({_reason(kind, asked, corrected)[9:]})."
    return m


def check_model_fields(m: MemoryObject) -> MemoryObject:
    """A model's memory keeps its category and importance; a title with a lead-in, a relative time
    or a dangling colon is rewritten, fragment / generic keywords are dropped (and the rule-based
    ones fill the gap), and filler scenarios are dropped."""
    if title_problems(m.title):
        m.title = title_for(m.content) if title_problems(title_for(m.title)) else title_for(m.title)
    kept = [k for k in m.keywords if not bad_keyword(k, m.content, m.title)]
    seen = {fold(k) for k in kept}
    m.keywords = (kept + [k for k in keywords_for(m.content, m.title) if fold(k) not in seen])[:MAX_KEYWORDS]
    note_text = " ".join([m.title, m.content, " ".join(m.keywords)])
    m.usage_scenario = [s for s in m.usage_scenario if not is_template(s, note_text)] or scenarios_for(
        m.content, m.category, m.keywords
    )
    return m


def apply_fields(
    memories: list[MemoryObject], turns: list[Turn], *, offline: bool, recorded: bool = False
) -> list[MemoryObject]:
    """The field rules for a batch of one source (in place; returned for chaining)."""
    for i, m in enumerate(memories):
        if not offline:
            check_model_fields(m)
            continue
        derive_offline(m, turns=turns, recorded=recorded)
        # "integration tests need X, and they must never point at the shared database": an item
        # that points back with no cue of its own is about what its neighbour is about
        if i and m.category == DEFAULT and section("statement_words.txt", "points_back").match(fold(m.content)):
            m.category = memories[i - 1].category
    return memories
