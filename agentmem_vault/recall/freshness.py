"""Who vouches that the recall index matches memory/long-term/ (docs/performance.md).

A running daemon (native file events, not polling) is the freshness authority: it watches
long-term/ recursively, marks its heartbeat *dirty* from the observer thread the moment an event
arrives, syncs the index, and marks it *clean* again only if no event came in meanwhile. A query
that finds a clean, recent heartbeat from a live daemon on this machine trusts the index and skips
the stat of every note. Without such a heartbeat the query checks the notes itself (a stat of each:
an edit written in place changes no folder mtime, so nothing cheaper can tell).

The heartbeat lives in the user cache folder (per vault key), never in the synced vault: it
changes every few seconds and means nothing on another machine. Kept apart from note parsing
(recall/index.py) and free of heavy imports.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

HEARTBEAT_SECONDS = 2.0  # the daemon touches the heartbeat this often
MAX_AGE_SECONDS = 10.0  # a query trusts a heartbeat at most this old


def heartbeat_path(vault) -> Path:  # type: ignore[no-untyped-def]
    from agentmem_vault.config import user_cache_dir

    return user_cache_dir() / "daemon" / f"{vault.key}.recall-heartbeat.json"


def _host() -> str:
    try:
        return os.uname().nodename
    except AttributeError:  # Windows
        return os.environ.get("COMPUTERNAME", "")


def _alive(pid: int) -> bool:
    if sys.platform == "win32":
        return True  # the age check stands in for it (os.kill(pid, 0) would terminate the process there)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def daemon_vouches(vault) -> bool:  # type: ignore[no-untyped-def]
    """True when a live daemon on this machine says the index has every change it has seen."""
    path = heartbeat_path(vault)
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or data.get("state") != "clean" or data.get("host") != _host():
        return False
    if not (0 <= time.time() - st.st_mtime <= MAX_AGE_SECONDS):
        return False
    pid = data.get("pid")
    return isinstance(pid, int) and _alive(pid)


class Heartbeat:
    """The daemon's side. ``dirty()`` may be called from the observer thread; the rest from the
    main loop. A sync that started before the last event never marks the heartbeat clean."""

    def __init__(self, vault) -> None:  # type: ignore[no-untyped-def]
        self.path = heartbeat_path(vault)
        self._lock = threading.Lock()
        self.generation = 0  # bumped by every long-term event
        self.state = "dirty"
        self._touched = 0.0

    def _write(self, state: str) -> None:
        from agentmem_vault.vaultio import write_cache_file

        body = {"pid": os.getpid(), "host": _host(), "state": state, "generation": self.generation}
        try:
            write_cache_file(self.path, json.dumps(body).encode("utf-8"))
        except Exception:
            self.remove()
            return
        self.state = state
        self._touched = time.monotonic()

    def dirty(self) -> None:
        """An event under long-term/: until the next sync, queries must check for themselves."""
        with self._lock:
            self.generation += 1
            if self.state != "dirty":
                self._write("dirty")

    def clean(self, generation: int) -> bool:
        """After a sync that began at ``generation``: vouch for the index unless an event came since."""
        with self._lock:
            if generation != self.generation:
                return False
            self._write("clean")
            return True

    def touch(self) -> None:
        """Keep a clean heartbeat recent (called from the loop; cheap: one utime)."""
        with self._lock:
            if self.state != "clean" or time.monotonic() - self._touched < HEARTBEAT_SECONDS:
                return
            try:
                os.utime(self.path)
                self._touched = time.monotonic()
            except OSError:
                self._write("clean")

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self.state = "dirty"


__all__ = ["HEARTBEAT_SECONDS", "MAX_AGE_SECONDS", "Heartbeat", "daemon_vouches", "heartbeat_path"]
