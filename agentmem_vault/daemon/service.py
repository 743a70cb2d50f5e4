"""The running daemon: observer threads feed paths, one loop debounces, rescans, plans and applies.

The observer threads only filter events and put relative paths on an in-memory queue; everything
else happens on the main thread, in ``Daemon.loop``, so there is one writer and no shared state to
lock. The parts it ties together, one duty each, are listed in docs/daemon.md.
"""

from __future__ import annotations

import logging
import queue as stdlib_queue
import threading
import time
import traceback
from collections.abc import Callable

from agentmem_vault.config import vault_config
from agentmem_vault.vault import Vault
from agentmem_vault.daemon import paths
from agentmem_vault.daemon.debounce import Debouncer
from agentmem_vault.daemon.extraction import ExtractionWorker
from agentmem_vault.daemon.passes import BoardPasses
from agentmem_vault.daemon.queue import ExtractionQueue, load_extractor
from agentmem_vault.daemon.recall_sync import RecallSync
from agentmem_vault.daemon.scan import scan_memory
from agentmem_vault.daemon.status import StatusBook
from agentmem_vault.daemon.watch import RECALL, RECALL_RESET, RESCAN, RESCAN_QUEUE, Watcher
from agentmem_vault.errors import AgentmemError, UsageError
from agentmem_vault.ops.conversations import queue_lock
from agentmem_vault.recall.freshness import Heartbeat

log = logging.getLogger("agentmem.daemon")

MAX_WAIT = 1.0  # the loop wakes at least this often (the queue file)


