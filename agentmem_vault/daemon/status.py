"""The daemon's status book: what ``agentmem daemon status`` shows, kept in a JSON file.

Written only when something worth showing changed (plus a slow heartbeat), because the file lives
in a cloud-synced folder.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections import deque
from pathlib import Path

from agentmem_vault.clock import iso_epoch
from agentmem_vault.fs import atomic_write_text

KEEP = 20
COUNTERS = ("events", "passes", "rows_added", "rows_synced", "conflicts_folded", "extracted", "errors")
HEARTBEAT_SECONDS = 300.0


class StatusBook:
    def __init__(self, path: Path, *, vault: str, mode: str, rescan_seconds: float, wall=time.time) -> None:
        self.path = path
        self.wall = wall
        self.started = wall()
        self.data: dict = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "vault": vault,
            "mode": mode,
            "rescan_seconds": rescan_seconds,
            "state": "starting",
            "started_at": iso_epoch(self.started),
            "started_epoch": self.started,
            "counters": dict.fromkeys(COUNTERS, 0),
        }
        self.last_events: deque[dict] = deque(maxlen=KEEP)
        self.errors: deque[dict] = deque(maxlen=KEEP)
        self.reports: deque[dict] = deque(maxlen=KEEP)
        self.dirty = True
        self._written_at = 0.0

    def count(self, name: str, n: int = 1) -> None:
        if n:
            self.data["counters"][name] = self.data["counters"].get(name, 0) + n
            self.dirty = True

    def event(self, kind: str, **info: object) -> None:
        self.last_events.append({"time": iso_epoch(self.wall()), "kind": kind, **info})
        self.dirty = True

    def error(self, where: str, message: str) -> None:
        self.errors.append({"time": iso_epoch(self.wall()), "where": where, "error": message})
        self.count("errors")

    def report(self, rep: dict) -> None:
        self.reports.append({"time": iso_epoch(self.wall()), **rep})
        self.dirty = True

    def set(self, key: str, value: object, *, quiet: bool = False) -> None:
        if self.data.get(key) != value:
            self.data[key] = value
            if not quiet:
                self.dirty = True

    def snapshot(self) -> dict:
        now = self.wall()
        return {
            **self.data,
            "updated_at": iso_epoch(now),
            "updated_epoch": now,
            "last_events": list(self.last_events),
            "errors": list(self.errors),
            "reports": list(self.reports),
        }

    def flush(self, *, force: bool = False) -> bool:
        now = self.wall()
        if not (force or self.dirty or now - self._written_at >= HEARTBEAT_SECONDS):
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(self.snapshot(), ensure_ascii=False, indent=1) + "\n")
        self.dirty = False
        self._written_at = now
        return True
