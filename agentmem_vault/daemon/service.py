"""The running daemon: observer threads feed paths, one loop debounces, rescans, plans and applies.

Threads: the watchdog observer (native, or polling with ``--polling``) only filters events and puts
relative paths on an in-memory queue (STYLE: "the watcher only filters and enqueues"); everything
else happens on the main thread, so there is one writer and no shared state to lock. An extraction
worker thread runs long-term extraction so that a slow model call never delays the board.

Its own writes are recognised by content hash, not by a time window: after a write the daemon
remembers the hash of what it wrote, and an event whose file still has that hash is its own echo.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import queue as stdlib_queue
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver, ObservedWatch

from agentmem_vault.clock import iso_epoch
from agentmem_vault.vault import Vault, ensure_cache_folder
from agentmem_vault.config import vault_config
from agentmem_vault.errors import AgentmemError, Refused, UsageError
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import read_text
from agentmem_vault.daemon import paths, pidfile
from agentmem_vault.daemon.apply import apply_plan
from agentmem_vault.daemon.debounce import Debouncer
from agentmem_vault.daemon.queue import ExtractionQueue, load_extractor
from agentmem_vault.daemon.reconcile import Plan, plan
from agentmem_vault.daemon.scan import (
    SESSIONS,
    FolderSnapshot,
    changed,
    classify,
    scan_file,
    scan_memory,
)
from agentmem_vault.daemon.status import StatusBook
from agentmem_vault.ops.conversations import queue_lock
from agentmem_vault.recall.freshness import Heartbeat

log = logging.getLogger("agentmem.daemon")

RESCAN = "\x00rescan"  # inbox marker: a directory changed, look at everything
RESCAN_QUEUE = "\x00queue"  # inbox marker: the extraction worker finished a batch
RECALL = "\x00recall"  # inbox marker: something changed under long-term/ (sync the recall index)
RECALL_RESET = "\x00recall-reset"  # inbox marker: long-term/ itself was created, deleted or moved
LONGTERM = "long-term"
KEEP_EVENTS = 20
MAX_WAIT = 1.0  # the loop wakes at least this often (stop requests on Windows, queue file)
EXTRACTOR_RETRY = 300.0
LOG_MAX_BYTES = 1_000_000  # daemon.log rotates to daemon.log.1 … .3
LOG_BACKUPS = 3


# -- the event handler (observer thread) -----------------------------------------------------------


def _event_types() -> list:
    # Only what can change content. Opened/closed-without-write events would echo every read the
    # daemon itself makes (5,000 of them on a big vault).
    from watchdog.events import (
        DirCreatedEvent,
        DirDeletedEvent,
        DirMovedEvent,
        FileClosedEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        FileModifiedEvent,
        FileMovedEvent,
    )

    return [
        FileCreatedEvent,
        FileModifiedEvent,
        FileMovedEvent,
        FileDeletedEvent,
        FileClosedEvent,
        DirCreatedEvent,
        DirDeletedEvent,
        DirMovedEvent,
    ]


class PathFilter:
    """Turns a watchdog event into the watched paths it concerns (relative to memory/)."""

    def __init__(self, memory: Path, sink: Callable[[str], None]) -> None:
        self.memory = os.path.normcase(os.path.abspath(memory))
        self.sink = sink

    def rel(self, path: str | bytes) -> str | None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path:
            return None
        p = os.path.normcase(os.path.abspath(path))
        if p == self.memory or not p.startswith(self.memory + os.sep):
            return None
        return p[len(self.memory) + 1 :].replace(os.sep, "/")

    def dispatch(self, event: object) -> None:
        try:
            etype = getattr(event, "event_type", "")
            if etype in ("opened", "closed_no_write", "attrib"):
                return
            for raw in (getattr(event, "src_path", ""), getattr(event, "dest_path", "")):
                rel = self.rel(raw)
                if rel is None or rel.split("/", 1)[0] == ".agentmem":
                    continue
                if getattr(event, "is_directory", False):
                    if rel == SESSIONS:
                        self.sink(RESCAN)
                    elif rel == LONGTERM:
                        self.sink(RECALL_RESET)  # created, deleted or moved: watch it afresh and sync
                    continue
                if classify(rel) is not None:
                    self.sink(rel)
        except Exception:  # never let one odd event kill the observer thread
            log.exception("event handler failed on %r", event)


class LongTermFilter:
    """Events under memory/long-term/ (recursive watch): any change to a note or a folder marks the
    recall heartbeat dirty at once (here, in the observer thread) and asks the loop to sync."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.on_change = on_change

    def dispatch(self, event: object) -> None:
        try:
            if getattr(event, "event_type", "") in ("opened", "closed_no_write", "attrib"):
                return
            paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
            for raw in paths:
                name = os.path.basename(os.fsdecode(raw)) if raw else ""
                if (
                    name
                    and (getattr(event, "is_directory", False) or name.endswith(".md"))
                    and not name.startswith(".")
                ):
                    self.on_change()
                    return
        except Exception:  # never let one odd event kill the observer thread
            log.exception("event handler failed on %r", event)


