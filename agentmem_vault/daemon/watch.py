"""Watching: the observer threads only filter events and put what they concern on the loop's
inbox (STYLE: "the watcher only filters and enqueues"). memory/ and memory/sessions/ are watched
without recursion (the board's files); memory/long-term/ recursively in native mode, as the recall
index's freshness authority (recall/freshness.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from watchdog import events as ev
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

from agentmem_vault.vault import Vault
from agentmem_vault.daemon.scan import SESSIONS, classify

log = logging.getLogger("agentmem.daemon")

# What the inbox carries besides paths relative to memory/ (and None: wake up, a stop request).
RESCAN = "\x00rescan"  # a directory changed, look at everything
RESCAN_QUEUE = "\x00queue"  # the extraction worker finished a batch
RECALL = "\x00recall"  # something changed under long-term/ (sync the recall index)
RECALL_RESET = "\x00recall-reset"  # long-term/ itself was created, deleted or moved
LONGTERM = "long-term"


# Only what can change content. Opened/closed-without-write events would echo every read the
# daemon itself makes (5,000 of them on a big vault).
_FILE_EVENTS = [ev.FileCreatedEvent, ev.FileModifiedEvent, ev.FileMovedEvent, ev.FileDeletedEvent, ev.FileClosedEvent]
EVENT_TYPES = [*_FILE_EVENTS, ev.DirCreatedEvent, ev.DirDeletedEvent, ev.DirMovedEvent]
_NO_CHANGE = ("opened", "closed_no_write", "attrib")


class PathFilter(ev.FileSystemEventHandler):
    """Turns a watchdog event into the watched paths it concerns (relative to memory/)."""

    def __init__(self, memory: Path, sink: Callable[[str], None]) -> None:
        self.memory = os.path.normcase(os.path.abspath(memory))
        self.sink = sink

    def rel(self, path: str | bytes) -> str | None:
        if not path:
            return None
        p = os.path.normcase(os.path.abspath(os.fsdecode(path)))
        if p == self.memory or not p.startswith(self.memory + os.sep):
            return None
        return p[len(self.memory) + 1 :].replace(os.sep, "/")

    def dispatch(self, event: ev.FileSystemEvent) -> None:
        try:
            if event.event_type in _NO_CHANGE:
                return
            for raw in (event.src_path, event.dest_path):
                rel = self.rel(raw)
                if rel is None or rel.split("/", 1)[0] == ".agentmem":
                    continue
                if event.is_directory:
                    if rel == SESSIONS:
                        self.sink(RESCAN)
                    elif rel == LONGTERM:
                        self.sink(RECALL_RESET)  # created, deleted or moved: watch it afresh and sync
                    continue
                if classify(rel) is not None:
                    self.sink(rel)
        except Exception:  # never let one odd event kill the observer thread
            log.exception("event handler failed on %r", event)


class LongTermFilter(ev.FileSystemEventHandler):
    """Events under memory/long-term/ (recursive watch): any change to a note or a folder marks the
    recall heartbeat dirty at once (here, in the observer thread) and asks the loop to sync."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.on_change = on_change

    def dispatch(self, event: ev.FileSystemEvent) -> None:
        try:
            if event.event_type in _NO_CHANGE:
                return
            for raw in (event.src_path, event.dest_path):
                name = os.path.basename(os.fsdecode(raw)) if raw else ""
                if name and (event.is_directory or name.endswith(".md")) and not name.startswith("."):
                    self.on_change()
                    return
        except Exception:  # never let one odd event kill the observer thread
            log.exception("event handler failed on %r", event)


class Watcher:
    """The observer and what it watches. ``sink`` receives every path and marker (observer
    thread); ``on_longterm`` is called for a change under long-term/ (observer thread)."""

    def __init__(
        self,
        vault: Vault,
        sink: Callable[[str], None],
        on_longterm: Callable[[], None],
        *,
        polling: bool,
        rescan_seconds: float,
        longterm: bool,
    ) -> None:
        self.vault = vault
        self.memory = vault.memory
        self.polling = polling
        self.rescan_seconds = rescan_seconds
        self.longterm = longterm  # watch long-term/ (native mode, while the recall index can be synced)
        self.observer: BaseObserver | None = None
        self._handler = PathFilter(self.memory, sink)
        self._lt_handler = LongTermFilter(on_longterm)
        self._watched: set[str] = set()
        self.lt_watch: ObservedWatch | None = None

    def start(self) -> None:
        obs = PollingObserver(timeout=self.rescan_seconds) if self.polling else Observer()
        self.observer = obs
        self.schedule_missing()
        obs.start()

    def schedule_missing(self) -> None:
        if self.observer is None:
            return
        for folder in (self.memory, self.memory / SESSIONS):
            key = str(folder)
            if key in self._watched or not folder.is_dir():
                continue
            # Not recursive: archive/, long-term/ and .agentmem/ are none of the daemon's business.
            self.observer.schedule(self._handler, key, recursive=False, event_filter=EVENT_TYPES)
            self._watched.add(key)
        self.watch_longterm()

    def watch_longterm(self) -> None:
        """Watch long-term/ recursively (native mode): the recall index's freshness authority."""
        if self.observer is None or not self.longterm:
            return
        folder = self.vault.longterm_dir
        if self.lt_watch is not None and not folder.is_dir():
            self.unwatch_longterm()
        if self.lt_watch is None and folder.is_dir():
            try:
                self.lt_watch = self.observer.schedule(
                    self._lt_handler, str(folder), recursive=True, event_filter=EVENT_TYPES
                )
            except OSError as exc:  # e.g. the inotify watch limit: queries check the notes themselves
                log.warning("cannot watch %s: %s", folder, exc)

    def unwatch_longterm(self) -> None:
        if self.lt_watch is not None and self.observer is not None:
            with suppress(Exception):  # already gone with its folder
                self.observer.unschedule(self.lt_watch)
        self.lt_watch = None

    def stop(self) -> None:
        obs, self.observer = self.observer, None
        if obs is None:
            return
        try:
            obs.stop()
            obs.join(timeout=1.0)
        except Exception:  # noqa: BLE001
            log.exception("stopping the observer failed")
