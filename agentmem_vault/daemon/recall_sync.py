"""The recall index kept in step with memory/long-term/ by the daemon, so that notes written by
extraction (or by hand) reach the next chat's session-start context without a reindex; the
heartbeat tells queries whether the daemon's word can be trusted (recall/freshness.py)."""

from __future__ import annotations

import json
import logging

from agentmem_vault.vault import Vault
from agentmem_vault.daemon.watch import Watcher
from agentmem_vault.recall.freshness import Heartbeat

log = logging.getLogger("agentmem.daemon")


class RecallSync:
    def __init__(self, vault: Vault, watcher: Watcher, beat: Heartbeat | None) -> None:
        self.vault = vault
        self.watcher = watcher
        self.beat = beat  # None in polling mode: queries keep checking the notes themselves
        self.off = False  # the index cannot live on disk: not rebuilt in memory over and over

    def sync(self) -> None:
        """Cheap when nothing changed (a folder listing)."""
        beat = self.beat
        if self.off or not self.vault.longterm_dir.is_dir():
            if beat is not None:
                beat.remove()  # nothing watched: queries check for themselves (cheap: no notes)
            return
        from agentmem_vault.recall.index import RecallIndex

        self.watcher.watch_longterm()  # before the scan: a note written from here on raises an event
        generation = beat.generation if beat is not None else 0
        idx = RecallIndex(self.vault)
        try:
            stats = idx.sync(trust_daemon=False)  # we are the authority: look at the notes
        finally:
            idx.close()
        if stats.in_memory:
            self.off = True
            self.watcher.longterm = False
            if beat is not None:
                beat.remove()
            self.watcher.unwatch_longterm()
            log.warning("recall index: %s is not writable; the daemon stops syncing it", idx.path.parent)
            return
        if stats.changed or stats.rebuilt:
            log.info("recall index synced: %s", json.dumps(stats.to_dict(), ensure_ascii=False))
        if beat is not None and self.watcher.lt_watch is not None:
            beat.clean(generation)  # refused when an event came in during the scan: the next sync decides
