"""mcp (the stdio MCP server) and install-mcp (client configs)."""

from __future__ import annotations

import json

import click

from agentmem_vault.cli import Options, cli, command_options, emit, render_install


@cli.command("mcp")
@click.option(
    "--vault",
    "vault",
    type=click.Path(file_okay=False),
    help="Vault folder (default: AGENTMEM_VAULT, user config, or walk up).",
)
@click.option(
    "--agent",
    help="Agent name for sessions this server registers (default: AGENTMEM_AGENT, config, cursor-main-agent).",
)
@click.option(
    "--project", help="Pin the project for memory_context / memory_search / memory_remember (default: the chat's)."
)
@click.option(
    "--workspace",
    help="The chat's workspace folder, as the client fills it in (Cursor: ${workspaceFolder}); see docs/mcp.md.",
)
@click.pass_context
def mcp_cmd(
    ctx: click.Context, vault: str | None, agent: str | None, project: str | None, workspace: str | None
) -> None:
    """Run the MCP server on stdin/stdout (needs: pip install 'agentmem-vault[mcp]').

    MCP clients (Cursor, Claude Code, Codex, Claude Desktop) start this command themselves; set it
    up with `agentmem install-mcp CLIENT --vault VAULT`."""
    from agentmem_vault.mcp import require_sdk

    require_sdk()
    from agentmem_vault.mcp.server import serve

    serve(vault or ctx.obj.vault, agent=agent or ctx.obj.agent, project=project, workspace=workspace)


@cli.command("install-mcp")
@click.argument("client", type=click.Choice(["cursor", "claude", "codex", "claude-desktop"]))
@click.option(
    "--project",
    "project",
    type=click.Path(file_okay=False),
    help="Configure this project folder only (Cursor .cursor/mcp.json, Claude Code .mcp.json, Codex .codex/config.toml).",
)
@click.option("--dry-run", is_flag=True, help="Show the config that would be written; write nothing.")
@command_options
def install_mcp_cmd(opts: Options, client: str, project: str | None, dry_run: bool) -> None:
    """Add the agentmem MCP server to CLIENT's config (keeps other servers, backs up the old file).

    The server entry pins the vault (--vault here or before the command, else the vault found
    from AGENTMEM_VAULT / user config / this folder), so it works from any workspace."""
    from agentmem_vault.integrations.mcp_install import config_path, install_mcp

    config_path(client, project=project)  # a client/scope mistake is named before the vault is looked for
    v = opts.open_vault()
    res = install_mcp(client, vault=v.root, project=project, agent=opts.agent, dry_run=dry_run)

    def human() -> str:
        if dry_run:
            return f"{res['file']} would become:\n{res['text']}"
        return render_install(res, [f"  server: {json.dumps(res['entry'], ensure_ascii=False)}"])

    emit(opts, res, human)
