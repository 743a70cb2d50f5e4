"""What the MCP tools' parameters and results look like to a client: the parameter types with
their descriptions, the output schemas (the keys a caller can rely on; results carry more, errors
are ``{"error": ...}``) and the annotations that let a client auto-approve reads."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

# None of our tools reaches outside the vault, except memory_remember when an Anthropic API key is
# configured.
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def writes(*, destructive: bool, idempotent: bool, open_world: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=open_world
    )


SessionId = Annotated[str, Field(description="A Memory Session ID, e.g. 2026-05-25-1318-cursor-main-agent.")]
Snapshot = Annotated[
    str | None,
    Field(
        description=(
            "The session snapshot as Markdown in the template (## Current Context, ## Decisions, ## Files / Artifacts, "
            "## Open Questions, ## Next Actions, ## Continues From, ## Superseded / Resolved). It is merged section by "
            "section, never overwriting: send what this chat knows; mark finished items [done] / [resolved] / [superseded] "
            "instead of deleting them."
        )
    ),
]
Topic = Annotated[str | None, Field(description="Short topic of the session (the board's Topic column).")]
Summary = Annotated[str | None, Field(description="One or two factual sentences for the board's Summary column.")]
Keywords = Annotated[str | None, Field(description="Comma-separated keywords for the board, e.g. 'mcp, installer'.")]
Project = Annotated[
    str | None,
    Field(
        description="Project name to scope long-term memories to (notes of other projects are left out; notes without a project always count)."
    ),
]
DryRun = Annotated[bool, Field(description="True: compute and return the plan, write nothing.")]


class SessionOut(TypedDict):
    session_id: str


class OrganizeOut(TypedDict):
    deleted: list[str]
    marked_stale: list[str]
    kept_active: list[str]
    protected: list[str]
    inconsistent: list[str]
    dry_run: bool


class RowsOut(TypedDict):
    rows: list[dict[str, Any]]


class HitsOut(TypedDict):
    hits: list[dict[str, Any]]


class ContextOut(TypedDict):
    task: str
    markdown: str


class RememberOut(TypedDict):
    outcome: Literal["create", "update", "ignore"]
    actions: list[dict[str, Any]]


class DeprecateOut(TypedDict):
    id: str
    status: str
