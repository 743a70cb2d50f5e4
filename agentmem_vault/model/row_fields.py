"""The one rule for the free-text fields a person or an agent gives a row (``--topic``,
``--summary``, ``--keywords``; MCP ``memory_update`` and ``memory_register``): one line each, and
bounded (docs/reliability.md, "Limits"). Checked before anything is read or locked, the same for
``register --manual`` and ``update``; a board row is one line of ``memory/index.md``.
"""

from __future__ import annotations

import re

from agentmem_vault.errors import UsageError

# Characters per field: a topic is a title, a summary a sentence or two, keywords a short list.
FIELD_LIMITS = {"topic": 200, "summary": 1000, "keywords": 500}

# Every line break Python, Markdown or an editor knows (LF, CR, VT, FF, NEL, U+2028, U+2029).
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x85\u2028\u2029]")


def check_row_fields(**fields: str | None) -> None:
    """Refuse (UsageError, exit 2) a field with a line break or over its limit; None is absent."""
    for name, value in fields.items():
        if value is None:
            continue
        limit = FIELD_LIMITS[name]
        if len(value) > limit:
            raise UsageError(
                f"--{name} is {len(value):,} characters, over the {limit:,}-character limit of a board "
                f"{name}; shorten it (the details belong in the snapshot). Nothing was written",
                code="field_too_long",
            )
        m = _LINE_BREAK.search(value)
        if m:
            raise UsageError(
                f"--{name} holds a line break (U+{ord(m.group()):04X}); a board row is one line: give the "
                f"{name} on one line (the details belong in the snapshot). Nothing was written",
                code="field_not_one_line",
            )
