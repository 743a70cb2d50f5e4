"""The ``agentmem`` click group: thin commands over the library.

Each area registers its commands from its own module (imported at the bottom) so that the
command-line surface can be read room by room. Library errors become messages and exit codes here
and nowhere else: 0 done, 1 refused or failed (nothing half-written), 2 usage error.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import click

from agentmem_vault.errors import AgentmemError, UsageError

if TYPE_CHECKING:
    from agentmem_vault.vault import Vault


@dataclass
class Options:
    vault: str | None = None
    as_json: bool = False
    agent: str | None = None
    allow_agent_name: bool = False

    def open_vault(self) -> Vault:
        """The vault of ``--vault`` (before or after the command), else AGENTMEM_VAULT, config, walk up."""
        from agentmem_vault.config import resolve_vault

        return resolve_vault(self.vault)

    def agent_name(self, vault: Vault, given: str | None = None) -> str:
        """The agent's name: ``given`` (a command's own --agent), else the group's, else config."""
        from agentmem_vault.config import resolve_agent, vault_config

        return resolve_agent(given or self.agent, vault_config(vault), allow_any=self.allow_agent_name)


def command_options(f: Callable) -> Callable:
    """``--vault`` and ``--json`` on every command (also accepted before the command name); the
    command gets the group's ``Options`` with its own ``--vault``/``--json`` laid over them as its
    first argument."""

    @functools.wraps(f)
    @click.pass_context
    def wrapper(ctx: click.Context, *args: Any, vault: str | None = None, as_json: bool = False, **kw: Any) -> Any:
        opts: Options = ctx.find_object(Options) or Options()
        opts.vault = vault or opts.vault
        opts.as_json = as_json or opts.as_json
        return f(opts, *args, **kw)

    wrapper = click.option("--json", "as_json", is_flag=True, help="Machine-readable result on stdout.")(wrapper)
    vault_help = "Vault folder (the one that holds memory/)."
    return click.option("--vault", "vault", type=click.Path(file_okay=False), help=vault_help)(wrapper)


def dry_run_option(f: Callable) -> Callable:
    """``--dry-run`` for a command whose library has none: the command runs as it would, inside
    ``fs.DryRun``, so nothing at all is written (vault, user cache, user config), and what it would
    have changed is listed after its own output (on stderr with --json, so stdout stays JSON)."""

    @functools.wraps(f)
    def wrapper(*args: Any, dry_run: bool = False, **kwargs: Any) -> Any:
        if not dry_run:
            return f(*args, **kwargs)
        return run_dry(lambda: f(*args, **kwargs))

    return click.option("--dry-run", is_flag=True, help="Run it as a preview: write nothing, list what would change.")(
        wrapper
    )


def run_dry(fn: Callable[[], Any], *, enabled: bool = True) -> Any:
    """``fn()`` inside ``fs.DryRun`` (when ``enabled``), then the line saying what it would change."""
    if not enabled:
        return fn()
    from agentmem_vault.fs import DryRun

    ctx = click.get_current_context()
    with DryRun() as d:
        out = fn()
    changed = d.changed()
    line = "dry run: nothing was written" + (f"; it would change: {', '.join(changed)}" if changed else "")
    err = _json_requested(ctx)
    ctx.call_on_close(lambda: click.echo(line, err=err))  # after the command's own output
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")


