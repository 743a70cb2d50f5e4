"""The one clock. Every time the tool writes into the vault (rows, snapshots, the journal, queue
items, backup and conflict names) comes from here, so ``AGENTMEM_NOW`` (ISO 8601) makes a whole
run deterministic. Liveness checks (lock ages, daemon heartbeats, temp-file ages) measure real
elapsed time with ``time.time()`` and only format it here.

Kept import-light: the sessionStart hook goes through it.
"""

from __future__ import annotations

import os
import time

from agentmem_vault.errors import ConfigError
from agentmem_vault.fastimport import datetime  # the C type without datetime.py (docs/performance.md)

TS_FORMAT = "%Y-%m-%d %H:%M"  # board and snapshot times (docs/board.md)
ISO_SECONDS = "%Y-%m-%dT%H:%M:%S"  # journal, queue, logs
STAMP_FORMAT = "%Y%m%d-%H%M%S"  # file names of backups and moved conflict copies


def now_precise() -> datetime:
    """Local wall-clock time with seconds, or ``AGENTMEM_NOW``."""
    env = os.environ.get("AGENTMEM_NOW")
    if not env:
        return datetime.now()
    try:  # an offset can carry a valid time out of range in local time (OverflowError)
        dt = datetime.fromisoformat(env.strip())
        return dt.replace(tzinfo=None) if dt.tzinfo is None else dt.astimezone().replace(tzinfo=None)
    except (ValueError, OverflowError) as exc:
        raise ConfigError(f"AGENTMEM_NOW={env!r} is not an ISO 8601 time (e.g. 2026-06-01T09:30)") from exc


def now() -> datetime:
    """Local wall-clock time to the minute (the board's resolution), or ``AGENTMEM_NOW``."""
    return now_precise().replace(second=0, microsecond=0)


def format_ts(dt: datetime) -> str:
    return dt.strftime(TS_FORMAT)


def parse_ts(value: str) -> datetime | None:
    """Accept ``YYYY-MM-DD HH:MM`` and ISO 8601 forms; None when unreadable."""
    v = (value or "").strip()
    if not v or v == "-":
        return None
    for fmt in (TS_FORMAT, "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(v, fmt)
        except ValueError:
            pass
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt.astimezone().replace(tzinfo=None) if dt.tzinfo else dt


def iso_now() -> str:
    """``YYYY-MM-DDTHH:MM:SS`` for records (journal, queue items, logs)."""
    return now_precise().strftime(ISO_SECONDS)


def iso_epoch(t: float) -> str:
    """Format a measured ``time.time()`` value (heartbeats, file ages) in local time."""
    return time.strftime(ISO_SECONDS, time.localtime(t))


def stamp() -> str:
    """``YYYYMMDD-HHMMSS`` for file names (backups, moved conflict copies)."""
    return now_precise().strftime(STAMP_FORMAT)
