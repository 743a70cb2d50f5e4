"""What each chat was given: the injection audit (``memory/.agentmem/injected.jsonl``; what a line
holds and how it is read back: docs/recall.md, "What a chat was given").

Bounded by ``ROTATE_BYTES`` (one rotated part). No prompt or task text is stored (it may hold a
secret). Best effort on the write side: an audit line that cannot be written never costs the chat
its context. Cheap to import (the hook path): json, os and fs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentmem_vault.recall.context import ContextResult
    from agentmem_vault.vault import Vault

FILE_NAME = "injected.jsonl"
OLD_NAME = "injected.1.jsonl"
ROTATE_BYTES = 512 * 1024
READ_LIMIT = 2 * ROTATE_BYTES  # per file: a foreign, oversized audit is read from its tail only


def audit_paths(vault: Vault) -> tuple[Path, Path]:
    """(the current file, the rotated one)."""
    return vault.state_dir / FILE_NAME, vault.state_dir / OLD_NAME


def note_entry(id: str, title: str, path: str, score: float, shown: str) -> dict:
    """One note as given: ``shown`` is how (``rule``, ``full``, ``brief``, ``title``, ``prompt``)."""
    return {"id": id, "title": title, "path": path, "score": round(float(score), 4), "shown": shown}


def session_entry(session_id: str, score: float) -> dict:
    return {"id": session_id, "score": round(float(score), 4)}


def from_given(given: list) -> tuple[list[dict], list[dict]]:
    """(notes, sessions) entries from what ``session_start_context`` reports it gave."""
    notes: list[dict] = []
    sessions: list[dict] = []
    for item in given:
        if item[0] == "note":
            r, shown = item[1], item[2]
            notes.append(note_entry(r.id, r.title, getattr(r, "path", ""), r.importance, shown))
        else:
            sessions.append(session_entry(item[1].session_id, item[1].relevance))
    return notes, sessions


def record_context(
    vault: Vault, res: ContextResult, source: str, *, session_id: str | None, agent: str, project: str | None
) -> bool:
    """Record a ``recall.context.ContextResult`` (``memory_context``, ``context --session``): what
    its Markdown holds, each note shown as a rule, in full or as one line."""
    notes = [
        note_entry(h.id or h.rel_path, h.title, h.rel_path, h.score, shown)
        for shown, hits in (("rule", res.rules), ("full", res.full), ("brief", res.brief))
        for h in hits
    ]
    return record(
        vault,
        source,
        session_id=session_id,
        agent=agent,
        project=project,
        budget=res.budget,
        chars=len(res.markdown),
        notes=notes,
        sessions=[session_entry(s.session_id, s.relevance) for s in res.sessions],
    )


def record(
    vault: Vault,
    source: str,
    *,
    session_id: str | None,
    conversation_id: str | None = None,
    agent: str | None = None,
    project: str | None = None,
    budget: int,
    chars: int,
    notes: list[dict],
    sessions: list[dict] | None = None,
    time: str | None = None,
) -> bool:
    """Append one audit line; False (and nothing raised) when it could not be written."""
    try:
        from agentmem_vault.ops.conversations import stamp
        from agentmem_vault.fs import append_line, make_dirs

        entry = {
            "time": time or stamp(),
            "source": source,
            "session_id": session_id,
            "conversation_id": conversation_id,
            "agent": agent,
            "project": project or None,
            "budget": int(budget),
            "chars": int(chars),
            "notes": notes,
            "sessions": sessions or [],
        }
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        path, old = audit_paths(vault)
        make_dirs(path.parent)
        _rotate_if_full(vault, path, old)
        append_line(path, line, durable=False)  # an audit line is worth no fsync on the hook path
        return True
    except Exception:  # noqa: BLE001 - the audit never breaks what it records
        return False


def _full(path: Path) -> bool:
    try:
        return os.stat(path).st_size >= ROTATE_BYTES
    except OSError:
        return False


def _rotate_if_full(vault: Vault, path: Path, old: Path) -> None:
    if not _full(path):
        return
    from agentmem_vault.locking import exclusive_lock

    with exclusive_lock(vault.lock_path("injected"), 2.0, what="the injection audit"):
        if _full(path):  # again under the lock: another process may have rotated it meanwhile
            os.replace(path, old)


def _read_tail(path: Path) -> bytes:
    from agentmem_vault.fs import read_from

    try:
        size = os.stat(path).st_size
    except OSError:
        return b""
    data = read_from(path, max(0, size - READ_LIMIT)) or b""
    if size > READ_LIMIT:
        data = data[data.find(b"\n") + 1 :]  # the first line read is cut: skip it
    return data


def entries(vault: Vault, key: str | None = None) -> list[dict]:
    """Audit entries, oldest first; with ``key``, only those for that Session ID or conversation ID."""
    out: list[dict] = []
    path, old = audit_paths(vault)
    needle = json.dumps(key, ensure_ascii=False).encode("utf-8") if key else b""
    for p in (old, path):
        for raw in _read_tail(p).splitlines():
            if needle and needle not in raw:
                continue  # most lines are other chats': not even parsed
            try:
                e = json.loads(raw)
            except ValueError:
                continue  # a line cut by a crash, or hand damage: the others still count
            if not isinstance(e, dict):
                continue
            if key and key not in (e.get("session_id"), e.get("conversation_id")):
                continue
            out.append(e)
    return out


def _ids(found: list[dict], field: str) -> list[str]:
    """The IDs of the notes or sessions (``field``) these entries carried, each once, first seen first
    (a hand-damaged item without one is passed over)."""
    items = (x for e in found for x in e.get(field) or [] if isinstance(x, dict))
    return list(dict.fromkeys(x["id"] for x in items if isinstance(x.get("id"), str) and x["id"]))


def given_note_ids(vault: Vault, keys: tuple[str, ...]) -> set[str]:
    """The IDs of every note any entry for these Session / conversation IDs carried."""
    return {i for key in dict.fromkeys(k for k in keys if k) for i in _ids(entries(vault, key), "notes")}


def injected(vault: Vault, session_id: str) -> dict:
    """``agentmem injected SESSION_ID``: everything that chat was given, oldest first, with the
    totals (distinct notes and sessions, characters)."""
    found = entries(vault, session_id)
    return {
        "session_id": session_id,
        "entries": found,
        "note_ids": _ids(found, "notes"),
        "session_ids": _ids(found, "sessions"),
        "chars": sum(int(e.get("chars") or 0) for e in found),
    }


def recent(vault: Vault, limit: int = 20) -> dict:
    """``agentmem injected`` without an ID: the chats that were given something, newest first,
    with how many injections, notes and characters each got (to find the ID to ask about)."""
    chats: dict[str, dict] = {}
    for e in reversed(entries(vault)):
        key = e.get("session_id") or e.get("conversation_id") or "(no session)"
        c = chats.setdefault(
            key,
            {"session_id": key, "last": e.get("time"), "injections": 0, "chars": 0, "notes": set(), "sources": set()},
        )
        c["injections"] += 1
        c["chars"] += int(e.get("chars") or 0)
        c["notes"].update(n.get("id") for n in e.get("notes") or [] if isinstance(n, dict) and n.get("id"))
        c["sources"].add(e.get("source"))
    rows = list(chats.values())[:limit]
    for c in rows:
        c["notes"], c["sources"] = len(c["notes"]), sorted(x for x in c["sources"] if x)
    return {"chats": rows}


def render_recent(result: dict) -> str:
    if not result["chats"]:
        return f"no injections recorded yet (memory/.agentmem/{FILE_NAME})"
    return "\n".join(
        f"{c['last'] or '?'}  {c['session_id']}  {c['injections']} injection(s), {c['notes']} note(s), "
        f"{c['chars']} chars  ({', '.join(c['sources'])})"
        for c in result["chats"]
    )


def render_injected(result: dict) -> str:
    """The human form of ``injected``: one block per injection."""
    sid = result["session_id"]
    if not result["entries"]:
        return f"no injections recorded for {sid} (memory/.agentmem/{FILE_NAME})"
    lines = [f"{sid}: {len(result['entries'])} injection(s), {result['chars']} characters in all"]
    for e in result["entries"]:
        where = f", project {e['project']}" if e.get("project") else ""
        lines.append(
            f"\n{e.get('time', '?')}  {e.get('source', '?')}  {e.get('chars', 0)}/{e.get('budget', 0)} chars{where}"
        )
        for n in e.get("notes") or []:
            lines.append(
                f"  note     {n.get('id') or '-':<10} {n.get('score', 0):.3f}  {n.get('shown', '')}  {n.get('title', '')}"
            )
        for s in e.get("sessions") or []:
            lines.append(f"  session  {s.get('id')}  {s.get('score', 0):.3f}")
        if not e.get("notes") and not e.get("sessions"):
            lines.append("  (nothing)")
    return "\n".join(lines)
