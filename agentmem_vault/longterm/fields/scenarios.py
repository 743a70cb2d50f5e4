"""Usage scenarios: when a future chat should recall the note (seed §9.5 via docs/notes.md, Usage
scenarios). Each names the note's own subject: the condition the rule states ("写组件的时候",
"before committing", "on Windows"), else the activity of the note's category applied to its
first keywords ("修改 webhook 相關程式時", "choosing between httpx and requests"). A note with no
subject to name gets none: a scenario that fits every note is worse than nothing."""

from __future__ import annotations

import re
from functools import lru_cache

from agentmem_vault.longterm.fields.checks import is_template
from agentmem_vault.longterm.fields.data import CJK, _lines, is_generic
from agentmem_vault.model.textnorm import to_simplified

MAX_SCENARIOS = 3
# the rule's own condition, as the user said it
_WHEN_ZH = re.compile(
    r"(?:^|[，,。；;：:\s])(?P<s>(?:在|写|寫|做|改|修改|处理|處理|部署|提交|建立|新增|设计|設計)?[^，,。；;：:\s]{1,18}?(?:时|時|的时候|的時候|之前|以前))"
)
_WHEN_EN = re.compile(
    r"\b(?P<s>(?:when|whenever|before|while|after)\s+[^,.;:!?()]{3,60}?|on (?:windows|macos|linux|ci)\b[^,.;:!?()]{0,30}?)(?=[,.;:!?()]|$)",
    re.I,
)
_LEAD = re.compile(r"^(?:以后|以後|之后|之後|今后|今後|下次|每次|都|也|请|請|要)+\s*")
_ALTERNATIVES = re.compile(r"\b(?:instead of|rather than|not|over)\b|而不是|不要用|不用|别用|別用|改用|取代", re.I)


@lru_cache(maxsize=1)
def _activities() -> dict[str, list[str]]:
    """category -> (English, Traditional, Simplified) activity, ``{}`` for the note's subject."""
    return {(parts := [p.strip() for p in ln.split("|")])[0]: parts[1:] for ln in _lines("scenario_activities.txt")}


def scenarios_for(content: str, category: str, keywords: list[str]) -> list[str]:
    """Up to three scenarios naming the note's subject, or none."""
    out: list[str] = []
    note_text = " ".join([content, " ".join(keywords)])

    def add(s: str) -> None:
        s = _LEAD.sub("", " ".join(s.split()).strip(" ,，。;；:："))
        if 4 <= len(s) <= 80 and s not in out and not is_template(s, note_text) and len(out) < MAX_SCENARIOS:
            out.append(s)

    for m in _WHEN_ZH.finditer(content):
        add(m.group("s"))
    for m in _WHEN_EN.finditer(content):
        add(m.group("s"))
    subject = [k for k in keywords if not is_generic(k)]
    # one script per subject: the Simplified twin of a Traditional keyword names the same thing
    subject = [k for i, k in enumerate(subject) if to_simplified(k) not in subject[:i]]
    script = 0 if not CJK.search(content) else 1 if to_simplified(content) != content else 2  # en, zh-TW, zh-CN
    activity = _activities()
    if category in activity and subject:
        if len(subject) > 1 and _ALTERNATIVES.search(content) and category == "project_tech_stack":
            add(activity["choosing between"][script].format(f"{subject[0]} / {subject[1]}"))
        add(activity[category][script].format(subject[0]))
    return out
