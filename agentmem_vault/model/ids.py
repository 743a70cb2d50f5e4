"""Session IDs: ``YYYY-MM-DD-HHMM-<agent>`` with an optional ``-N`` collision suffix.

An ID becomes a path (``sessions/<id>.md``, ``archive/<id>/``), so it is validated strictly
everywhere: no ``..``, no separators, no upper case, bounded length.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Iterable

from agentmem_vault.errors import InvalidSessionId, UsageError

AGENT_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
SESSION_ID_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-(\d{2})(\d{2})-([a-z0-9][a-z0-9-]{0,79})$")
# Loose pattern to pick IDs out of free text (trigger phrases, Continues From lines).
SESSION_ID_IN_TEXT_RE = re.compile(r"\d{4}-\d{2}-\d{2}-\d{4}-[a-z0-9][a-z0-9-]*[a-z0-9]|\d{4}-\d{2}-\d{2}-\d{4}-[a-z0-9]")


def is_valid_session_id(value: str) -> bool:
    return bool(SESSION_ID_RE.match(value or "")) and not value.endswith("-")


def validate_session_id(value: str) -> str:
    """Return the ID unchanged or raise InvalidSessionId (exit 1) with a clear message."""
    if not isinstance(value, str) or not is_valid_session_id(value.strip()):
        raise InvalidSessionId(
            f"invalid Session ID {value!r}: expected YYYY-MM-DD-HHMM-<agent-name> "
            "(lower-case letters, digits and '-', no '/', '\\' or '..')"
        )
    return value.strip()


def validate_agent_name(value: str) -> str:
    if not AGENT_RE.match(value or ""):
        raise UsageError(
            f"invalid agent name {value!r}: use lower-case letters, digits and '-', starting with a letter or digit"
        )
    return value


def base_session_id(now: datetime, agent: str, machine: str = "") -> str:
    """``YYYY-MM-DD-HHMM-<agent>``; with a machine id (set only on vaults shared by several machines
    through git, docs/sync.md) ``YYYY-MM-DD-HHMM-<agent>-<machine>``, so two machines registering
    in the same minute never hand out the same ID."""
    base = f"{now:%Y-%m-%d-%H%M}-{validate_agent_name(agent)}"
    return f"{base}-{machine}" if machine else base


def next_free_id(base: str, taken: Iterable[str] | set[str]) -> str:
    """``base`` if free, else ``base-2``, ``base-3``… (never reuses an existing ID)."""
    taken_set = taken if isinstance(taken, set) else set(taken)
    if base not in taken_set:
        return base
    n = 2
    while f"{base}-{n}" in taken_set:
        n += 1
    return f"{base}-{n}"


def find_ids(text: str) -> list[str]:
    """Session IDs mentioned in free text, in order, without duplicates."""
    seen: list[str] = []
    for m in SESSION_ID_IN_TEXT_RE.finditer(text or ""):
        v = m.group(0)
        if is_valid_session_id(v) and v not in seen:
            seen.append(v)
    return seen
