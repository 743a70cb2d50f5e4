"""The extraction worker: long-term extraction of queued sessions and transcripts on a thread of
its own, so that a slow model call never delays the board. The queue (daemon/queue.py) says what
is due; the loop calls ``tick`` and records the results on its own thread."""

from __future__ import annotations

import logging
import queue as stdlib_queue
import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from agentmem_vault.vault import Vault
from agentmem_vault.daemon.queue import ExtractionQueue
from agentmem_vault.daemon.status import StatusBook

log = logging.getLogger("agentmem.daemon")

EXTRACTOR_RETRY = 300.0  # seconds before asking again for an extractor that was not available


@dataclass(eq=False)
class ExtractionWorker:
    vault: Vault
    queue: ExtractionQueue
    status: StatusBook
    _: KW_ONLY
    loader: Callable
    clock: Callable[[], float]
    wall: Callable[[], float]
    quiet_seconds: float  # how long to wait when items are due but no extractor exists
    stop_event: threading.Event
    guard: Callable[..., object]  # the daemon's: log and count a failure, go on
    wake: Callable[[], None]  # tells the loop a batch is finished
    on_extracted: Callable[[], None]  # after new notes: the recall index follows
    worker: threading.Thread | None = field(default=None, init=False)
    quiet_until: float = field(default=0.0, init=False)  # due items but no extractor: do not re-check every second
    _extractor: Callable | None = field(default=None, init=False)
    _extractor_checked: float = field(default=-1e18, init=False)
    _results: stdlib_queue.SimpleQueue = field(default_factory=stdlib_queue.SimpleQueue, init=False)

    def get_extractor(self) -> Callable | None:
        if self._extractor is None and self.clock() - self._extractor_checked >= EXTRACTOR_RETRY:
            self._extractor_checked = self.clock()
            fn, why = self.loader(self.vault)
            self._extractor = fn
            self.status.set("extractor", "available" if fn else why)
        return self._extractor

    def collect_results(self) -> int:
        """Record what the worker finished; returns how many items it extracted."""
        done = 0
        while True:
            try:
                key, touched, err = self._results.get_nowait()
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

    def due_soon(self) -> bool:
        """Items are pending and one may be due (checked by the loop between ticks)."""
        return bool(
            self.queue.pending and self.clock() >= self.quiet_until and (self.queue.next_due() or 0) <= self.wall()
        )

    def tick(self) -> None:
        self.queue.poll()
        if self.collect_results():
            self.guard("recall", self.on_extracted)
        self.guard("queue", self.queue.compact)
        if self.worker is not None and not self.worker.is_alive():
            self.worker = None
        due = self.queue.due()
        if due and self.worker is None:
            fn = self.get_extractor()
            if fn is None:
                self.quiet_until = self.clock() + self.quiet_seconds
            else:
                batch = [(k, item, self.queue.pending[k]["last_seen"]) for k, item in due]
                # A daemon thread: a model call in flight must not hold up a stop; items not marked
                # done stay queued and are extracted again (extraction is idempotent).
                self.worker = threading.Thread(
                    target=self._extract_batch, args=(fn, batch), name="agentmem-extract", daemon=True
                )
                self.worker.start()
        self.status.set("queue", self.queue.summary())
        self.queue.save()

    def final(self) -> None:
        """At shutdown: record what the worker finished, save the queue."""
        self.collect_results()
        self.queue.save()

    def _extract_batch(self, fn: Callable, batch: list[tuple[str, dict, float]]) -> None:
        for key, item, touched in batch:
            if self.stop_event.is_set():
                return
            try:
                fn(item)
                self._results.put((key, touched, None))
            except Exception as exc:  # noqa: BLE001
                log.error("extraction of %s failed: %s", key, exc)
                self._results.put((key, touched, f"{type(exc).__name__}: {exc}"))
        self.wake()
