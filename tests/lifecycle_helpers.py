"""Builders for lifecycle/doctor tests: rows, snapshots and a byte-exact picture of memory/."""

from __future__ import annotations

import os
from pathlib import Path

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault
from agentmem_vault.board.rules import DEFAULT_KEYWORDS, DEFAULT_SUMMARY, DEFAULT_TOPIC

NOW = "2026-06-01T09:30"


def row(
    sid: str,
    status: str = "active",
    *,
    updated: str = "2026-05-31 09:00",
    refs: str = "-",
    summary: str | None = None,
    topic: str | None = None,
) -> it.Row:
    agent = sid[16:]
    if summary is None:
        summary = DEFAULT_SUMMARY if status == "idle" else f"做了一些事情 {sid[-6:]}"
    return it.Row(
        sid,
        agent,
        topic or (DEFAULT_TOPIC if status == "idle" else "主題 topic"),
        summary,
        DEFAULT_KEYWORDS,
        status,
        refs,
        "2026-05-01 08:00",
        updated,
    )


def write_index(vault: Vault, rows: list[it.Row], *, extra: str = "") -> None:
    text = it.new_index_text() + "".join(it.render_row(r) + "\n" for r in rows) + extra
    vault.index_path.write_text(text, encoding="utf-8")


def snapshot_text(
    sid: str,
    *,
    continues_from: list[str] = (),
    topic: str = "主題 topic",
    status: str = "active",
    updated: str = "2026-05-31 09:00",
) -> str:
    """A snapshot in step with ``row(sid)``'s defaults (Topic, Status, Updated At: docs/board.md)."""
    cf = "\n".join(f"- [[{s}]]" for s in continues_from) or "None"
    return (
        f"# Session: {sid}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Session ID | {sid} |\n"
        f"| Agent Name | {sid[16:]} |\n| Topic | {topic} |\n| Status | {status} |\n"
        f"| Started At | 2026-05-01 08:00 |\n| Updated At | {updated} |\n\n"
        f"## Current Context\n做了一些事情。\n\n## Decisions\n- 用 Python\n\n## Files / Artifacts\nNone\n\n"
        f"## Open Questions\nNone\n\n## Next Actions\nNone\n\n## Continues From\n{cf}\n\n"
        f"## Superseded / Resolved\nNone\n"
    )


def write_snapshot(vault: Vault, sid: str, **kw) -> Path:
    p = vault.session_path(sid)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(snapshot_text(sid, **kw), encoding="utf-8")
    return p


def picture(vault: Vault) -> dict[str, bytes | None]:
    """Every file and folder under memory/ except tool state, byte for byte."""
    out: dict[str, bytes | None] = {}
    for dirpath, _dirnames, filenames in os.walk(vault.memory):
        rel = Path(dirpath).relative_to(vault.memory)
        if rel.parts[:1] == (".agentmem",):
            continue
        out[str(rel) + "/"] = None
        for f in filenames:
            out[str(rel / f)] = (Path(dirpath) / f).read_bytes()
    return out


def index_rows(vault: Vault) -> dict[str, it.Row]:
    return {r.session_id: r for r in it.parse_index(vault.index_path.read_text(encoding="utf-8")).row_list()}
