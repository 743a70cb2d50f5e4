"""Applying: the board kept in step with the session files. Which of the watched files really
changed (its own writes are recognised by content hash, not by a time window: after a write the
daemon remembers the hash of what it wrote, and an event whose file still has that hash is its own
echo), the reconcile pass (plan: daemon/reconcile.py, pure; apply: daemon/apply.py through
BoardWriter) and the Obsidian Properties that follow the board (docs/obsidian.md)."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from contextlib import suppress

from agentmem_vault.clock import iso_epoch
from agentmem_vault.vault import Vault
from agentmem_vault.daemon.apply import apply_plan
from agentmem_vault.daemon.queue import ExtractionQueue
from agentmem_vault.daemon.reconcile import Plan, Report, plan
from agentmem_vault.daemon.scan import SESSIONS, FolderSnapshot, changed, classify, scan_file, scan_memory
from agentmem_vault.daemon.status import StatusBook
from agentmem_vault.errors import AgentmemError
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import read_text

log = logging.getLogger("agentmem.daemon")

KEEP_EVENTS = 20  # changed paths recorded in the status per batch
COUNTERS = {"add_row": "rows_added", "sync_row": "rows_synced", "fold_conflict": "conflicts_folded"}


class BoardPasses:
    def __init__(self, vault: Vault, status: StatusBook, queue: ExtractionQueue, guard: Callable[..., object]) -> None:
        self.vault = vault
        self.memory = vault.memory
        self.status = status
        self.queue = queue  # a changed snapshot is noted for long-term extraction
        self.guard = guard
        self.folder = FolderSnapshot()
        self.prev_sessions: set[str] | None = None
        self.own: dict[str, str | None] = {}
        self.reported: set[str] = set()
        self.needs_pass = False
        # Obsidian Properties (docs/obsidian.md): snapshots edited since the last pass, and the
        # board rows last seen, to bring only the files concerned back in step with their tables.
        self._props_pending: set[str] = set()
        self._rows_seen: dict[str, tuple] | None = None

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
            entry = scan_file(self.memory, rel)
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
        """Look at every watched file; react to what really changed, or run a failed pass again."""
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

    def reconcile_pass(self) -> None:
        # Until this pass finishes without error, the next rescan runs it again: the folder
        # snapshot already holds the change, so a failed pass would otherwise be forgotten.
        self.needs_pass = True
        self.status.count("passes")
        try:
            text = read_text(self.vault.index_path)
        except AgentmemError as exc:  # not UTF-8: a damaged file, reported once
            msg = exc.message + "; not rewritten"
            self.report_all(Plan(reports=[Report(f"unreadable_index:{exc.message}", "index_damaged", msg)]))
            return
        archived = self.archived_ids() if self.folder.conflicts() else ()
        p = plan(self.folder, text, previous_sessions=self.prev_sessions, archived=archived)
        if p.writes:
            with BoardWriter(self.vault, "daemon") as w:
                # Re-plan on the text read under the lock when an agent has written meanwhile.
                locked_text = read_text(self.vault.index_path)
                if locked_text != text:
                    archived = self.archived_ids() if self.folder.conflicts() else ()
                    p = plan(self.folder, locked_text, previous_sessions=self.prev_sessions, archived=archived)
                applied = apply_plan(w, p)
            self.own.update(applied.written)
            for rel, sha in applied.written.items():
                if sha is None:
                    self.folder.entries.pop(rel, None)
                else:
                    e = scan_file(self.memory, rel)
                    if e is not None:
                        self.folder.entries[rel] = e
            for d in applied.done:
                log.info("applied %s", json.dumps(d, ensure_ascii=False))
                self.status.event(d["action"], **{k: v for k, v in d.items() if k != "action"})
                if d["action"] in COUNTERS:
                    self.status.count(COUNTERS[d["action"]])
            for err in applied.errors:
                log.error("could not apply %s: %s", err["action"], err["error"])
                self.status.error(f"apply {err['action']}", err["error"])
            if applied.errors:
                self.report_all(p)
                return  # retried at the next rescan
        self.report_all(p)
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
                        e = scan_file(self.memory, rel)
                        if e is not None:
                            self.folder.entries[rel] = e
                            self.own[rel] = e.sha
                        log.info("applied %s", json.dumps({"action": "sync_properties", "session_id": sid}))
                        self.status.event("sync_properties", session_id=sid)
        self._props_pending.clear()
        self._rows_seen = rows

    def archived_ids(self) -> set[str]:
        try:
            names = os.listdir(self.vault.archive_dir)
        except (FileNotFoundError, NotADirectoryError):
            return set()
        return {n for n in names if is_valid_session_id(n)}

    def report_all(self, p: Plan) -> None:
        for r in p.reports:
            if r.key in self.reported:
                continue  # report once
            self.reported.add(r.key)
            log.warning("report [%s] %s", r.kind, r.message)
            self.status.report(r.to_dict())


def _refresh_board_summary(vault: Vault, text: str) -> None:
    from agentmem_vault.board import summary as board_cache

    with suppress(AgentmemError):  # a board that cannot be read is reported by the reconcile pass itself
        board_cache.load(vault, text.encode("utf-8"))
