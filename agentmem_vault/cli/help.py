"""``--help`` layout: commands grouped by what they are for, summaries never cut off, and the
trigger phrases under ``say --help``.

click lists a group's commands flat and cuts each summary at 45 characters; a new user reading
``agentmem --help`` needs to see where to start, so the root group lists them by area instead.
A command that is not in ``SECTIONS`` (added later by another area) is still listed, under "Other".
"""

from __future__ import annotations

import click

# (heading, command names) in the order a new user meets them.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("Board", "init list show find register whoami"),
    ("Sessions", "update continue release say"),
    ("Lifecycle", "organize archive journal restore"),
    ("Long-term memory", "memories extract eval context injected reindex"),
    (
        "Hooks and integrations",
        "setup install-hook install-rules install-mcp mcp install-merge-driver hook merge-driver",
    ),
    ("Daemon", "daemon"),
    ("Maintenance", "doctor completion"),
)


def short_help(cmd: click.Command) -> str:
    """The command's first sentence, whole (click would cut it at 45 characters)."""
    return cmd.get_short_help_str(limit=10_000)


def format_commands(group: click.Group, ctx: click.Context, formatter: click.HelpFormatter, *, grouped: bool) -> None:
    commands: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is not None and not cmd.hidden:
            commands[name] = cmd
    if not commands:
        return
    if not grouped:
        with formatter.section("Commands"):
            formatter.write_dl([(n, short_help(c)) for n, c in commands.items()])
        return
    for heading, section in SECTIONS:
        rows = [(n, short_help(commands[n])) for n in section.split() if n in commands]
        if rows:
            with formatter.section(heading):
                formatter.write_dl(rows)
    placed = {n for _, section in SECTIONS for n in section.split()}
    rest = [(n, short_help(c)) for n, c in commands.items() if n not in placed]
    if rest:
        with formatter.section("Other"):
            formatter.write_dl(rest)


class SayCommand(click.Command):
    """``say``: its help ends with every trigger phrase, grouped by the command it runs (read from
    templates/triggers.yaml, so the list is never out of date)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from agentmem_vault.model.triggers import phrase_groups

        with formatter.section("Phrases (Traditional · Simplified · English; case and spaces do not matter)"):
            for command_line, entries in phrase_groups():
                formatter.write_text(command_line)
                with formatter.indentation():
                    for forms in entries:
                        # One entry per line, never re-wrapped in the middle of a phrase.
                        formatter.write(" " * formatter.current_indent + " · ".join(forms) + "\n")
        super().format_epilog(ctx, formatter)
