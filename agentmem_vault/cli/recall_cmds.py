"""context, memories search, injected, reindex: thin commands over agentmem_vault.recall."""

from __future__ import annotations

import click

from agentmem_vault.cli import Options, cli, command_options, emit, memories


def scope_options(f):  # type: ignore[no-untyped-def]
    """--project, --all-projects and --module (docs/projects.md), for every command that lists memories."""
    f = click.option("--module", help="Only memories of this module (and those that name none).")(f)
    f = click.option(
        "--all-projects",
        is_flag=True,
        help="Memories of every project (default: this folder's project and the global ones).",
    )(f)
    f = click.option(
        "--project", help="Memories of this project and the global ones (default: the current folder's project)."
    )(f)
    return f


@cli.command()
@click.argument("task")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Most memories to list (rules not counted).",
)
@click.option(
    "--budget", type=click.IntRange(min=1), default=4000, show_default=True, help="Most characters of Markdown."
)
@click.option(
    "--explain", is_flag=True, help="Say why each memory was chosen or left out (score parts, scope, budget)."
)
@click.option("--session", "session_id", metavar="ID", help="Record what this gives in ID's injection audit.")
@scope_options
@command_options
def context(
    opts: Options,
    task: str,
    limit: int,
    budget: int,
    explain: bool,
    session_id: str | None,
    project: str | None,
    all_projects: bool,
    module: str | None,
) -> None:
    """Markdown of the memories and sessions relevant to TASK, for the start of a new chat.

    Rules (importance >= 0.9) always come first; then the strongest memories in full, the rest one
    line each, and the sessions you may continue. The output never exceeds --budget characters."""
    from agentmem_vault.recall.context import build_context
    from agentmem_vault.recall.scoping import resolve_scope

    v = opts.open_vault()
    scope = resolve_scope(v, project=project, all_projects=all_projects)
    res = build_context(v, task, limit=limit, budget=budget, project=scope.names, module=module, scope=scope.to_dict())
    if session_id:
        from agentmem_vault.model.ids import validate_session_id
        from agentmem_vault.recall import audit

        audit.record_context(
            v, res, "context", session_id=validate_session_id(session_id), agent="cli", project=scope.project
        )
    if not explain:
        emit(opts, res.to_dict(), lambda: res.markdown.rstrip("\n"))
        return
    from agentmem_vault.recall.explain import explain as why, render_explain
    from agentmem_vault.recall.rank import search

    others = search(v, task, limit=limit, module=module) if scope.names is not None else []
    ex = why(res, others)
    emit(opts, {**res.to_dict(), "explain": ex}, lambda: res.markdown.rstrip("\n") + "\n\n" + render_explain(ex))


@memories.command("search")
@click.argument("query")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True, help="Most hits to list.")
@click.option("--include-deprecated", is_flag=True, help="Also search deprecated memories.")
@scope_options
@command_options
def memories_search(
    opts: Options,
    query: str,
    limit: int,
    include_deprecated: bool,
    project: str | None,
    all_projects: bool,
    module: str | None,
) -> None:
    """Long-term memories ranked for QUERY (keywords, recency, importance), with their scores."""
    from agentmem_vault.errors import UsageError
    from agentmem_vault.recall.rank import search
    from agentmem_vault.recall.scoping import resolve_scope

    if not query.strip():
        raise UsageError("QUERY is empty")
    v = opts.open_vault()
    scope = resolve_scope(v, project=project, all_projects=all_projects)
    hits = search(v, query, limit=limit, project=scope.names, module=module, include_deprecated=include_deprecated)

    table = "\n".join(f"{h.score:.3f}  {h.id or '-':<10}  {h.title}  ({h.rel_path})" for h in hits)
    emit(opts, [h.to_dict(with_content=False) for h in hits], table or "no matching memories")


@cli.command()
@command_options
def reindex(opts: Options) -> None:
    """Rebuild the derived recall index (memory/.agentmem/recall/) from the notes."""
    from agentmem_vault.recall.index import reindex as rebuild

    stats = rebuild(opts.open_vault())
    where = "in memory (state folder not writable)" if stats.in_memory else "memory/.agentmem/recall/"
    lines = [f"indexed {stats.total} notes in {stats.seconds:.2f}s ({where})"]
    lines += [f"warning: {e['path']}: {e['error']}" for e in stats.errors]
    emit(opts, stats.to_dict(), "\n".join(lines))


@cli.command()
@click.argument("session_id", required=False)
@command_options
def injected(opts: Options, session_id: str | None) -> None:
    """What a chat was given: every sessionStart context, prompt-time recall and memory_context
    answer recorded for SESSION_ID (its Memory Session ID, or the agent's conversation ID), with
    note and session IDs, scores, characters and budget. Without SESSION_ID: the chats given
    something lately, newest first."""
    from agentmem_vault.errors import UsageError
    from agentmem_vault.recall import audit

    v = opts.open_vault()
    if session_id is None:
        chats = audit.recent(v)
        emit(opts, chats, lambda: audit.render_recent(chats))
        return
    if not session_id.strip():
        raise UsageError("SESSION_ID is empty")
    res = audit.injected(v, session_id.strip())
    emit(opts, res, lambda: audit.render_injected(res))
