"""The Memory Object (docs/extraction.md) and the JSON schema the model must fill.

The model's output is data, never trusted: ``validate_memory`` checks every field and returns a
reason instead of raising, so the pipeline can report what it skipped.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from agentmem_vault.longterm.statement import Statement

CATEGORIES: tuple[str, ...] = (
    "user_communication",
    "user_behavior",
    "project_introduction",
    "project_tech_stack",
    "project_environment_configuration",
    "project_build_configuration",
    "development_code_specification",
    "development_practice_specification",
    "development_test_specification",
    "common_pitfalls_experience",
    "important_decision_experience",
)
ACTIONS: tuple[str, ...] = ("create", "update", "ignore", "delete")

MAX_TITLE = 120
MAX_CONTENT = 4000
MAX_LIST = 12
MAX_ITEM = 120


@dataclass
class MemoryObject:
    action: str
    title: str
    content: str
    category: str
    keywords: list[str] = field(default_factory=list)
    usage_scenario: list[str] = field(default_factory=list)
    project: str = ""
    module: str = ""
    importance: float = 0.5
    reason: str = ""
    score: int | None = None  # assessment 1-5, filled by the assessor (or the offline rules)
    sources: list[str] = field(default_factory=list)  # "[[session-id]]" or transcript refs
    # Filled by the pipeline, never by the model (not in the tool schema):
    assessment_reason: str = ""  # the assessor's explanation for ``score``
    signal: str = ""  # offline: what the user said that made it a candidate (explicit, correction, ...)
    evidence: str = ""  # offline: the user's own words the candidate was taken from
    source_time: str = ""  # when the source said it (YYYY-MM-DDTHH:MM), for curation order
    scope: str = ""  # "project" / "global", set from the source's workspace (longterm/scope.py)
    # what the extractor knows of the statement it came from (kind, scope words, time, reason):
    # filled by detection, read by the field rules (longterm/statement.py)
    statement: Statement | None = None

    def search_text(self) -> str:
        """What the evaluation matches against: title + content + keywords."""
        return "\n".join([self.title, self.content, " ".join(self.keywords)])


_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "title": {"type": "string", "minLength": 2, "maxLength": MAX_TITLE},
        "content": {"type": "string", "minLength": 8, "maxLength": MAX_CONTENT},
        "category": {"type": "string", "enum": list(CATEGORIES)},
        "keywords": {"type": "array", "items": {"type": "string", "maxLength": MAX_ITEM}, "maxItems": MAX_LIST},
        "usage_scenario": {"type": "array", "items": {"type": "string", "maxLength": MAX_ITEM}, "maxItems": MAX_LIST},
        "project": {"type": "string", "maxLength": MAX_ITEM},
        "module": {"type": "string", "maxLength": MAX_ITEM},
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string", "maxLength": 1000},
    },
    "required": ["action", "title", "content", "category", "keywords", "usage_scenario", "importance", "reason"],
    "additionalProperties": False,
}

# The forced tool's input: a list of memories (possibly empty = nothing worth remembering).
EXTRACT_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # first, as the extraction prompt asks: why each memory violates none of the negative criteria
        "explanation": {"type": "string", "maxLength": 4000},
        "memories": {"type": "array", "items": _ITEM_SCHEMA, "maxItems": 20},
    },
    "required": ["memories"],
    "additionalProperties": False,
}

ASSESS_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 2000},
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["reason", "score"],
    "additionalProperties": False,
}


def _str_list(value: Any, name: str) -> tuple[list[str] | None, str | None]:
    if value is None:
        return [], None
    if not isinstance(value, list):
        return None, f"{name} is not a list"
    out: list[str] = []
    for item in value[:MAX_LIST]:
        if not isinstance(item, str):
            return None, f"{name} holds a non-string item"
        item = " ".join(item.split())[:MAX_ITEM]
        if item and item not in out:
            out.append(item)
    return out, None


def validate_memory(raw: Any) -> tuple[MemoryObject | None, str | None]:
    """A checked MemoryObject, or (None, why it was rejected)."""
    if not isinstance(raw, dict):
        return None, "not a JSON object"
    action = raw.get("action", "create")
    if action not in ACTIONS:
        return None, f"unknown action {action!r}"
    title = raw.get("title")
    content = raw.get("content")
    if not isinstance(title, str) or not title.strip():
        return None, "missing title"
    if not isinstance(content, str) or not content.strip():
        return None, "missing content"
    title = " ".join(title.split())
    content = content.strip()
    if len(title) > MAX_TITLE:
        return None, f"title longer than {MAX_TITLE} characters"
    if len(content) > MAX_CONTENT:
        return None, f"content longer than {MAX_CONTENT} characters"
    category = raw.get("category")
    if category not in CATEGORIES:
        return None, f"unknown category {category!r}"
    keywords, err = _str_list(raw.get("keywords"), "keywords")
    if err:
        return None, err
    usage, err = _str_list(raw.get("usage_scenario"), "usage_scenario")
    if err:
        return None, err
    importance = raw.get("importance", 0.5)
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not math.isfinite(importance):
        return None, "importance is not a number"
    if not 0 <= importance <= 1:
        return None, "importance outside 0..1"
    strs = {}
    for key in ("project", "module", "reason"):
        v = raw.get(key, "")
        if v is None:
            v = ""
        if not isinstance(v, str):
            return None, f"{key} is not a string"
        strs[key] = " ".join(v.split())[: (1000 if key == "reason" else MAX_ITEM)]
    return (
        MemoryObject(
            action=action,
            title=title,
            content=content,
            category=category,
            keywords=keywords or [],
            usage_scenario=usage or [],
            project=strs["project"],
            module=strs["module"],
            importance=round(float(importance), 2),
            reason=strs["reason"],
        ),
        None,
    )


def parse_score(value: Any) -> int | None:
    """A 1-5 score as models write it: 4, 4.0, "4", "４", "4分", "4/5", "**4**"; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value) if value == int(value) and 1 <= value <= 5 else None
    if not isinstance(value, str):
        return None
    text = unicodedata.normalize("NFKC", value).strip().strip("*_[]()【】 ")
    m = re.fullmatch(r"([1-5])(?:\.0)?\s*(?:分|points?|pts)?\s*(?:/\s*5)?", text, re.I)
    return int(m.group(1)) if m else None


def validate_assessment(raw: Any) -> tuple[int | None, str]:
    """(score, reason) or (None, why the assessment output was unusable)."""
    if not isinstance(raw, dict):
        return None, "assessment is not a JSON object"
    score = parse_score(raw.get("score", raw.get("评分", raw.get("評分"))))
    if score is None:
        return None, f"assessment score {raw.get('score')!r} is not an integer 1-5"
    reason = raw.get("reason", raw.get("explanation", ""))
    return score, reason if isinstance(reason, str) else ""
