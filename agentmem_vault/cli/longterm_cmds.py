"""Long-term memory commands: ``extract``, ``eval``, ``memories list|show|deprecate``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from agentmem_vault.cli import Options, cli, command_options, emit, memories
from agentmem_vault.cli.recall_cmds import scope_options
from agentmem_vault.config import vault_config


@cli.command("extract")
@click.option("--session", "sessions", multiple=True, metavar="ID", help="A session snapshot (repeatable).")
@click.option("--cursor", is_flag=True, help="All Cursor agent transcripts under ~/.cursor/projects.")
@click.option("--claude", is_flag=True, help="All Claude Code transcripts under ~/.claude/projects.")
@click.option(
    "--file",
    "files",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="A transcript or text file (repeatable).",
)
@click.option(
    "--project",
    metavar="NAME",
    help="The project the memories of a --file that records no workspace belong to (without it they are unscoped).",
)
@click.option("--offline", is_flag=True, help="Rule-based extraction, no model calls (the default without an API key).")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option("--force", is_flag=True, help="Process sources again even when unchanged since the last run.")
@command_options
def extract_cmd(opts: Options, sessions, cursor, claude, files, project, offline, dry_run, force) -> None:
    """Extract long-term memories from sessions and transcripts (default: every session snapshot).

    Uses the Anthropic model when ANTHROPIC_API_KEY is set, the offline rules otherwise. Unchanged
    sources are skipped. Exit 1 when a source could not be read or a model call failed (what was
    extracted from the others is still written, and the failed sources are retried next run).
    """
    import dataclasses

    from agentmem_vault.longterm.extract import extract_sources, progress_wanted
    from agentmem_vault.longterm.sources import select_sources

    v = opts.open_vault()
    srcs = select_sources(v, sessions=sessions, files=files, cursor=cursor, claude=claude)
    if project:
        srcs = [
            s if s.project or s.workspace or s.kind == "session" else dataclasses.replace(s, project=project)
            for s in srcs
        ]
    if progress_wanted(len(srcs)):
        with click.progressbar(length=len(srcs), label="extracting", file=sys.stderr) as bar:
            report = extract_sources(
                v, srcs, offline=True if offline else None, dry_run=dry_run, force=force, progress=bar.update
            )
    else:
        report = extract_sources(v, srcs, offline=True if offline else None, dry_run=dry_run, force=force)
    emit(opts, report.to_dict(), report.summary)
    if report.errors:
        sys.exit(1)


class _FixtureSets(click.Choice):
    """``--set``: the built-in sets and "all", read when first needed (evaluate is slow to import)."""

    def __init__(self) -> None:
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from agentmem_vault.longterm.evaluate import BUILTIN_SETS

        return (*BUILTIN_SETS, "all")


@cli.command("eval")
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option(
    "--set",
    "sets",
    multiple=True,
    type=_FixtureSets(),
    help="A built-in fixture set (repeatable; default: tuned and unseen, reported separately).",
)
@click.option("--offline", is_flag=True, help="Evaluate the rule-based extractor even when a model is configured.")
@command_options
def eval_cmd(opts: Options, folder, sets, offline) -> None:
    """Precision / recall / F1 of extraction on labelled conversations, overall, per category and
    per language. FOLDER holds fixtures (*.json); without it the built-in sets are used: "tuned"
    (the rules were developed on it) and "unseen" (held out, never used to tune the rules).

    With a model configured (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN + ANTHROPIC_BASE_URL, or
    llm_base_url in config.yaml) and no --offline the model pipeline is evaluated, e.g.
    ANTHROPIC_API_KEY=... agentmem eval --set all
    """
    from agentmem_vault.config import DEFAULTS
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.longterm.evaluate import BUILTIN_SETS, builtin_set, evaluate, load_fixtures
    from agentmem_vault.longterm.llm import endpoint_from, model_from_config

    prompts_dir = where = None
    try:
        v = opts.open_vault()
        cfg = vault_config(v)
        prompts_dir, where = v.state_dir / "prompts", v.config_path
    except AgentmemError:
        cfg = dict(DEFAULTS)  # eval needs no vault; config only tunes the model
    endpoint = None if offline else endpoint_from(cfg, where)
    model = model_from_config(cfg, endpoint, prompts_dir=prompts_dir) if endpoint else None
    min_score = int(cfg.get("min_score", 4))
    if folder:
        report = evaluate(load_fixtures(Path(folder)), model=model, min_score=min_score)
        emit(opts, report.to_dict(), report.table)
        return
    names = list(BUILTIN_SETS) if "all" in sets else list(dict.fromkeys(sets)) or ["tuned", "unseen"]
    reports = {n: evaluate(load_fixtures(builtin_set(n)), model=model, min_score=min_score) for n in names}

    def human() -> str:
        blocks = [[f"== {n} ==", *r.breakdown_lines(), r.summary_line()] for n, r in reports.items()]
        return "\n\n".join("\n".join(b) for b in blocks)

    emit(opts, {"sets": {n: r.to_dict() for n, r in reports.items()}}, human)


@memories.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include deprecated memories.")
@click.option("--category", help="Only this category.")
@scope_options
@command_options
def memories_list(opts: Options, show_all, category, project, all_projects, module) -> None:
    """List long-term memories (newest first): this folder's project's and the global ones."""
    from agentmem_vault.longterm.memories import list_memories
    from agentmem_vault.recall.scoping import resolve_scope

    v = opts.open_vault()
    scope = resolve_scope(v, project=project, all_projects=all_projects)
    res = list_memories(v, include_deprecated=show_all, category=category, project=scope.names, module=module)
    res.scope = scope.to_dict()
    rows, broken = res.rows(), res.broken

    def human() -> str:
        lines = [
            f"{r['id']:<9}  {r['score']}  {r['category']:<34}  {r['title']}"
            + ("  (deprecated)" if r["status"] == "deprecated" else "")
            + (f"  ({r['applies']})" if scope.names is None or r["applies"] == "global" else "")
            for r in rows
        ]
        if not rows:
            where = (
                f"of project {scope.project} or global ones"
                if scope.project
                else "that apply everywhere (no project here)"
            )
            lines.append(f"No long-term memories {where}." if res.hidden else "No long-term memories yet.")
        if res.hidden:
            lines.append(f"({res.hidden} of other projects or unscoped not shown: --all-projects lists them)")
        if broken:
            lines.append(
                f"({len(broken)} note(s) with unreadable frontmatter skipped: {', '.join(p.name for p in broken[:5])})"
            )
        return "\n".join(lines)

    emit(opts, res.to_dict(), human)


@memories.command("show")
@click.argument("key")
@command_options
def memories_show(opts: Options, key) -> None:
    """Show one memory by ID, title or file name."""
    from agentmem_vault.longterm.memories import get_memory, memory_dict, memory_markdown

    # not found is a failure (exit 1), like `agentmem show` of an unknown Session ID
    note = get_memory(opts.open_vault(), key)
    emit(opts, memory_dict(note), lambda: memory_markdown(note).rstrip("\n"))


@memories.command("deprecate")
@click.argument("key")
@click.option("--reason", required=True, help="Why the memory no longer holds.")
@click.option("--dry-run", is_flag=True, help="Show the change; write nothing.")
@command_options
def memories_deprecate(opts: Options, key, reason, dry_run) -> None:
    """Mark a memory deprecated (the file is kept, with the reason)."""
    from agentmem_vault.longterm.curate import deprecate_memory
    from agentmem_vault.longterm.memories import note_row

    v = opts.open_vault()
    note = deprecate_memory(v, key, reason, dry_run=dry_run)
    emit(
        opts,
        {**note_row(note), "deprecated_reason": note.deprecated_reason, "dry_run": dry_run},
        f"{'Would deprecate' if dry_run else 'Deprecated'} {note.id} {note.title!r}: {note.deprecated_reason}",
    )


@memories.command("move")
@click.argument("key")
@click.option("--project", help="Give the memory to this project (it is shown in its chats only).")
@click.option("--global", "to_global", is_flag=True, help="Make the memory apply in every project.")
@click.option("--dry-run", is_flag=True, help="Show the change; write nothing.")
@command_options
def memories_move(opts: Options, key, project, to_global, dry_run) -> None:
    """Re-scope a memory: to one project (--project NAME) or to every project (--global)."""
    from agentmem_vault.longterm.curate import move_memory
    from agentmem_vault.longterm.memories import note_row

    note = move_memory(opts.open_vault(), key, project=project, to_global=to_global, dry_run=dry_run)
    where = f"project {note.project}" if note.scope != "global" and note.project else "every project (global)"
    emit(
        opts,
        {**note_row(note), "project": note.project or None, "scope": note.scope, "dry_run": dry_run},
        f"{'Would move' if dry_run else 'Moved'} {note.id} {note.title!r} to {where}",
    )
