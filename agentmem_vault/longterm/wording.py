"""The wording of a memory's content, taken from what the user wrote (docs/extraction.md):
the lead that is not part of it is stripped ("記住：", "From now on,", "No, "), a correction is
stored rule first ("Don't use moment. Use date-fns." -> "Use date-fns (instead of moment)."), and
identifiers keep their exact spelling (a sentence starting with "pnpm" is not capitalised).
"""

from __future__ import annotations

import re

from agentmem_vault.longterm.cues import cue
from agentmem_vault.longterm.lexicon import tool_names
from agentmem_vault.model.textnorm import fold

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

# An identifier keeps its exact spelling: camelCase, digits, -_./\ or backticks, or a known tool name.
_IDENT_WORD = re.compile(r"[a-z][A-Z]|[\d_./\\`-]")


def is_identifier(word: str) -> bool:
    w = word.rstrip(",:;.!?)")
    return bool(_IDENT_WORD.search(w)) or w.lower() in tool_names()


def capitalise(s: str) -> str:
    """Sentence case for Latin prose only: never for CJK text and never when the first word is an
    identifier ("sessionStart", "npm-run-all", "os.path", "pnpm" keep their spelling)."""
    if not s or _CJK.search(s) or not (s[0].isalpha() and s[0].islower()):
        return s
    first = s.split(maxsplit=1)[0]
    if is_identifier(first):
        return s
    return s[0].upper() + s[1:]


def _strip_lead(s: str, name: str) -> str:
    """``s`` without the lead cue ``name`` matched at its start (on the folded text, which has
    the same length as ``s`` for the scripts the cues are written for)."""
    f = fold(s)
    if len(f) != len(s):
        return s
    m = cue(name).match(f)
    return s[m.end() :].strip() if m and m.end() else s


def clean(sentence: str) -> str:
    s = sentence.strip()
    prev = None
    while prev != s:
        prev = s
        s = _strip_lead(_strip_lead(s, "lead"), "settled_lead")  # "那就這樣定了：" is no part of it
    return capitalise(s)


# -- corrections: the rule is what comes after the marker --------------------------------------------

# "No, don't use moment. Use date-fns." / "not `print`; use structlog" / "it's not A, it's B"
_EN_NEG_FIRST = re.compile(
    r"^(?:(?:please\s+|we\s+)?(?:don'?t|do not|never|stop)\s+(?:use|using|call|calling|write|writing|add|adding|import|importing|put|putting)\s+|"
    r"(?:it'?s\s+|that'?s\s+)?not\s+)"
    r"(?P<old>.+?)\s*(?:[,;:—–]+|\s-\s|\.(?=\s))\s*(?:but\s+|instead[,:]?\s+|rather[,:]?\s+)?"
    r"(?P<rule>(?:use|using|prefer|switch to|go with|stick with|call|import|write|run|always|it'?s|"
    r"we (?:use|prefer|always|standardi[sz]e on|(?:'re|are) on|go with|stick with))\b.+)$",
    re.I | re.S,
)
# "不要用 requests，應該用 httpx" / "不是 moment，是 date-fns" / "别用 A；改用 B"
_ZH_NEG_FIRST = re.compile(
    r"^(?:這裡|这里|這邊|这边)?(?:不是|不要再?|別再?|别再?|不能|不可以|不應該|不应该|不用)\s*(?P<old>[^，,；;。]+?)\s*[，,；;。]\s*"
    r"(?P<rule>(?:而是|是|應該|应该|要|請|请|改用|改成|換成|换成|一律|統一|统一|都|得|必須|必须|用|使用)\s*\S.*)$",
    re.S,
)
_CLAUSE_END_EN = re.compile(r"[;:!?]|\.(?=\s|$)|\s[—–]\s")
_CLAUSE_END_ZH = re.compile(r"[，,；;。！!？?]|\.(?=\s|$)")


def _insert_after_first_clause(rule: str, note: str, ends: re.Pattern[str]) -> str:
    m = ends.search(rule)
    if m is None:
        return rule.rstrip() + note
    return rule[: m.start()].rstrip() + note + rule[m.start() :]


def restructure_correction(content: str) -> str:
    """Put the corrected rule first and say what it replaces.

    "Don't use moment. Use date-fns." -> "Use date-fns (instead of moment)."; "不是用 npm，是用 pnpm。"
    -> "用 pnpm（而不是用 npm）。". Rule-first sentences ("use X instead of Y") come back unchanged."""
    m = _ZH_NEG_FIRST.match(content)
    if m:
        old = m["old"].strip().rstrip("了").strip()
        rule = re.sub(r"^(?:而是|是)\s*", "", m["rule"]).strip()
        if not old or not rule or old in rule:
            return content
        sp = " " if old[0].isascii() else ""
        return _insert_after_first_clause(rule, f"（而不是{sp}{old}）", _CLAUSE_END_ZH)
    m = _EN_NEG_FIRST.match(content)
    if m:
        old = m["old"].strip().rstrip(".,;:")
        rule = m["rule"].strip()
        if not old or not rule or old.lower() in rule.lower():
            return content
        return capitalise(_insert_after_first_clause(rule, f" (instead of {old})", _CLAUSE_END_EN))
    return content
