"""What a new chat is told at session start: the rule-index memories and the recent active sessions.

Called by the sessionStart hooks, whose whole run has ~100 ms, so this path reads the PREBUILT
recall index (read-only SQLite, the rule notes only) and never builds or syncs it, and imports no
YAML/frontmatter/anthropic/watchdog. Each rule note's stamp is checked against the file on disk: a
note deleted or edited since the last index sync is left out, so stale text never surfaces. A rule
note created or edited since the last sync shows from the next `agentmem context`/`memories
search`/`reindex` (or daemon sync) on. Never raises.
"""

from __future__ import annotations

import os
from datetime import datetime
from types import SimpleNamespace

from agentmem_vault.config import Vault, parse_ts
from agentmem_vault.model.index_table import IndexDoc, Row, parse_index
from agentmem_vault.recall.location import db_path
from agentmem_vault.recall.render import (
    RULE_IMPORTANCE,
    SessionHit,
    _fit,
    render_rule,
    render_rule_title,
    render_session,
)

RULES_SHARE = 0.7
MAX_RULES = 12
MAX_SESSIONS = 5


def _rules_from_index(vault: Vault) -> list[SimpleNamespace]:
    path = db_path(vault)
    if not path.is_file():
        return []  # no long-term memories indexed yet: not even sqlite3 is imported
    import sqlite3

    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return []
    try:
        rows = conn.execute(
            "SELECT path, mtime_ns, size, note_id, title, content, importance, updated FROM notes "
            "WHERE importance >= ? AND status != 'deprecated' ORDER BY importance DESC, updated DESC, title LIMIT ?",
            (RULE_IMPORTANCE, MAX_RULES * 2),
        ).fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    out: list[SimpleNamespace] = []
    folder = vault.longterm_dir
    for rel, mtime, size, nid, title, content, imp, updated in rows:
        p = folder / rel
        try:
            st = os.stat(p)
        except OSError:
            continue  # deleted since the index was synced
        if (st.st_mtime_ns, st.st_size) != (mtime, size):
            # Edited since the last index sync: left out (never its stale text) until the next sync;
            # the hook never parses notes (docs/notes.md: one reader, and it is not on this path).
            continue
        out.append(SimpleNamespace(id=nid, title=title, content=content, importance=imp, updated=updated))
    return out[:MAX_RULES]


def _ts(value: str) -> datetime:
    return parse_ts(value) or datetime.min


def recent_active_sessions(rows: list[Row], *, exclude: tuple[str, ...] = (), limit: int = MAX_SESSIONS) -> list[SessionHit]:
    active = [r for r in rows if r.status == "active" and r.session_id not in exclude]
    active.sort(key=lambda r: _ts(r.updated_at), reverse=True)
    return [SessionHit(r.session_id, r.topic, r.summary, r.status, r.updated_at, 0.0, True) for r in active[:limit]]


def session_start_context(vault: Vault, *, budget: int = 1500, doc: IndexDoc | None = None,
                          exclude: tuple[str, ...] | list[str] = ()) -> str:
    """Markdown (at most ``budget`` characters, "" when there is nothing to say) for additional_context.

    ``doc``: the already parsed memory/index.md, if the hook has it (saves a read); ``exclude``:
    Session IDs not to list (the chat's own)."""
    try:
        rules = _rules_from_index(vault)
        if doc is None:
            try:
                text = vault.index_path.read_text(encoding="utf-8-sig")
                doc = parse_index(text)
            except Exception:  # noqa: BLE001 - unreadable board: list no sessions, never raise
                doc = None
        sessions = recent_active_sessions(doc.row_list() if doc else [], exclude=tuple(exclude))
        budget = max(0, int(budget))
        parts: list[str] = []
        used = 0
        if rules:
            cap = int(budget * RULES_SHARE) if sessions else budget
            text = "## Long-term rules (agentmem)\n"
            n = 0
            for r in rules:
                # full text while it fits, then the rule's name only (the agent can look it up)
                for line in (render_rule(r), render_rule_title(r)):
                    if len(text) + len(line) <= cap:
                        text += line
                        n += 1
                        break
            if n:
                parts.append(text)
                used += len(text)
        if sessions:
            text, n = _fit([render_session(s) for s in sessions], "## Recent active sessions\n", budget - used - 1)
            if n:
                parts.append(("\n" if parts else "") + text)
        out = "".join(parts).rstrip("\n")
        return out[:budget]
    except Exception:  # noqa: BLE001 - the hook prints {} rather than break a chat
        return ""


__all__ = ["session_start_context", "recent_active_sessions"]
