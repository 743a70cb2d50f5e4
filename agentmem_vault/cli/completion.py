"""``agentmem completion bash|zsh|fish|powershell`` and Session ID completion.

bash, zsh and fish use click's own completion scripts. click has none for PowerShell, so
``PowerShellComplete`` adds one: PowerShell's ``Register-ArgumentCompleter`` hands the command line
to ``agentmem`` in ``COMP_WORDS`` / ``COMP_CWORD`` with ``_AGENTMEM_COMPLETE=powershell_complete``,
the same protocol click's bash script uses. Session ID arguments complete from the board through
``complete_ids.complete_session_id``.
"""

from __future__ import annotations

import os

import click
from click.shell_completion import (
    CompletionItem,
    ShellComplete,
    add_completion_class,
    get_completion_class,
    split_arg_string,
)

from agentmem_vault.cli import cli
from agentmem_vault.integrations.rules import template_text

SHELLS = ("bash", "zsh", "fish", "powershell")
COMPLETE_VAR = "_AGENTMEM_COMPLETE"


class PowerShellComplete(ShellComplete):
    name = "powershell"
    # templates/completion/powershell.ps1; `%` is click's template marker there, so PowerShell's
    # `%` alias is not used in it (ForEach-Object is)
    source_template = template_text("completion/powershell.ps1")

    def get_completion_args(self) -> tuple[list[str], str]:
        line = os.environ.get("COMP_WORDS", "")
        incomplete = os.environ.get("COMP_CWORD", "")
        args = split_arg_string(line)[1:]  # drop the program name
        if incomplete and args and args[-1] == incomplete:
            args = args[:-1]
        return args, incomplete

    def format_completion(self, item: CompletionItem) -> str:
        return f"{item.type}\t{item.value}\t{item.help or ''}"


def register_powershell() -> None:
    add_completion_class(PowerShellComplete)


def script(shell: str, prog_name: str = "agentmem") -> str:
    if shell == "powershell":
        register_powershell()
    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - SHELLS are all registered
        raise click.UsageError(f"no completion for {shell}")
    return cls(cli, {}, prog_name, COMPLETE_VAR).source()


@cli.command(
    "completion",
    epilog="""\b
Install (one line in your shell's start-up file):
  bash        eval "$(agentmem completion bash)"          # ~/.bashrc (bash 4.4+)
  zsh         eval "$(agentmem completion zsh)"           # ~/.zshrc
  fish        agentmem completion fish | source            # ~/.config/fish/config.fish
  PowerShell  agentmem completion powershell | Out-String | Invoke-Expression   # $PROFILE""",
)
@click.argument("shell", type=click.Choice(SHELLS))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script (commands, options and Session IDs from the board)."""
    click.echo(script(shell))