class StopRequested(BaseException):
    """Raised by a stop signal in the main thread while a pass runs (docs/daemon.md: the pass
    unwinds as after any error). A BaseException, so that ``guard`` does not swallow it."""


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
        self.busy = False  # the main thread is in a pass (not waiting for the inbox)
        self.debouncer = Debouncer(debounce, clock)
        self.queue = ExtractionQueue(vault.state_dir, quiet_seconds=quiet, clock=wall, lock=lambda: queue_lock(vault))
        self.status = StatusBook(
            paths.status_path(vault),
            vault=str(vault.root),
            mode="polling" if polling else "native",
            rescan_seconds=self.rescan_seconds,
            wall=wall,
        )
        # Native events only: a polling observer sees an edit up to a rescan late, so then queries
        # keep checking the notes themselves (recall/freshness.py).
        self.recall_beat = None if polling else Heartbeat(vault)
        self.watcher = Watcher(
            vault,
            self._sink,
            lambda: self._sink(RECALL),  # a note changed: queries stop trusting the index before we sync
            polling=polling,
            rescan_seconds=self.rescan_seconds,
            longterm=self.recall_beat is not None,
        )
        self.recall = RecallSync(vault, self.watcher, self.recall_beat)
        self.passes = BoardPasses(vault, self.status, self.queue, self.guard)
        self.extraction = ExtractionWorker(
            vault,
            self.queue,
            self.status,
            loader=extractor_loader,
            clock=clock,
            wall=wall,
            quiet_seconds=self.rescan_seconds,
            stop_event=self.stop_event,
            guard=self.guard,
            wake=lambda: self.inbox.put(RESCAN_QUEUE),
            on_extracted=self.recall.sync,
        )

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

    def on_signal(self, *_: object) -> None:
        """The SIGTERM/SIGINT handler (main thread): stop at once, interrupting a pass."""
        first = not self.stop_event.is_set()
        self.request_stop()
        if self.busy and first:
            self.busy = False
            raise StopRequested

    def _sink(self, rel: str) -> None:
        """Observer thread: a path or marker for the loop."""
        if rel in (RECALL, RECALL_RESET) and self.recall_beat is not None:
            self.recall_beat.dirty()  # in the observer thread, before the loop even wakes
        self.inbox.put(rel)

    def rescan(self) -> None:
        self.watcher.schedule_missing()
        self.passes.rescan()
        # long-term/ is not watched in polling mode (no events); a note created by hand in
        # Obsidian reaches the session-start context from the next rescan on.
        self.guard("recall", self.recall.sync)

    # -- lifecycle ----------------------------------------------------------------------------
    def startup(self) -> None:
        if not self.memory.is_dir():
            raise AgentmemError(f"{self.memory} does not exist; run `agentmem init` first", code="not_a_vault")
        self.queue.load()
        self.queue.poll()
        self.watcher.start()  # before the first scan: nothing changed in between is missed
        self.passes.folder = scan_memory(self.memory)
        shas = {sid: e.sha for sid, e in self.passes.folder.sessions().items() if e.sha and e.error is None}
        if not self.queue.has_state:
            self.queue.remember_snapshots(shas)  # first start: no mass back-fill of old sessions
        else:
            for sid, sha in shas.items():  # changed while the daemon was not running
                self.guard("queue", self.queue.note_snapshot, sid, sha)
        self.guard("reconcile", self.passes.reconcile_pass)
        self.guard("recall", self.recall.sync)  # index current and heartbeat clean before "running"
        self.guard("queue", self.extraction.get_extractor)  # so that `status` says whether extraction exists
        self.guard("queue", self.extraction.tick)
        self.status.set("state", "running")
        log.info(
            "daemon running on %s (%s, rescan every %gs, %d snapshots)",
            self.vault.root,
            "polling" if self.polling else "native",
            self.rescan_seconds,
            len(shas),
        )

    def _wait(self, next_rescan: float) -> list[str | None]:
        """What the inbox holds, waiting until the next timer (rescan, debounce, MAX_WAIT) at most."""
        now = self.clock()
        deadline = min(next_rescan, now + MAX_WAIT)
        d = self.debouncer.next_deadline()
        if d is not None:
            deadline = min(deadline, d)
        items: list[str | None] = []
        self.busy = False
        try:
            if self.stop_event.is_set():
                return items
            items.append(self.inbox.get(timeout=max(0.0, deadline - now)))
            while True:
                items.append(self.inbox.get_nowait())
        except stdlib_queue.Empty:
            pass
        finally:
            self.busy = not self.stop_event.is_set()
        return items

    def loop(self) -> None:
        next_rescan = self.clock() + self.rescan_seconds
        while not self.stop_event.is_set():
            items = self._wait(next_rescan)
            for it in items:
                if it not in (None, RESCAN, RESCAN_QUEUE, RECALL, RECALL_RESET):
                    self.debouncer.touch(it)  # a path
            force, queue_tick, recall = RESCAN in items, RESCAN_QUEUE in items, RECALL in items
            if RECALL_RESET in items:
                self.watcher.unwatch_longterm()
                recall = True
            if self.stop_event.is_set():  # a signal, or `daemon stop`'s request (daemon/process.py)
                break
            if recall:
                self.guard("recall", self.recall.sync)
            if self.recall_beat is not None:
                self.recall_beat.touch()
            due = self.debouncer.pop_due()
            if due:
                self.guard("events", self.passes.handle_paths, due)
            if force or self.clock() >= next_rescan:
                self.guard("rescan", self.rescan)
                next_rescan = self.clock() + self.rescan_seconds
                queue_tick = True
            if queue_tick or self.queue.file_changed() or self.extraction.due_soon():
                self.guard("queue", self.extraction.tick)
            self.guard("status", self.status.flush)

    def shutdown(self) -> None:
        if self.recall_beat is not None:
            self.recall_beat.remove()  # first: from now on nobody watches long-term/
        self.watcher.stop()
        if self.extraction.worker is not None:
            self.extraction.worker.join(timeout=0.5)
        self.guard("queue", self.extraction.final)
        self.status.set("state", "stopped")
        self.guard("status", self.status.flush, force=True)
        log.info("daemon stopped")

    def run(self) -> None:
        """Start, loop until asked to stop, stop cleanly (caller owns signals and the instance lock)."""
        started = False
        try:
            self.busy = True  # from here on a stop signal interrupts whatever runs (on_signal)
            if self.stop_event.is_set():
                return  # asked to stop before it started: no startup pass (docs/daemon.md, within 2 s)
            self.startup()
            started = True
            self.guard("status", self.status.flush, force=True)
            self.loop()
        except StopRequested:
            log.info("stop requested during a pass: the pass was interrupted (its writes undone)")
        finally:
            self.busy = False
            if started or self.stop_event.is_set():
                self.shutdown()
