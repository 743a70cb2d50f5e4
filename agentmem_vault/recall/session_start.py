"""What a new chat is told at session start: the rule-index memories and the recent active sessions.

Called by the sessionStart hooks, whose whole run has ~100 ms, so this path reads the PREBUILT
recall index (read-only SQLite, the rule notes only) and never builds or syncs it, and imports no
YAML/frontmatter/anthropic/watchdog. Each rule note's stamp is checked against the file on disk: a
note deleted or edited since the last index sync is left out, so stale text never surfaces. A note
written by one of our commands is in the index as soon as that command is done (recall/refresh.py);
one created or edited by hand shows from the next query's sync (or the daemon's) on. Never raises.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

from agentmem_vault.vault import Vault
from agentmem_vault.board.table import IndexDoc, Row, parse_index
from agentmem_vault.board import summary as board_cache
from agentmem_vault.board.summary import ts_key
from agentmem_vault.recall.location import RULES_LIMIT, RULES_SQL, db_path, rules_path
from agentmem_vault.recall.render import (
    RULE_IMPORTANCE,
    RULES_BUDGET,
    SessionHit,
    _fit,
    render_rule,
    render_rule_title,
    render_session,
)

RULES_SHARE = 0.7
MAX_RULES = 12
MAX_SESSIONS = 5


def _rules_summary(vault: Vault, index_stat: os.stat_result) -> list | None:
    """The rule rows from rules.json when it was written for the index file as it is now."""
    import json

    try:
        with open(rules_path(vault), "rb") as fh:
            data = json.loads(fh.read())
        if data["index"] == [index_stat.st_mtime_ns, index_stat.st_size] and isinstance(data["rules"], list):
            return data["rules"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _rules_from_index(vault: Vault, project_names: tuple[str, ...] | None = None) -> list[SimpleNamespace]:
    """The rule notes to show: global ones and, with ``project_names`` (casefolded), that
    project's; ``None`` shows every project's (docs/projects.md)."""
    path = db_path(vault)
    try:
        index_stat = os.stat(path)
    except OSError:
        return []  # no long-term memories indexed yet: not even sqlite3 is imported
    rows = _rules_summary(vault, index_stat)
    if rows is None:  # no summary, or one older than the index: ask the index (imports sqlite3)
        import sqlite3

        try:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=0.2)
        except sqlite3.Error:
            return []
        try:
            rows = conn.execute(RULES_SQL, (RULE_IMPORTANCE, RULES_LIMIT)).fetchall()
        except sqlite3.Error:
            return []
        finally:
            conn.close()
    out: list[SimpleNamespace] = []
    folder = vault.longterm_dir
    for rel, mtime, size, nid, title, content, imp, updated, proj in rows:
        if proj and project_names is not None and proj not in project_names:
            continue  # another project's rule: never shown here
        p = folder / rel
        try:
            st = os.stat(p)
        except OSError:
            continue  # deleted since the index was synced
        if (st.st_mtime_ns, st.st_size) != (mtime, size):
            # Edited since the last index sync: left out (never its stale text) until the next sync;
            # the hook never parses notes (docs/notes.md: one reader, and it is not on this path).
            continue
        out.append(SimpleNamespace(id=nid, title=title, content=content, importance=imp, updated=updated, path=rel))
    return out[:MAX_RULES]


def recent_active_sessions(
    rows: list[Row], *, exclude: tuple[str, ...] = (), limit: int = MAX_SESSIONS
) -> list[SessionHit]:
    """Active rows, most recently updated first (timestamps compared as strings: ``ts_key``)."""
    active = [r for r in rows if r.status == "active" and r.session_id not in exclude]
    active.sort(key=lambda r: ts_key(r.updated_at), reverse=True)
    return [SessionHit(r.session_id, r.topic, r.summary, r.status, r.updated_at, 0.0, True) for r in active[:limit]]


def _same_project_first(
    hits: list[SessionHit], project_of: dict[str, str] | None, names: tuple[str, ...] | None
) -> list[SessionHit]:
    """Sessions of the chat's own project first (stable otherwise)."""
    if not names or not project_of:
        return hits[:MAX_SESSIONS]
    return sorted(hits, key=lambda h: project_of.get(h.session_id, "").casefold() not in names)[:MAX_SESSIONS]


def _recent_from_board(
    vault: Vault, doc: object, exclude: tuple[str, ...], limit: int = MAX_SESSIONS
) -> list[SessionHit]:
    """From the hook's board summary (no row parsed), a parsed board, or else the summary of the
    board on disk (``board_cache``: kept current by every writer)."""
    if doc is None:
        try:
            doc = board_cache.load(vault)
        except Exception:
            return []
        if doc is None:
            return []
    if isinstance(doc, board_cache.BoardState):
        if doc.writable:
            rows = doc.recent_active(exclude, limit)
            return [SessionHit(r.session_id, r.topic, r.summary, r.status, r.updated_at, 0.0, True) for r in rows]
        try:
            from agentmem_vault.fs import decode_text

            doc = parse_index(decode_text(doc.data, vault.index_path))
        except Exception:
            return []
    return recent_active_sessions(doc.row_list(), exclude=exclude, limit=limit)  # type: ignore[attr-defined]


def session_start_context(
    vault: Vault,
    *,
    budget: int = 1500,
    doc: IndexDoc | board_cache.BoardState | None = None,
    exclude: tuple[str, ...] | list[str] = (),
    project_names: tuple[str, ...] | None = None,
    project_of: dict[str, str] | None = None,
    given: list | None = None,
) -> str:
    """Markdown (at most ``budget`` characters, "" when there is nothing to say) for additional_context.

    ``doc``: memory/index.md as the hook read it (its ``board_cache.BoardState``, or a parsed
    ``IndexDoc``), saving a read; ``exclude``: Session IDs not to list (the chat's own);
    ``project_names``: the chat's project (all its names, casefolded; ``()`` for an unknown
    project: global rules only; ``None``: no scoping); ``project_of``: Session ID -> project, to list
    the chat's own project's sessions first; ``given``: a list that receives what the text carries
    (``("note", record, shown)`` and ``("session", SessionHit)``, for the injection audit)."""
    try:
        rules = _rules_from_index(vault, project_names)
        sessions = _recent_from_board(vault, doc, tuple(exclude), MAX_SESSIONS * 4 if project_of else MAX_SESSIONS)
        sessions = _same_project_first(sessions, project_of, project_names)
        budget = max(0, int(budget))
        parts: list[str] = []
        picked: list[tuple] = []
        used = 0
        if rules:
            cap = int(budget * RULES_SHARE) if sessions else budget
            text = "## Long-term rules (agentmem)\n"
            n = 0
            for r in rules[:RULES_BUDGET]:
                # full text while it fits, then the rule's name only (the agent can look it up)
                for line, shown in ((render_rule(r), "rule"), (render_rule_title(r), "title")):
                    if len(text) + len(line) <= cap:
                        text += line
                        n += 1
                        picked.append(("note", r, shown))
                        break
            if n:
                parts.append(text)
                used += len(text)
        if sessions:
            text, n = _fit([render_session(s) for s in sessions], "## Recent active sessions\n", budget - used - 1)
            if n:
                parts.append(("\n" if parts else "") + text)
                picked += [("session", h) for h in sessions[:n]]
        out = "".join(parts).rstrip("\n")
        if given is not None:
            given += picked
        return out[:budget]
    except Exception:
        return ""


__all__ = ["recent_active_sessions", "session_start_context"]