def make_handler(memory: Path, sink: Callable[[str], None], longterm: Callable[[], None] | None = None):
    from watchdog.events import FileSystemEventHandler

    class _Handler(FileSystemEventHandler):
        def __init__(self) -> None:
            super().__init__()
            self.filter: PathFilter | LongTermFilter = (
                PathFilter(memory, sink) if longterm is None else LongTermFilter(longterm)
            )

        def dispatch(self, event) -> None:
            self.filter.dispatch(event)

    return _Handler()


# -- logging ---------------------------------------------------------------------------------------


def setup_logging(vault: Vault, *, to_stderr: bool) -> list[logging.Handler]:
    handlers: list[logging.Handler] = []
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    lp = paths.log_path(vault)
    ensure_cache_folder(lp.parent)
    fh = logging.handlers.RotatingFileHandler(
        lp, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8", delay=True
    )
    fh.setFormatter(fmt)
    handlers.append(fh)
    if to_stderr:
        sh = logging.StreamHandler(sys.stderr)
        sh.setFormatter(fmt)
        handlers.append(sh)
    for h in handlers:
        log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False
    return handlers


# -- the daemon ------------------------------------------------------------------------------------


class Daemon:
    def __init__(
        self,
        vault: Vault,
        *,
        polling: bool = False,
        rescan_seconds: float | None = None,
        debounce_seconds: float | None = None,
        quiet_minutes: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        extractor_loader: Callable = load_extractor,
    ) -> None:
        cfg = vault_config(vault)
        self.vault = vault
        self.memory = vault.memory
        self.polling = polling
        self.rescan_seconds = float(rescan_seconds if rescan_seconds is not None else cfg.get("rescan_seconds", 30))
        if self.rescan_seconds <= 0:
            raise UsageError("rescan interval must be positive")
        debounce = float(debounce_seconds if debounce_seconds is not None else cfg.get("debounce_seconds", 0.5))
        quiet = float(quiet_minutes if quiet_minutes is not None else cfg.get("quiet_minutes", 10)) * 60.0
        self.clock = clock
        self.wall = wall
        self.inbox: stdlib_queue.SimpleQueue[str | None] = stdlib_queue.SimpleQueue()
        self.stop_event = threading.Event()
        self.debouncer = Debouncer(debounce, clock)
        self.folder = FolderSnapshot()
        self.prev_sessions: set[str] | None = None
        self.own: dict[str, str | None] = {}
        self.reported: set[str] = set()
        self.queue = ExtractionQueue(vault.state_dir, quiet_seconds=quiet, clock=wall, lock=lambda: queue_lock(vault))
        self.status = StatusBook(
            paths.status_path(vault),
            vault=str(vault.root),
            mode="polling" if polling else "native",
            rescan_seconds=self.rescan_seconds,
            wall=wall,
        )
        self.extractor_loader = extractor_loader
        self._extractor: Callable | None = None
        self._extractor_checked = -1e18
        self._worker: threading.Thread | None = None
        self._worker_results: stdlib_queue.SimpleQueue = stdlib_queue.SimpleQueue()
        self.observer: BaseObserver | None = None
        self._watched: set[str] = set()
        self.needs_pass = False
        self._queue_quiet_until = 0.0  # due items but no extractor: do not re-check every second
        self._recall_off = False
        # Native events only: a polling observer sees an edit up to a rescan late, so then queries
        # keep checking the notes themselves (recall/freshness.py).
        self.recall_beat = None if polling else Heartbeat(vault)
        self._lt_watch: ObservedWatch | None = None
        # Obsidian Properties (docs/obsidian.md): snapshots edited since the last pass, and the
        # board rows last seen, to bring only the files concerned back in step with their tables.
        self._props_pending: set[str] = set()
        self._rows_seen: dict[str, tuple] | None = None

    # -- robustness ---------------------------------------------------------------------------
    def guard(self, where: str, fn: Callable, *args: object, **kwargs: object) -> object:
        """Run one handler; an exception is logged and counted, and the daemon goes on."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the daemon must survive any handler
            msg = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            if isinstance(exc, AgentmemError):
                log.error("%s: %s", where, msg)
            else:
                log.error("%s failed: %s\n%s", where, msg, traceback.format_exc())
            self.status.error(where, msg)
            return None

    def request_stop(self, *_: object) -> None:
        self.stop_event.set()
        self.inbox.put(None)

    # -- observation --------------------------------------------------------------------------
    def _sink(self, rel: str) -> None:
        if rel in (RECALL, RECALL_RESET) and self.recall_beat is not None:
            self.recall_beat.dirty()  # in the observer thread, before the loop even wakes
        self.inbox.put(rel)

    def start_observer(self) -> None:
        if self.polling:
            from watchdog.observers.polling import PollingObserver

            obs: BaseObserver = PollingObserver(timeout=self.rescan_seconds)
        else:
            from watchdog.observers import Observer

            obs = Observer()
        self.observer = obs
        self._handler = make_handler(self.memory, self._sink)
        self._lt_handler = make_handler(self.memory, self._sink, self._on_longterm)
        self._schedule_missing()
        obs.start()

    def _schedule_missing(self) -> None:
        if self.observer is None:
            return
        for folder in (self.memory, self.memory / SESSIONS):
            key = str(folder)
            if key in self._watched or not folder.is_dir():
                continue
            # Not recursive: archive/, long-term/ and .agentmem/ are none of the daemon's business.
            self.observer.schedule(self._handler, key, recursive=False, event_filter=_event_types())
            self._watched.add(key)
        self._watch_longterm()

    def _on_longterm(self) -> None:
        """Observer thread: a note changed. Queries stop trusting the index before we even sync."""
        self._sink(RECALL)

    def _watch_longterm(self) -> None:
        """Watch long-term/ recursively (native mode): the recall index's freshness authority."""
        if self.observer is None or self.recall_beat is None or self._recall_off:
            return
        folder = self.vault.longterm_dir
        if self._lt_watch is not None and not folder.is_dir():
            self._unwatch_longterm()
        if self._lt_watch is None and folder.is_dir():
            try:
                self._lt_watch = self.observer.schedule(
                    self._lt_handler, str(folder), recursive=True, event_filter=_event_types()
                )
            except OSError as exc:  # e.g. the inotify watch limit: queries check the notes themselves
                log.warning("cannot watch %s: %s", folder, exc)

    def _unwatch_longterm(self) -> None:
        if self._lt_watch is not None and self.observer is not None:
            try:
                self.observer.unschedule(self._lt_watch)
            except Exception:  # noqa: BLE001 - already gone with its folder
                pass
        self._lt_watch = None

    def stop_observer(self) -> None:
        obs, self.observer = self.observer, None
        if obs is None:
            return
        try:
            obs.stop()
            obs.join(timeout=1.0)
        except Exception:  # noqa: BLE001
            log.exception("stopping the observer failed")

    # -- change handling ----------------------------------------------------------------------
    def _is_own(self, rel: str, sha: str | None, exists: bool) -> bool:
        if rel not in self.own:
            return False
        mine = self.own[rel]
        return (mine is None and not exists) or (exists and mine is not None and mine == sha)

    def handle_paths(self, rels: list[str]) -> None:
        """Debounced paths from events: re-read each, keep what really changed, react."""
        real: list[str] = []
        for rel in rels:
            prev = self.folder.entries.get(rel)
            entry = scan_file(self.memory, rel, None)
            if entry is None:
                if self.folder.entries.pop(rel, None) is not None and not self._is_own(rel, None, False):
                    real.append(rel)
                continue
            self.folder.entries[rel] = entry
            if self._is_own(rel, entry.sha, True):
                continue
            if prev is not None and (prev.sha, prev.error) == (entry.sha, entry.error):
                continue  # touched, not changed
            real.append(rel)
        if real:
            self.on_changes(real, source="event")

    def rescan(self) -> None:
        self._schedule_missing()
        new = scan_memory(self.memory, self.folder)
        diff = changed(self.folder, new)
        self.folder = new
        real = sorted(
            rel
            for rel in diff
            if not self._is_own(rel, new.entries[rel].sha if rel in new.entries else None, rel in new.entries)
        )
        self.status.set("last_rescan", iso_epoch(time.time()), quiet=True)
        if real:
            self.on_changes(real, source="rescan")
        elif self.needs_pass:
            self.reconcile_pass()
        # long-term/ is not watched (no events); a note created by hand in Obsidian reaches the
        # session-start context from the next rescan on.
        self.guard("recall", self.sync_recall)

    def on_changes(self, rels: list[str], *, source: str) -> None:
        self.status.count("events", len(rels))
        for rel in rels[:KEEP_EVENTS]:
            self.status.event("changed", path=rel, source=source)
        log.info("%s: %d changed: %s", source, len(rels), ", ".join(rels[:10]) + (" …" if len(rels) > 10 else ""))
        for rel in rels:
            if classify(rel) == "session":
                sid = rel[len(SESSIONS) + 1 : -3]
                entry = self.folder.entries.get(rel)
                if entry is not None and entry.error is None and is_valid_session_id(sid):
                    self.guard("queue", self.queue.note_snapshot, sid, entry.sha)
                    self._props_pending.add(sid)
        self.reconcile_pass()

    # -- reconcile ----------------------------------------------------------------------------
    def _index_text(self) -> str | None:
        return read_text(self.vault.index_path)

    def reconcile_pass(self) -> None:
        # Until this pass finishes without error, the next rescan runs it again: the folder
        # snapshot already holds the change, so a failed pass would otherwise be forgotten.
        self.needs_pass = True
        self.status.count("passes")
        try:
            text = self._index_text()
        except AgentmemError as exc:  # not UTF-8: a damaged file, reported once
            self._report_all(Plan(reports=[_report_unreadable(exc)]))
            return
        archived = self._archived_ids() if self.folder.conflicts() else ()
        p = plan(self.folder, text, previous_sessions=self.prev_sessions, archived=archived)
        if p.writes:
            with BoardWriter(self.vault, "daemon") as w:
                # Re-plan on the text read under the lock when an agent has written meanwhile.
                locked_text = read_text(self.vault.index_path)
                if locked_text != text:
                    archived = self._archived_ids() if self.folder.conflicts() else ()
                    p = plan(self.folder, locked_text, previous_sessions=self.prev_sessions, archived=archived)
                applied = apply_plan(w, p)
            self.own.update(applied.written)
            for rel, sha in applied.written.items():
                if sha is None:
                    self.folder.entries.pop(rel, None)
                else:
                    e = scan_file(self.memory, rel, None)
                    if e is not None:
                        self.folder.entries[rel] = e
            for d in applied.done:
                log.info("applied %s", json.dumps(d, ensure_ascii=False))
                self.status.event(d["action"], **{k: v for k, v in d.items() if k != "action"})
                self.status.count(
                    {"add_row": "rows_added", "sync_row": "rows_synced", "fold_conflict": "conflicts_folded"}.get(
                        d["action"], "other"
                    ),
                    1 if d["action"] in ("add_row", "sync_row", "fold_conflict") else 0,
                )
            for err in applied.errors:
                log.error("could not apply %s: %s", err["action"], err["error"])
                self.status.error(f"apply {err['action']}", err["error"])
            if applied.errors:
                self._report_all(p)
                return  # retried at the next rescan
        self._report_all(p)
        self.prev_sessions = set(self.folder.sessions())
        self.guard("properties", self.sync_properties)
        self.needs_pass = False
        if not p.writes and text:
            # A hand edit of the board: bring the hook's board summary up to date now, so that the
            # next chat does not pay the full parse (docs/performance.md). Our own writes refresh it.
            self.guard("board summary", _refresh_board_summary, self.vault, text)

    def sync_properties(self) -> None:
        """Resolve a frontmatter that disagrees with its tables toward the tables, for snapshots
        edited since the last pass and those whose board row changed. Files without frontmatter
        are never rewritten for it (docs/obsidian.md)."""
        from agentmem_vault.board import table as it
        from agentmem_vault.model.session_props import BoardFacts
        from agentmem_vault.ops.session_files import resync_session

        try:
            board = {r.session_id: r for r in it.parse_index(read_text(self.vault.index_path) or "").row_list()}
            rows = {sid: tuple(r) for sid, r in board.items()}
        except AgentmemError:
            return  # a damaged board is reported by the pass; the tables cannot be trusted now
        sessions = set(self.folder.sessions())
        todo = set(self._props_pending)
        if self._rows_seen is None:
            todo |= sessions  # first pass: look at every snapshot once
        else:
            todo |= {sid for sid, r in rows.items() if self._rows_seen.get(sid) != r}
        todo &= {s for s in sessions if is_valid_session_id(s)}
        if todo:
            with BoardWriter(self.vault, "daemon") as w:
                try:  # the rows as they are under the lock (a command may have written meanwhile)
                    board = {r.session_id: r for r in w.index().row_list()}
                except AgentmemError:
                    return
                for sid in sorted(todo):
                    try:
                        row = board.get(sid)
                        changed = resync_session(
                            w, sid, BoardFacts.from_row(row) if row is not None else None, strict=True
                        )
                    except AgentmemError as exc:
                        key = f"properties:{sid}:{exc.message}"
                        if key not in self.reported:
                            self.reported.add(key)
                            log.warning("memory/sessions/%s.md: %s", sid, exc.message)
                        continue
                    if changed:
                        rel = f"{SESSIONS}/{sid}.md"
                        e = scan_file(self.memory, rel, None)
                        if e is not None:
                            self.folder.entries[rel] = e
                            self.own[rel] = e.sha
                        log.info("applied %s", json.dumps({"action": "sync_properties", "session_id": sid}))
                        self.status.event("sync_properties", session_id=sid)
        self._props_pending.clear()
        self._rows_seen = rows

    def _archived_ids(self) -> set[str]:
        try:
            names = os.listdir(self.vault.archive_dir)
        except (FileNotFoundError, NotADirectoryError):
            return set()
        return {n for n in names if is_valid_session_id(n)}

    def _report_all(self, p: Plan) -> None:
        for r in p.reports:
            if r.key in self.reported:
                continue  # report once
            self.reported.add(r.key)
            log.warning("report [%s] %s", r.kind, r.message)
            self.status.report(r.to_dict())

    # -- extraction queue ---------------------------------------------------------------------
    def _get_extractor(self) -> Callable | None:
        if self._extractor is None and self.clock() - self._extractor_checked >= EXTRACTOR_RETRY:
            self._extractor_checked = self.clock()
            fn, why = self.extractor_loader(self.vault)
            self._extractor = fn
            self.status.set("extractor", "available" if fn else why)
        return self._extractor

    def _collect_results(self) -> int:
        """Record what the extraction worker finished; returns how many items it extracted."""
        done = 0
        while True:
            try:
                key, touched, err = self._worker_results.get_nowait()
            except stdlib_queue.Empty:
                return done
            if err is None:
                self.queue.mark_done(key, touched)
                self.status.count("extracted")
                self.status.event("extracted", key=key)
                done += 1
            else:
                self.queue.mark_failed(key, err)
                self.status.error("extract", f"{key}: {err}")

    def sync_recall(self) -> None:
        """Bring the recall index up to date with memory/long-term/, so that notes written by
        extraction (or by hand) reach the next chat's session-start context without a reindex.
        Cheap when nothing changed (a folder listing); an index that cannot live on disk (read-only
        state folder) is not rebuilt in memory over and over."""
        beat = self.recall_beat
        if self._recall_off or not self.vault.longterm_dir.is_dir():
            if beat is not None:
                beat.remove()  # nothing watched: queries check for themselves (cheap: no notes)
            return
        from agentmem_vault.recall.index import RecallIndex

        self._watch_longterm()  # before the scan: a note written from here on raises an event
        generation = beat.generation if beat is not None else 0
        idx = RecallIndex(self.vault)
        try:
            stats = idx.sync(trust_daemon=False)  # we are the authority: look at the notes
        finally:
            idx.close()
        if stats.in_memory:
            self._recall_off = True
            if beat is not None:
                beat.remove()
            self._unwatch_longterm()
            log.warning("recall index: %s is not writable; the daemon stops syncing it", idx.path.parent)
            return
        if stats.changed or stats.rebuilt:
            log.info("recall index synced: %s", json.dumps(stats.to_dict(), ensure_ascii=False))
        if beat is not None and self._lt_watch is not None:
            beat.clean(generation)  # refused when an event came in during the scan: the next sync decides

    def tick_queue(self) -> None:
        self.queue.poll()
        if self._collect_results():
            self.guard("recall", self.sync_recall)
        self.guard("queue", self.queue.compact)
        if self._worker is not None and not self._worker.is_alive():
            self._worker = None
        due = self.queue.due()
        if due and self._worker is None:
            fn = self._get_extractor()
            if fn is None:
                self._queue_quiet_until = self.clock() + self.rescan_seconds
            else:
                batch = [(k, item, self.queue.pending[k]["last_seen"]) for k, item in due]
                # A daemon thread: a model call in flight must not hold up a stop; items not marked
                # done stay queued and are extracted again (extraction is idempotent).
                self._worker = threading.Thread(
                    target=self._extract_batch, args=(fn, batch), name="agentmem-extract", daemon=True
                )
                self._worker.start()
        self.status.set("queue", self.queue.summary())
        self.queue.save()

    def _extract_batch(self, fn: Callable, batch: list[tuple[str, dict, float]]) -> None:
        for key, item, touched in batch:
            if self.stop_event.is_set():
                return
            try:
                fn(item)
                self._worker_results.put((key, touched, None))
            except Exception as exc:  # noqa: BLE001
                log.error("extraction of %s failed: %s", key, exc)
                self._worker_results.put((key, touched, f"{type(exc).__name__}: {exc}"))
        self.inbox.put(RESCAN_QUEUE)

    # -- lifecycle ----------------------------------------------------------------------------
    def startup(self) -> None:
        if not self.memory.is_dir():
            raise AgentmemError(f"{self.memory} does not exist; run `agentmem init` first", code="not_a_vault")
        self.queue.load()
        self.queue.poll()
        self.start_observer()  # before the first scan: nothing changed in between is missed
        self.folder = scan_memory(self.memory)
        shas = {sid: e.sha for sid, e in self.folder.sessions().items() if e.sha and e.error is None}
        if not self.queue.has_state:
            self.queue.remember_snapshots(shas)  # first start: no mass back-fill of old sessions
        else:
            for sid, sha in shas.items():  # changed while the daemon was not running
                self.guard("queue", self.queue.note_snapshot, sid, sha)
        self.guard("reconcile", self.reconcile_pass)
        self.guard("recall", self.sync_recall)  # index current and heartbeat clean before "running"
        self.guard("queue", self._get_extractor)  # so that `status` says whether extraction exists
        self.guard("queue", self.tick_queue)
        self.status.set("state", "running")
        log.info(
            "daemon running on %s (%s, rescan every %gs, %d snapshots)",
            self.vault.root,
            "polling" if self.polling else "native",
            self.rescan_seconds,
            len(shas),
        )

    def loop(self) -> None:
        stop_file = paths.stop_request_path(self.vault)
        next_rescan = self.clock() + self.rescan_seconds
        while not self.stop_event.is_set():
            now = self.clock()
            deadline = min(next_rescan, now + MAX_WAIT)
            d = self.debouncer.next_deadline()
            if d is not None:
                deadline = min(deadline, d)
            items: list[str | None] = []
            try:
                items.append(self.inbox.get(timeout=max(0.0, deadline - now)))
                while True:
                    items.append(self.inbox.get_nowait())
            except stdlib_queue.Empty:
                pass
            force = False
            queue_tick = False
            recall = False
            for it in items:
                if it is None:
                    continue
                if it == RESCAN:
                    force = True
                elif it == RESCAN_QUEUE:
                    queue_tick = True
                elif it == RECALL:
                    recall = True
                elif it == RECALL_RESET:
                    self._unwatch_longterm()
                    recall = True
                else:
                    self.debouncer.touch(it)
            if self.stop_event.is_set() or stop_file.exists():
                break
            if recall:
                self.guard("recall", self.sync_recall)
            if self.recall_beat is not None:
                self.recall_beat.touch()
            due = self.debouncer.pop_due()
            if due:
                self.guard("events", self.handle_paths, due)
            if force or self.clock() >= next_rescan:
                self.guard("rescan", self.rescan)
                next_rescan = self.clock() + self.rescan_seconds
                queue_tick = True
            if queue_tick or self.queue.file_changed():
                self.guard("queue", self.tick_queue)
            elif (
                self.queue.pending
                and self.clock() >= self._queue_quiet_until
                and (self.queue.next_due() or 0) <= self.wall()
            ):
                self.guard("queue", self.tick_queue)
            self.guard("status", self.status.flush)

    def shutdown(self) -> None:
        if self.recall_beat is not None:
            self.recall_beat.remove()  # first: from now on nobody watches long-term/
        self.stop_observer()
        if self._worker is not None:
            self._worker.join(timeout=0.5)
        self.guard("queue", self.tick_queue_final)
        self.status.set("state", "stopped")
        self.guard("status", self.status.flush, force=True)
        log.info("daemon stopped")

    def tick_queue_final(self) -> None:
        self._collect_results()
        self.queue.save()

    def run(self) -> None:
        """Start, loop until asked to stop, stop cleanly (caller owns signals and the instance lock)."""
        self.startup()
        try:
            self.guard("status", self.status.flush, force=True)
            self.loop()
        finally:
            self.shutdown()


