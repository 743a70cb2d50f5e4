"""The long-term extraction queue, kept in ``memory/.agentmem/`` so that it survives a restart.

``extract-queue.jsonl`` is append-only and shared: the session-end hooks append transcript lines
(their format: ops/conversations.py), the daemon ``{"kind": "session", "session_id": ...}`` lines.
``extract-state.json`` (written only by the daemon) records how far the file has been read, the
pending items with the wall-clock time they were last touched, failures, and the content hash of
each snapshot already queued (so that a snapshot changed while the daemon was down is queued on the
next start, and an unchanged one is not queued again).

An item is handed to extraction once it has been quiet for ``quiet_seconds``: a session still being
worked on keeps being pushed back.

Compaction: Cursor's ``stop`` hook appends a line after every agent turn, so the file only grows.
Once it passes ``compact_bytes`` the daemon rewrites it, under the same lock as the hooks, with one
line per item still pending; finished items are dropped (given-up ones stay listed in the state).
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable, ContextManager

from agentmem_vault.clock import iso_epoch, iso_now
from agentmem_vault.vault import Vault
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.ops.conversations import EXTRACT_QUEUE
from agentmem_vault.errors import AgentmemError
from agentmem_vault.fs import append_line, atomic_write_bytes, atomic_write_text, read_bytes, read_from, read_head

QUEUE_FILE = EXTRACT_QUEUE  # the name is defined once, in ops/conversations.py
STATE_FILE = "extract-state.json"
STATE_FIELDS = {"offset": int, "head": str, "pending": dict, "failed": dict, "seen": dict, "done_count": int}
MAX_ATTEMPTS = 5
COMPACT_BYTES = 64 * 1024

log = logging.getLogger("agentmem.daemon")


HEAD_BYTES = 256


def _head_of(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data[:HEAD_BYTES]).hexdigest()[:16]


def _head(path: Path, offset: int) -> str:
    try:
        return _head_of(read_head(path, min(offset, HEAD_BYTES)) or b"")
    except AgentmemError:
        return ""


def queue_key(item: object) -> str | None:
    """Identity of a queue item (re-queuing the same thing just pushes its quiet period back)."""
    if not isinstance(item, dict):
        return None
    kind = item.get("kind")
    if kind == "session":
        sid = item.get("session_id")
        return f"session:{sid}" if isinstance(sid, str) and is_valid_session_id(sid) else None
    if kind == "transcript":
        path = item.get("path")
        return f"transcript:{path}" if isinstance(path, str) and path.strip() else None
    return None


class ExtractionQueue:
    def __init__(
        self,
        state_dir: Path,
        *,
        quiet_seconds: float,
        clock: Callable[[], float] = time.time,
        max_attempts: int = MAX_ATTEMPTS,
        lock: Callable[[], ContextManager] | None = None,
        compact_bytes: int = COMPACT_BYTES,
    ) -> None:
        self.state_dir = state_dir
        # The hooks append under conversations.queue_lock: the daemon passes that same lock here.
        self.lock = lock or nullcontext
        self.queue_path = state_dir / QUEUE_FILE
        self.state_path = state_dir / STATE_FILE
        self.quiet = float(quiet_seconds)
        self.clock = clock
        self.max_attempts = max_attempts
        self.offset = 0
        self.head = ""  # hash of the file's first bytes: tells an appended file from a replaced one
        self.pending: dict[str, dict] = {}
        self.failed: dict[str, dict] = {}
        self.seen: dict[str, str] = {}  # session ID -> sha of the snapshot last queued
        self.has_state = False
        self.done_count = 0
        self.bad_lines = 0
        self.compact_bytes = compact_bytes
        self._compact_floor = 0  # size after the last compaction (or a pointless attempt)
        self._dirty = False

    # -- persistence ----------------------------------------------------------------------------
    def load(self) -> None:
        data = read_bytes(self.state_path)
        if data is None:
            return
        try:
            st = json.loads(data.decode("utf-8"))
            for key, kind in STATE_FIELDS.items():
                setattr(self, key, kind(st.get(key, kind())))
            self.has_state = True
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            # The queue file itself is the record: re-reading it from the start loses nothing.
            log.warning(
                "extraction state %s unreadable (%s); re-reading the queue from the start", self.state_path, exc
            )
            self.offset = 0

    def save(self) -> None:
        if not self._dirty:
            return
        state = {k: getattr(self, k) for k in STATE_FIELDS}
        self.state_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.state_path, json.dumps(state, ensure_ascii=False, sort_keys=True) + "\n")
        self.has_state = True
        self._dirty = False

    # -- intake ---------------------------------------------------------------------------------
    def poll(self) -> int:
        """Read lines appended since last time; returns how many items were taken in."""
        try:
            size = self.queue_path.stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return 0
        if size == self.offset:
            return 0
        if size < self.offset or (self.offset and _head(self.queue_path, self.offset) != self.head):
            # Truncated or replaced (by hand or by a compaction): read it again; keys de-duplicate.
            self.offset = 0
        chunk = read_from(self.queue_path, self.offset) or b""  # a FIFO or a link out is refused, never waited on
        end = chunk.rfind(b"\n")
        if end < 0:
            return 0  # a line still being written: wait for its newline
        taken = 0
        for raw in chunk[: end + 1].splitlines():
            if not raw.strip():
                continue
            try:
                item = json.loads(raw.decode("utf-8-sig"))
            except (ValueError, UnicodeDecodeError):
                item = None
            key = queue_key(item)
            if key is None:
                self.bad_lines += 1
                log.warning("extraction queue: ignoring an unreadable line: %r", raw[:200])
                continue
            self._touch(key, item)
            taken += 1
        self.offset += end + 1
        self.head = _head(self.queue_path, self.offset)
        self._dirty = True
        return taken

    def _touch(self, key: str, item: dict) -> None:
        now = self.clock()
        cur = self.pending.get(key)
        self.failed.pop(key, None)
        if cur is None:
            self.pending[key] = {"item": item, "first_seen": now, "last_seen": now, "attempts": 0, "next_try": 0}
        else:
            cur["item"] = item
            cur["last_seen"] = now

    def enqueue(self, item: dict) -> None:
        """Append to the shared file (so it survives a restart), then take it in."""
        if queue_key(item) is None:
            raise ValueError(f"not a queue item: {item!r}")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with self.lock():
            append_line(self.queue_path, (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8"))
        self.poll()

    def note_snapshot(self, session_id: str, sha: str | None) -> bool:
        """Queue a session whose snapshot content is new; returns True when queued."""
        if sha is None or self.seen.get(session_id) == sha:
            return False
        self.seen[session_id] = sha
        self._dirty = True
        self.enqueue({"kind": "session", "session_id": session_id, "time": iso_now()})
        return True

    def remember_snapshots(self, shas: dict[str, str]) -> None:
        """First start ever: take the current snapshots as already seen (no mass back-fill)."""
        self.seen.update(shas)
        self._dirty = True

    def file_changed(self) -> bool:
        """Cheap check (one stat) for lines appended by someone else since the last poll."""
        try:
            return self.queue_path.stat().st_size != self.offset
        except OSError:
            return False

    def compact(self) -> bool:
        """Drop the lines of finished items from the queue file; True when it was rewritten.

        Cheap (one stat) until the file has grown by ``compact_bytes`` since the last compaction.
        Under the hooks' lock: everything appended so far is taken in first, and nobody appends
        while the file is replaced."""
        try:
            size = self.queue_path.stat().st_size
        except OSError:
            return False
        if size < self._compact_floor + self.compact_bytes:
            return False
        with self.lock():
            self.poll()
            data = read_from(self.queue_path, 0) or b""
            tail = data[self.offset :]  # a torn last line, if any: kept as it was
            keep = "".join(
                json.dumps(v["item"], ensure_ascii=False) + "\n"
                for _, v in sorted(self.pending.items(), key=lambda kv: kv[1]["first_seen"])
            )
            new = keep.encode("utf-8")
            if len(new) + len(tail) >= len(data) // 2:
                self._compact_floor = len(data)  # mostly unfinished items: not worth a rewrite yet
                return False
            # State first: a crash between the two writes then re-reads a few lines of the old
            # file (extraction is idempotent) instead of skipping lines appended later.
            before = (self.offset, self.head)
            self.offset, self.head = len(new), _head_of(new)
            self._dirty = True
            self.save()
            try:
                atomic_write_bytes(self.queue_path, new + tail)
            except BaseException:
                self.offset, self.head = before
                self._dirty = True
                self.save()
                raise
        self._compact_floor = self.offset
        log.info("extraction queue compacted: %d -> %d bytes", len(data), len(new) + len(tail))
        return True

    # -- hand-off -------------------------------------------------------------------------------
    def due(self) -> list[tuple[str, dict]]:
        now = self.clock()
        return [
            (k, v["item"])
            for k, v in sorted(self.pending.items(), key=lambda kv: kv[1]["last_seen"])
            if now - v["last_seen"] >= self.quiet and now >= v.get("next_try", 0)
        ]

    def next_due(self) -> float | None:
        """Wall-clock time of the next item to become due."""
        times = [max(v["last_seen"] + self.quiet, v.get("next_try", 0)) for v in self.pending.values()]
        return min(times) if times else None

    def mark_done(self, key: str, touched_at: float | None = None) -> None:
        cur = self.pending.get(key)
        if cur is None:
            return
        if touched_at is not None and cur["last_seen"] > touched_at:
            return  # touched again while it was being extracted: extract again after the quiet period
        del self.pending[key]
        self.done_count += 1
        self._dirty = True

    def mark_failed(self, key: str, error: str) -> None:
        cur = self.pending.get(key)
        if cur is None:
            return
        cur["attempts"] = cur.get("attempts", 0) + 1
        cur["error"] = error[:500]
        cur["next_try"] = self.clock() + self.quiet * cur["attempts"]
        if cur["attempts"] >= self.max_attempts:
            self.failed[key] = self.pending.pop(key)
        self._dirty = True

    def summary(self, limit: int = 20) -> dict:
        items = sorted(self.pending.items(), key=lambda kv: kv[1]["first_seen"])
        return {
            "pending": len(self.pending),
            "due": len(self.due()),
            "failed": len(self.failed),
            "done": self.done_count,
            "bad_lines": self.bad_lines,
            "quiet_seconds": self.quiet,
            "items": [
                {
                    "key": k,
                    "kind": v["item"].get("kind"),
                    "last_change": iso_epoch(v["last_seen"]),
                    "due_at": iso_epoch(max(v["last_seen"] + self.quiet, v.get("next_try", 0))),
                    "attempts": v.get("attempts", 0),
                    **({"error": v["error"]} if v.get("error") else {}),
                }
                for k, v in items[:limit]
            ],
            "failed_items": [{"key": k, "error": v.get("error")} for k, v in list(self.failed.items())[:limit]],
        }


def load_extractor(vault: Vault) -> tuple[Callable[[dict], object] | None, str | None]:
    """The long-term extraction entry point, or (None, why) when it cannot be imported (a broken
    install: the daemon keeps its other duties and reports why)."""
    try:
        # Deferred: heavy (the model client), and only needed once something is due.
        from agentmem_vault.longterm.extract import extract_sources
        from agentmem_vault.longterm.sources import source_for_session as sfs
        from agentmem_vault.longterm.sources import source_for_transcript as sft
    except ImportError as exc:
        return None, f"long-term extraction is not available: {exc}"

    def run(item: dict) -> object:
        if item.get("kind") == "session":
            source = sfs(vault, item["session_id"])
        else:
            source = sft(item["path"])
        report = extract_sources(vault, [source])
        errors = getattr(report, "errors", None)
        if errors:  # reported rather than raised by the pipeline: still a failure to retry
            first = errors[0]
            raise RuntimeError(first.get("error", str(first)) if isinstance(first, dict) else str(first))
        return report

    return run, None
