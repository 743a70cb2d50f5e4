"""Carry out a reconcile plan through ``BoardWriter`` (lock, re-read, atomic write, verify, journal).

The caller holds the writer (and so the vault lock) and passes a plan computed from the index text
read under that same lock. Each action is applied on its own: one that fails is recorded and the
others still go through. What was written is returned with its content hash so that the service
can recognise its own writes when their file-system events come back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentmem_vault.errors import AgentmemError
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.backups import conflict_destination
from agentmem_vault.fs import read_bytes
from agentmem_vault.daemon.reconcile import Action, AddRow, FoldConflict, Plan
from agentmem_vault.daemon.scan import INDEX, sha_of


@dataclass
class Applied:
    done: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    written: dict[str, str | None] = field(default_factory=dict)  # rel path -> sha now (None = gone)


def _apply_one(w: BoardWriter, action: Action) -> dict:
    vault = w.vault
    if isinstance(action, FoldConflict):
        if w.index_text() != action.base_text:
            raise AgentmemError("memory/index.md changed since the fold was planned; it is re-planned on the next pass")
        if action.new_text != action.base_text:
            w.write_index_text(
                action.new_text,
                reason="fold_conflict",
                copy=action.copy,
                added=list(action.added),
                updated=list(action.updated),
            )
        moved_to = None
        if action.move:
            src = vault.memory / action.copy
            data = read_bytes(src)
            if data is None:
                raise AgentmemError(f"memory/{action.copy} disappeared before it could be moved")
            if action.copy_sha is not None and sha_of(data) != action.copy_sha:
                raise AgentmemError(
                    f"memory/{action.copy} changed while it was folded; it is folded again on the next pass"
                )
            dst = conflict_destination(vault.state_dir, src.name)
            w.move_file(src, dst)
            moved_to = str(dst.relative_to(vault.memory).as_posix())
        return {
            "action": "fold_conflict",
            "copy": action.copy,
            "added": list(action.added),
            "updated": list(action.updated),
            "moved_to": moved_to,
        }
    if isinstance(action, AddRow):
        w.append_row(action.row)
        return {"action": "add_row", "session_id": action.row.session_id}
    before, after = action.before, action.after  # a SyncRow
    # Only when the row is still what the plan saw: a concurrent CLI update wins.
    old, new = w.update_row(before.session_id, lambda r: after if r == before else r)
    return {
        "action": "sync_row" if old != new else "sync_skipped",
        "session_id": before.session_id,
        "fields": {k: v for k, v in after.to_dict().items() if before.to_dict()[k] != v},
    }


def apply_plan(w: BoardWriter, plan: Plan) -> Applied:
    out = Applied()
    for action in plan.actions:
        try:
            out.done.append(_apply_one(w, action))
            if isinstance(action, FoldConflict) and action.move:
                out.written[action.copy] = None
        except (AgentmemError, OSError) as exc:
            error = getattr(exc, "message", str(exc))
            out.errors.append({"action": action.kind, "error": error, "code": getattr(exc, "code", type(exc).__name__)})
            if isinstance(action, FoldConflict):
                break  # later actions were planned on the folded text
    data = read_bytes(w.vault.index_path)
    if data is not None:
        out.written[INDEX] = sha_of(data)
    return out