def _refresh_board_summary(vault: Vault, text: str) -> None:
    from agentmem_vault.board import summary as board_cache

    try:
        board_cache.load(vault, text.encode("utf-8"))
    except AgentmemError:
        pass  # a board that cannot be read is reported by the reconcile pass itself


def _report_unreadable(exc: AgentmemError):
    from agentmem_vault.daemon.reconcile import Report

    return Report(f"unreadable_index:{exc.message}", "index_damaged", exc.message + "; not rewritten")


# -- the foreground entry point -------------------------------------------------------------------


def run_daemon(
    vault: Vault, *, polling: bool = False, rescan_seconds: float | None = None, background: bool = False
) -> None:
    """``agentmem daemon run``: one instance per vault, signals, pid file, rotating log."""
    from filelock import FileLock, Timeout

    lock_path = paths.instance_lock_path(vault)
    ensure_cache_folder(lock_path.parent)
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise Refused(
            f"a daemon is already running for {vault.root} (see `agentmem daemon status`)", code="daemon_running"
        ) from None
    handlers: list[logging.Handler] = []
    try:
        try:
            paths.stop_request_path(vault).unlink()
        except FileNotFoundError:
            pass
        handlers = setup_logging(vault, to_stderr=not background)
        daemon = Daemon(vault, polling=polling, rescan_seconds=rescan_seconds)
        old = {}
        if threading.current_thread() is threading.main_thread():
            sigs = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGBREAK] if hasattr(signal, "SIGBREAK") else [])
            for s in sigs:
                old[s] = signal.signal(s, daemon.request_stop)
        token = None
        try:
            info = {"host": daemon.status.data["host"], "started_at": daemon.status.data["started_at"]}
            token = pidfile.record_run(vault, info)
            daemon.run()
        finally:
            if token is not None:
                pidfile.clear_run(vault, token)
            for s, prev in old.items():
                signal.signal(s, prev)
    finally:
        for h in handlers:
            log.removeHandler(h)
            h.close()
        lock.release()
