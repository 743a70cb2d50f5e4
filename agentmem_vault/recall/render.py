"""Pure Markdown rendering of recall results within a character budget.

Kept free of the index, tokenizer and config imports: the sessionStart hook renders with these too.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)

if TYPE_CHECKING:
    from typing import Protocol

    from agentmem_vault.recall.rank import Hit

    class RuleNote(Protocol):
        """What a rule line needs: a ranked Hit, or the hook's light record from the index."""

        id: str
        title: str
        content: str


# At most this many rules (notes of RULE_IMPORTANCE, recall/location.py) are always injected into
# one chat (docs/notes.md, Fields: importance); the rest are recalled when a task makes them relevant.
RULES_BUDGET = 10
RULES_SHARE = 0.35
SESSIONS_SHARE = 0.15
FULL_COUNT = 3
MAX_FULL_CONTENT = 700
MAX_RULE_CONTENT = 280
ELLIPSIS = "…"


class SessionHit:
    """A board row shown by recall (plain class: the hook renders these and does not import
    ``dataclasses``; docs/performance.md)."""

    def __init__(
        self,
        session_id: str,
        topic: str,
        summary: str,
        status: str,
        updated_at: str,
        relevance: float,
        recent_only: bool = False,
    ) -> None:
        self.session_id, self.topic, self.summary, self.status = session_id, topic, summary, status
        self.updated_at, self.relevance = updated_at, relevance
        self.recent_only = recent_only  # listed as a recent active session, not for matching the task

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    return text if len(text) <= n else text[: max(0, n - 1)].rstrip() + ELLIPSIS


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _date(value: str) -> str:
    return value[:10] if value else "undated"


def render_rule(h: RuleNote, max_content: int = MAX_RULE_CONTENT) -> str:
    ident = f" `{h.id}`" if h.id else ""
    return f"- **{_one_line(h.title)}**{ident}: {_clip(_one_line(h.content), max_content)}\n"


def render_rule_title(h: RuleNote) -> str:
    ident = f" `{h.id}`" if h.id else ""
    return f"- **{_one_line(h.title)}**{ident}\n"


def render_full(h: Hit, max_content: int = MAX_FULL_CONTENT) -> str:
    lines = [f"### {_one_line(h.title)}\n", f"{_clip(h.content, max_content)}\n"]
    if h.usage_scenario:
        lines.append(f"- Applies when: {'; '.join(_one_line(u) for u in h.usage_scenario)}\n")
    meta = [f"{h.category or 'memory'}", f"updated {_date(h.updated)}"]
    if h.sources:
        # a Session ID is a link; a transcript reference ("cursor:<id>") can never resolve as one
        meta.append("source " + ", ".join(s if ":" in s or "/" in s else f"[[{s}]]" for s in h.sources[:3]))
    if h.id:
        meta.append(f"`{h.id}`")
    lines.append(f"- {' · '.join(meta)}\n")
    return "".join(lines) + "\n"


def render_brief(h: Hit) -> str:
    cat = f"[{h.category}] " if h.category else ""
    ident = f" `{h.id}`" if h.id else ""
    return f"- {cat}{_one_line(h.title)} _({_date(h.updated)})_{ident}\n"


def render_session(s: SessionHit) -> str:
    topic = _one_line(s.topic) or "(no topic)"
    summ = _clip(_one_line(s.summary), 140)
    return f"- `{s.session_id}` — {topic} ({s.status}, updated {s.updated_at or '?'}): {summ}\n"


def _fit(lines: list[str], header: str, cap: int) -> tuple[str, int]:
    """Header + as many whole lines as fit in ``cap`` characters; (text, lines used)."""
    if not lines or len(header) + len(lines[0]) > cap:
        return "", 0
    out = header
    n = 0
    for ln in lines:
        if len(out) + len(ln) > cap:
            break
        out += ln
        n += 1
    return out, n


def render_context(
    rules: list[Hit], memories: list[Hit], sessions: list[SessionHit], *, budget: int, full_count: int = FULL_COUNT
) -> tuple[str, list[Hit], list[Hit], list[Hit], list[SessionHit]]:
    """The Markdown and what made it in: (markdown, rules, full, brief, sessions). ``len(md) <= budget``."""
    budget = max(0, int(budget))
    parts: list[str] = []
    used = 0

    # 1. rules, within their own share; a rule too long for what is left is clipped, not dropped
    rules_cap = int(budget * RULES_SHARE)
    used_rules: list[Hit] = []
    if rules:
        text = "## Rules that always apply\n"
        for h in rules:
            line = render_rule(h)
            room = rules_cap - len(text)
            if len(line) > room:
                short = render_rule(h, max_content=max(0, MAX_RULE_CONTENT - (len(line) - room)))
                if len(short) > room or len(short) - len(render_rule(h, 0)) < 40:
                    # out of room for text: the rule is still named, so the agent can look it up
                    short = render_rule_title(h)
                    if len(short) > room:
                        break
                line = short
            text += line
            used_rules.append(h)
        if used_rules:
            text += "\n" if len(text) < rules_cap else ""  # the blank line after them, when it fits
            parts.append(text)
            used += len(text)

    sess_lines = [render_session(s) for s in sessions]
    sess_header = (
        "## Recent active sessions\n" if sessions and sessions[0].recent_only else "## Sessions you may continue\n"
    )
    sess_reserve = min(int(budget * SESSIONS_SHARE), len(sess_header) + sum(len(x) for x in sess_lines))

    # 2./3. memories: the strongest in full, then one line each
    mem_cap = budget - used - sess_reserve
    full: list[Hit] = []
    brief: list[Hit] = []
    mem_text = ""
    if memories:
        header = "## Relevant memories\n"
        for h in memories[:full_count]:
            block = render_full(h)
            start = header if not mem_text else ""
            room = mem_cap - len(mem_text) - len(start)
            if len(block) > room:
                # clip the content rather than lose the strongest memory
                over = len(block) - room
                block = render_full(h, max_content=MAX_FULL_CONTENT - over) if MAX_FULL_CONTENT - over >= 120 else ""
                if not block or len(block) > room:
                    break
            mem_text += start + block
            full.append(h)
        rest = [render_brief(h) for h in memories[len(full) :]]
        brief_header = "## Other memories (ask for details if needed)\n"
        btext, n = _fit(rest, brief_header, mem_cap - len(mem_text))
        if n:
            mem_text += btext + ("\n" if len(mem_text) + len(btext) < mem_cap else "")
            brief = memories[len(full) : len(full) + n]
        parts.append(mem_text)
        used += len(mem_text)

    # 4. sessions: whatever is left (at least their reserve)
    stext, n = _fit(sess_lines, sess_header, budget - used)  # ("", 0) when not even one fits
    parts.append(stext)

    md = "".join(parts).rstrip("\n")
    if not md:
        empty = "_No long-term memories or sessions match this task._"
        md = empty if len(empty) <= budget else ""
    else:
        md = (md + "\n")[:budget]
    return md, used_rules, full, brief, sessions[:n]
