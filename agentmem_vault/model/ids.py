"""Session IDs: ``YYYY-MM-DD-HHMM-<agent>`` with an optional ``-N`` collision suffix.

An ID becomes a path (``sessions/<id>.md``, ``archive/<id>/``), so it is validated strictly
everywhere: no ``..``, no separators, no upper case, bounded length.
"""

from __future__ import annotations

from collections.abc import Container
from functools import lru_cache

from agentmem_vault.errors import InvalidSessionId, UsageError
from agentmem_vault.fastimport import LazyRegex, datetime  # the C type without datetime.py (docs/performance.md)

_AGENT_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_AGENT_CHARS = _AGENT_FIRST | {"-"}
# \Z, not $: "$" also matches before a final newline, and an ID becomes a path.
SESSION_ID_RE = LazyRegex(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})-([0-9]{2})([0-9]{2})-([a-z0-9][a-z0-9-]{0,79})\Z")
# Loose pattern to pick IDs out of free text (trigger phrases, Continues From lines).
SESSION_ID_IN_TEXT_RE = LazyRegex(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4}-[a-z0-9][a-z0-9-]*[a-z0-9]|[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4}-[a-z0-9]"
)


def is_valid_session_id(value: str) -> bool:
    m = SESSION_ID_RE.match(value or "")
    return bool(m) and not value.endswith("-") and _real_minute(value[:15])


@lru_cache(maxsize=4096)
def _real_minute(stamp: str) -> bool:
    """``YYYY-MM-DD-HHMM`` names a minute that exists (no month 13, 30 February or 24:60).
    Cached: a 10,000-row board holds few distinct minutes and this runs once per row."""
    try:
        datetime(int(stamp[:4]), int(stamp[5:7]), int(stamp[8:10]), int(stamp[11:13]), int(stamp[13:15]))
    except ValueError:
        return False
    return True


def validate_session_id(value: str) -> str:
    """Return the ID unchanged or raise InvalidSessionId (exit 1) with a clear message."""
    if not isinstance(value, str) or not is_valid_session_id(value.strip()):
        raise InvalidSessionId(
            f"invalid Session ID {value!r}: expected YYYY-MM-DD-HHMM-<agent-name> "
            "(lower-case letters, digits and '-', no '/', '\\' or '..')"
        )
    return value.strip()


def validate_agent_name(value: str) -> str:
    # The rule ^[a-z0-9][a-z0-9-]{0,63}\Z as set operations: every sessionStart hook checks its
    # agent name, and compiling the pattern would cost it more than the check (docs/performance.md).
    v = value or ""
    if not (0 < len(v) <= 64 and v[0] in _AGENT_FIRST and _AGENT_CHARS.issuperset(v)):
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


def link(target: str) -> str:
    """``[[target]]``: an Obsidian link, the way sessions are named in Properties and note sources
    (it resolves before and after archive, docs/obsidian.md)."""
    return f"[[{target}]]"


def next_free_id(base: str, taken: Container[str]) -> str:
    """``base`` if free, else ``base-2``, ``base-3``… (never reuses an existing ID)."""
    n = 1
    while (cand := base if n == 1 else f"{base}-{n}") in taken:
        n += 1
    return cand


def find_ids(text: str) -> list[str]:
    """Session IDs mentioned in free text, in order, without duplicates."""
    found = (m.group(0) for m in SESSION_ID_IN_TEXT_RE.finditer(text or ""))
    return list(dict.fromkeys(v for v in found if is_valid_session_id(v)))


def ids_with_prefix(data: bytes, base: str) -> set[str]:
    """IDs on the lines of an issued-IDs ledger (one ID per line) that are ``base`` or ``base-N``.

    A byte search for the prefix, not a parse of every line: the sessionStart hook runs this on
    a ledger that only grows (docs/reliability.md)."""
    out: set[str] = set()
    key = base.encode("utf-8")
    i = data.find(key)
    while i != -1:
        if i == 0 or data[i - 1] in b"\r\n":
            end = data.find(b"\n", i)
            line = data[i:] if end == -1 else data[i:end]
            sid = line.decode("utf-8", "replace").strip()
            if sid == base or (sid.startswith(base + "-") and sid[len(base) + 1 :].isdigit()):
                out.add(sid)
        i = data.find(key, i + 1)
    return out


_JSON_SID_RE = LazyRegex(rb'"session_id":\s*"([0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4}-[a-z0-9-]+)"')


def ids_in_json_lines(data: bytes) -> set[str]:
    """Every valid ``"session_id": "..."`` value in JSON Lines text (journal, conversation pairs),
    including those nested in journaled rows; damaged lines are simply not matched."""
    return {sid for m in _JSON_SID_RE.finditer(data) if is_valid_session_id(sid := m.group(1).decode("ascii"))}
