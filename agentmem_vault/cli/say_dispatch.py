"""``say``: run a routed trigger phrase through the library (front end only).

``model/triggers.py`` turns text into a Route (pure); this module maps a Route onto one library
call per command and returns (JSON result, human line). Every result is a dataclass with
``to_dict()`` and a ``message`` or renderer, so ``say`` prints exactly what the command itself prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agentmem_vault.vault import Vault
from agentmem_vault.errors import UsageError
from agentmem_vault.model.ids import validate_session_id
from agentmem_vault.model.triggers import Route
from agentmem_vault.ops import archive, lifecycle, sessions


@dataclass
class SayOptions:
    id_arg: str | None = None
    session: str | None = None
    snapshot_text: str | None = None
    topic: str | None = None
    summary: str | None = None
    keywords: str | None = None
    agent: str | None = None
    stale_days: int | None = None
    dry_run: bool = False
    force: bool = False


def _current_session(opts: SayOptions, extra: list[str]) -> str | None:
    cand = opts.session or (extra[0] if extra else None) or os.environ.get("AGENTMEM_SESSION_ID")
    return validate_session_id(cand) if cand else None


NO_SESSION_HINT = (
    "which session is this? Pass it as ID / --session ID. If the hook's context with "
    "'Your Memory Session ID is: …' is missing, find it with `agentmem whoami --conversation <id>`, "
    "else register with `agentmem register --manual`"
)


def dispatch(vault: Vault, r: Route, opts: SayOptions) -> tuple[dict, str]:
    """Run the routed command through the library; returns (JSON result, human summary)."""
    ids = list(r.ids)
    if opts.id_arg:
        sid = validate_session_id(opts.id_arg)
        if sid not in ids:
            ids.insert(0, sid)
    head = {"command": r.command, "phrase": r.phrase}
    # what register and update take from the options alike
    given: dict[str, Any] = {
        "topic": opts.topic,
        "summary": opts.summary,
        "keywords": opts.keywords,
        "snapshot_text": opts.snapshot_text,
        "workspace": os.getcwd(),
    }

    if r.command == "register":
        if ids:
            raise UsageError(
                f"registration creates a new Session ID; {ids[0]} already exists in your text — "
                f"use `agentmem update {ids[0]}` (狀態更新) for a session you know"
            )
        reg = sessions.register_manual(vault, opts.agent or "", **given)
        return ({**head, "session_id": reg.session_id, "row": reg.row.to_dict(), "message": reg.message}, reg.message)

    if r.command == "update":
        target = ids[0] if ids else _current_session(opts, [])
        if not target:
            raise UsageError(NO_SESSION_HINT)
        res = sessions.update_session(vault, target, **given)
        return ({**head, "session_id": target, "result": res.to_dict()}, res.message)

    if r.command in ("continue", "release"):
        if not ids:
            raise UsageError(f'{r.command}: name the source Session ID, e.g. `agentmem say "{r.phrase} <SOURCE-ID>"`')
        source, rest = ids[0], ids[1:]
        cur = _current_session(opts, rest)
        if r.command == "continue":
            cres = sessions.continue_session(
                vault, source, session_id=cur, agent=opts.agent, snapshot_text=opts.snapshot_text
            )
            return ({**head, "source": source, "session_id": cres.session_id, "result": cres.to_dict()}, cres.message)
        if not cur:
            raise UsageError("release: " + NO_SESSION_HINT)
        rres = sessions.release_reference(vault, source, session_id=cur)
        return ({**head, "source": source, "session_id": cur, "result": rres.to_dict()}, rres.message)

    if r.command == "organize":
        plan = lifecycle.organize(vault, stale_days=opts.stale_days, dry_run=opts.dry_run)
        return ({**head, **plan.to_dict()}, lifecycle.render_organize(plan, dry_run=opts.dry_run))

    if r.command == "archive":
        if not ids:
            raise UsageError('archive: name the Session ID to archive, e.g. `agentmem say "封存 memory session <ID>"`')
        if len(ids) > 1:
            raise UsageError(f"archive one session at a time (the text names {', '.join(ids)})")
        res2 = archive.archive(vault, ids[0], force=opts.force, dry_run=opts.dry_run)
        return ({**head, **res2.to_dict()}, archive.render_archive(res2))

    raise UsageError(f"no dispatch for {r.command}")  # pragma: no cover - COMMANDS is closed
