"""``remember``: the user explicitly asks to keep something as a long-term memory.

The text is one user turn that says "remember: ..." and goes through the extraction pipeline
unchanged (candidates, assessment, quality filters, in-batch de-duplication, curation against the
existing notes), so an explicit request is held to the same bar as extraction and can only
create, update (old text kept in the note's history) or be ignored; it never writes a second copy
of what is already known. See docs/mcp.md.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from agentmem_vault.vault import Vault
from agentmem_vault.config import vault_config
from agentmem_vault.errors import ConfigError, UsageError
from agentmem_vault.longterm.curate import notes_to_write, plan_curation
from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.llm import MemoryModel, endpoint_from, model_from_config
from agentmem_vault.longterm.notes import load_notes, note_now, write_note
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.model.ids import validate_session_id
from agentmem_vault.recall.refresh import NoteWriter

MAX_TEXT = 8_000  # characters: one knowledge point, not a document

# Text that already says "remember" (any language the offline rules know) is passed as it is.
_ALREADY_ASKS = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note for (?:the )?future|from now on)\b|^\s*(?:請|请|帮我|幫我)?(?:記住|记住|記得|记得)",
    re.IGNORECASE,
)


@dataclass
class RememberResult:
    dry_run: bool
    mode: str  # "offline" | "model"
    actions: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """create / update / ignore: what happened to the request as a whole."""
        kinds = {a["action"] for a in self.actions}
        return "create" if "create" in kinds else "update" if "update" in kinds else "ignore"

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, **asdict(self)}


def as_request(text: str) -> str:
    """The user's words as an explicit request, the way the extractor recognises one."""
    return text if _ALREADY_ASKS.search(text) else f"Remember: {text}"


def remember(
    vault: Vault,
    text: str,
    *,
    project: str = "",
    session_id: str | None = None,
    dry_run: bool = False,
    offline: bool | None = None,
    model: MemoryModel | None = None,
) -> RememberResult:
    """Keep ``text`` as a long-term memory if it passes extraction's bar (see module doc)."""
    from agentmem_vault.redaction import redact_text

    text = redact_text((text or "").strip())  # before any field is derived from it (docs/redaction.md)
    if not text:
        raise UsageError("nothing to remember: the text is empty")
    if len(text) > MAX_TEXT:
        raise UsageError(
            f"the text is {len(text):,} characters, over the {MAX_TEXT:,} limit: give one knowledge point at a time"
        )
    ref = f"[[{validate_session_id(session_id)}]]" if session_id else ""
    cfg = vault_config(vault)
    try:
        min_score = int(cfg.get("min_score", 4))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad min_score in {vault.config_path}: {exc}") from exc
    if model is None and offline is not True:
        endpoint = endpoint_from(cfg, vault.config_path)
        model = model_from_config(cfg, endpoint, prompts_dir=vault.state_dir / "prompts") if endpoint else None
    kept, skipped, errors, _usage = memories_from_turns(
        [Turn("user", as_request(text))], model=model, ref=ref, project=project, min_score=min_score
    )
    result = RememberResult(
        dry_run=dry_run, mode="offline" if model is None else "model", skipped=skipped, errors=errors
    )
    now = note_now()
    if dry_run or not kept:
        actions = plan_curation(kept, load_notes(vault), now=now, folder=vault.longterm_dir)
    else:
        with NoteWriter(vault, "remember") as w:
            actions = plan_curation(kept, load_notes(vault), now=now, folder=vault.longterm_dir)
            vault.longterm_dir.mkdir(parents=True, exist_ok=True)
            for note in notes_to_write(actions):
                write_note(w, vault, note)
    result.actions = [a.to_dict() for a in actions]
    if not actions:
        reasons = (
            "; ".join(s.get("reason", "") for s in skipped) or "no durable rule, preference or fact found in the text"
        )
        result.actions = [{"action": "ignore", "title": text[:80], "reason": reasons}]
    return result
