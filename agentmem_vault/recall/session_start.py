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
from agentmem_vault.board.table import IndexDoc, parse_index
from agentmem_vault.board import summary
from agentmem_vault.board.rules import OFFERED, active_order
from agentmem_vault.board.rules import offered_sessions as rules_offered
from agentmem_vault.board.summary import BoardState
from agentmem_vault.ops.conversations import projects_of_sessions
from agentmem_vault.recall.location import RULE_IMPORTANCE, RULES_LIMIT, RULES_SQL, RULES_VERSION, db_path, rules_path
from agentmem_vault.recall.render import (
    RULES_BUDGET,
    SessionHit,
    _fit,
    render_rule,
    render_rule_title,
    render_session,
)

RULES_SHARE = 0.7
RULES_FILE_BYTES = 4 << 20  # rules.json holds at most RULES_LIMIT rows
MAX_RULES = 12


def _rules_summary(vault: Vault, index_stat: os.stat_result) -> list | None:
    """The rule rows from rules.json when it was written for the index file as it is now."""
    from agentmem_vault.fs import load_cache

    got = load_cache(rules_path(vault), RULES_VERSION, limit=RULES_FILE_BYTES)
    if got is not None and got[0] == [index_stat.st_mtime_ns, index_stat.st_size] and isinstance(got[1], list):
        return got[1]
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

        from pathlib import Path

        from agentmem_vault.errors import AgentmemError
        from agentmem_vault.fs import check_database

        try:
            conn = sqlite3.connect(f"{Path(check_database(path)).as_uri()}?mode=ro", uri=True, timeout=0.2)
        except (sqlite3.Error, AgentmemError):
            return []  # no index, or a FIFO / device / link out where it belongs
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


def offered_sessions(
    vault: Vault,
    doc: IndexDoc | BoardState | None,
    *,
    exclude: tuple[str, ...] = (),
    project_names: tuple[str, ...] | None = None,
    limit: int = OFFERED,
) -> list[SessionHit]:
    """The sessions a new chat is offered (``rules.offered_sessions``, one rule for every board):
    from the hook's board summary (no row parsed, the projects of its active sessions known), a
    parsed board, or else the board on disk. ``project_names`` None: no project scoping; else the
    chat's project's names (``()``: its project is unknown)."""
    if doc is None:
        try:
            doc = summary.load(vault)
        except Exception:
            return []
        if doc is None:
            return []
    if isinstance(doc, BoardState) and not doc.writable:
        try:
            from agentmem_vault.fs import decode_text

            doc = parse_index(decode_text(doc.data, vault.index_path))
        except Exception:
            return []
    if isinstance(doc, BoardState):
        state, active = doc, doc.entries()
    else:
        state = None
        projects = projects_of_sessions(vault) if project_names is not None else {}
        active = ((e[1], e[2], projects.get(e[1])) for e in active_order((r, -1) for r in doc.row_list()))
    out: list[SessionHit] = []
    for sid, at, _ in rules_offered(active, project_names, exclude=exclude, limit=limit):
        r = state.row(sid, at) if state is not None else doc.find(sid)  # type: ignore[union-attr]
        if r is not None:
            out.append(SessionHit(r.session_id, r.topic, r.summary, r.status, r.updated_at, 0.0, True))
    return out


def session_start_context(
    vault: Vault,
    *,
    budget: int = 1500,
    doc: IndexDoc | BoardState | None = None,
    exclude: tuple[str, ...] | list[str] = (),
    project_names: tuple[str, ...] | None = None,
    given: list | None = None,
) -> str:
    """Markdown (at most ``budget`` characters, "" when there is nothing to say) for additional_context.

    ``doc``: memory/index.md as the hook read it (its ``summary.BoardState``, or a parsed
    ``IndexDoc``), saving a read; ``exclude``: Session IDs not to list (the chat's own);
    ``project_names``: the chat's project (all its names, casefolded; ``()`` for an unknown
    project: global rules only, sessions of unknown project; ``None``: no scoping); ``given``: a
    list that receives what the text carries (``("note", record, shown)`` and ``("session",
    SessionHit)``, for the injection audit)."""
    try:
        rules = _rules_from_index(vault, project_names)
        sessions = offered_sessions(vault, doc, exclude=tuple(exclude), project_names=project_names)
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


__all__ = ["offered_sessions", "session_start_context"]