def to_json(obj: Any, **kw: Any) -> str:
    """JSON text that is valid UTF-8 even when a path holds non-UTF-8 bytes (read with
    surrogateescape): those become ``\\uDCxx`` escapes, which only occur inside strings."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(obj, ensure_ascii=False, default=str, **kw))


def emit(opts: Options, result: Any, human: str | Callable[[], str] | None = None) -> None:
    """Print the result: JSON with --json, else the human summary."""
    if opts.as_json:
        click.echo(to_json(result, indent=2))
    else:
        text = human() if callable(human) else human
        if text:
            click.echo(text)


def render_install(res: dict, details: list[str]) -> str:
    """An installer's answer (install-hook, install-mcp): the file and what became of it, the
    ``details`` lines, the backup of the previous file and the notes."""
    state = "created" if res["created"] else "updated" if res["changed"] else "already up to date"
    backup = [f"  previous file backed up to {res['backup']}"] if res["backup"] else []
    return "\n".join([f"{res['file']}: {state}", *details, *backup, *(f"  note: {n}" for n in res["notes"])])


def fail(as_json: bool, exc: AgentmemError) -> None:
    if as_json:
        click.echo(to_json({"error": exc.to_dict()}))
    else:
        click.echo(f"error: {exc.message}", err=True)
    sys.exit(exc.exit_code)


# The command line of the current run (set by AgentmemGroup.main; sys.argv when called otherwise).
_ARGV: list[str] | None = None


def _json_requested(ctx: click.Context) -> bool:
    """--json may sit before or after the sub-command; a failing sub-context may not have parsed it."""
    opts = ctx.find_object(Options)
    if opts is not None and opts.as_json:
        return True
    argv = _ARGV if _ARGV is not None else sys.argv[1:]
    return "--json" in (argv[: argv.index("--")] if "--" in argv else argv)


class AgentmemGroup(click.Group):
    """Turns library errors into messages and exit codes (the only place that does), and imports
    a command's module only when that command runs: `agentmem register` on a big board should not
    pay for loading the daemon, extraction and recall commands."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, ...]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def _load(self, modules: Any) -> None:
        for m in modules:
            importlib.import_module(f"{__name__}.{m}")

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self._load(self.lazy[cmd_name])
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load(sorted({m for mods in self.lazy.values() for m in mods}))
        return super().list_commands(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from agentmem_vault.cli.help import format_commands

        format_commands(self, ctx, formatter, grouped=ctx.parent is None)

    def main(self, args: Any = None, *a: Any, **kw: Any) -> Any:
        global _ARGV
        _ARGV = list(sys.argv[1:] if args is None else args)
        for stream in (sys.stdout, sys.stderr):
            # A non-UTF-8 folder name is printed as the bytes it is, never a UnicodeEncodeError.
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="surrogateescape")
        if os.environ.get("_AGENTMEM_COMPLETE", "").startswith("powershell"):
            from agentmem_vault.cli.completion import register_powershell  # click has no PowerShell completion

            register_powershell()
        return super().main(_ARGV, *a, **kw)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AgentmemError as exc:
            fail(_json_requested(ctx), exc)
        except click.UsageError as exc:
            # A bad option or argument is still an error object under --json (exit 2, as in text mode).
            if not _json_requested(ctx):
                raise
            see = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            fail(True, UsageError(exc.format_message() + see))


# Which cli/ module registers each command (a module registers its commands when imported).
_COMMANDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("init", "register", "list", "show", "find"), ("board",)),
    **dict.fromkeys(("update", "continue", "release"), ("session_cmds",)),
    **dict.fromkeys(("organize", "archive", "say", "doctor", "install-rules"), ("lifecycle_cmds",)),
    **dict.fromkeys(("hook", "whoami", "install-hook"), ("hook_cmds",)),
    "daemon": ("daemon_cmds",),
    **dict.fromkeys(("extract", "eval"), ("longterm_cmds",)),
    **dict.fromkeys(("context", "reindex", "injected"), ("recall_cmds",)),
    **dict.fromkeys(("journal", "restore"), ("journal_cmds",)),
    "setup": ("setup_cmds",),
    "completion": ("completion",),
    **dict.fromkeys(("merge-driver", "install-merge-driver"), ("sync_cmds",)),
    **dict.fromkeys(("mcp", "install-mcp"), ("mcp_cmds",)),
}
_MEMORIES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("list", "show", "deprecate", "move"), ("longterm_cmds",)),
    "search": ("recall_cmds",),
}


@click.group(
    cls=AgentmemGroup,
    lazy=_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
)
@click.option(
    "--vault", type=click.Path(file_okay=False), help="Vault folder (default: AGENTMEM_VAULT, user config, or walk up)."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--agent", help="Agent name (default: AGENTMEM_AGENT, config, cursor-main-agent).")
@click.option(
    "--allow-agent-name",
    is_flag=True,
    help="Accept an agent name that does not end in '-agent' (the convention: name the agent, not the task).",
)
@click.version_option(package_name="agentmem-vault")
@click.pass_context
def cli(ctx: click.Context, vault: str | None, as_json: bool, agent: str | None, allow_agent_name: bool) -> None:
    """Reliable agent memory in an Obsidian vault: sessions, snapshots, long-term notes."""
    ctx.obj = Options(vault=vault, as_json=as_json, agent=agent, allow_agent_name=allow_agent_name)


@cli.group(cls=AgentmemGroup, lazy=_MEMORIES)
def memories() -> None:
    """Long-term memory notes in memory/long-term/."""
