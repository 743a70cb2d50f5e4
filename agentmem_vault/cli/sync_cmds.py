"""merge-driver, install-merge-driver: several machines sharing one vault through git (docs/sync.md)."""

from __future__ import annotations

import click

from agentmem_vault.cli import Options, cli, command_options, emit


@cli.command("merge-driver")
@click.argument("kind", type=click.Choice(["index", "snapshot", "note"]))
@click.argument("base", type=click.Path(dir_okay=False))
@click.argument("ours", type=click.Path(dir_okay=False))
@click.argument("theirs", type=click.Path(dir_okay=False))
@click.argument("pathname", required=False, default="")
def merge_driver(kind: str, base: str, ours: str, theirs: str, pathname: str) -> None:
    """git merge driver (git runs it: KIND %O %A %B %P); leaves the merge in OURS."""
    from agentmem_vault.integrations.merge_driver import run_merge_driver

    result = run_merge_driver(kind, base, ours, theirs, pathname)
    for line in result.messages:
        click.echo(f"agentmem merge-driver: {line}", err=True)
    raise SystemExit(result.exit_code)


@cli.command("install-merge-driver")
@command_options
@click.option(
    "--machine-id",
    "machine",
    default=None,
    help="Short name of this machine added to new Session IDs (default: from the host name; '' for none).",
)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
def install_merge_driver(opts: Options, machine: str | None, dry_run: bool) -> None:
    """Set up git merge drivers for the board, snapshots and notes of a vault kept in git."""
    from agentmem_vault.integrations.merge_install import install_merge_driver as install

    result = install(opts.open_vault(), dry_run=dry_run, machine=machine)
    verb = "would write" if dry_run else "wrote"
    attributes = result["gitattributes"]
    lines = [f"repository: {result['repository']}"]
    lines.append(f"{verb} {attributes}" if result["gitattributes_changed"] else f"{attributes}: already set up")
    changed = result["git_config_changed"]
    lines.append(f"{verb} git config: {', '.join(changed)}" if changed else "git config: already set up")
    if result["machine_id_changed"]:
        lines.append(f"{verb} machine_id: {result['machine_id'] or '(none)'} in the user config")
    lines += [f"backup: {b}" for b in result.get("backups", [])]
    lines += [f"note: {n}" for n in result["notes"]]
    emit(opts, result, "\n".join(lines))
