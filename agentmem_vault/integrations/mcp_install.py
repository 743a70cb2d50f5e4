"""``agentmem install-mcp``: add the agentmem MCP server to a client's own config file (each
client's file and entry: docs/mcp.md, "Installers"). Plan (a pure function from the old text to the
new one), then apply through the installers' one file-edit step (integrations/file_edit.py). The
entry pins the vault (``--vault``), so it works from any workspace. Codex's TOML is read with
``tomllib`` and written textually: only our own table changes, the user's comments, order and
formatting stay byte for byte, and the result is parsed again and compared before it is written.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from agentmem_vault.command import agentmem_argv
from agentmem_vault.errors import Refused, UsageError
from agentmem_vault.integrations.file_edit import FileEdit, apply_edit, json_object, plan_text_edit, read_for_edit
from agentmem_vault.integrations.file_edit import project_folder
from agentmem_vault.integrations.quoting import check_safe, toml_string

SERVER_NAME = "agentmem"
CLIENTS = ("cursor", "claude", "codex", "claude-desktop")
# The variable a client replaces with the open workspace folder in an MCP server's arguments; the
# other clients are covered by roots and the working folder (docs/mcp.md, "Which project").
WORKSPACE_VARIABLE = {"cursor": "${workspaceFolder}"}
# Sessions registered through a client's server carry that client's agent name (as its hooks do).
DEFAULT_AGENTS = {"claude": "claude-main-agent", "codex": "codex-main-agent", "claude-desktop": "claude-desktop-agent"}


def config_path(
    client: str,
    *,
    project: str | os.PathLike | None = None,
    home: Path | None = None,
    platform: str = sys.platform,
    environ: dict[str, str] | None = None,
) -> Path:
    env = os.environ if environ is None else environ
    base = home or Path.home()
    proj = project_folder(project).absolute() if project is not None else None
    if client == "cursor":
        return (proj or base) / ".cursor" / "mcp.json"
    if client == "claude":
        return proj / ".mcp.json" if proj else base / ".claude.json"
    if client == "codex":
        return (proj or base) / ".codex" / "config.toml"
    if client == "claude-desktop":
        if proj is not None:
            raise UsageError("Claude Desktop has no project configs: run install-mcp claude-desktop without --project")
        if platform == "darwin":
            return base / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if platform == "win32":
            appdata = env.get("APPDATA") or str(base / "AppData" / "Roaming")
            return Path(appdata) / "Claude" / "claude_desktop_config.json"
        return Path(env.get("XDG_CONFIG_HOME") or base / ".config") / "Claude" / "claude_desktop_config.json"
    raise UsageError(f"unknown MCP client {client!r}: expected one of {', '.join(CLIENTS)}")


def server_entry(
    client: str,
    *,
    vault: str | os.PathLike,
    agent: str | None = None,
    argv: list[str] | None = None,
    project: str | None = None,
) -> dict:
    """Our server as the client starts it: an absolute command (clients start servers with a
    minimal PATH), ``mcp`` and the pinned vault (and agent name; and, for a project's config, the
    project that recall is scoped to)."""
    cmd = list(argv or agentmem_argv())
    args = [*cmd[1:], "mcp", "--vault", str(Path(vault).absolute())]
    name = agent or DEFAULT_AGENTS.get(client)
    if name:
        args += ["--agent", name]
    if project:
        args += ["--project", project]
    elif client in WORKSPACE_VARIABLE:
        # One user-level entry serves every workspace: the client fills in the chat's folder when it
        # starts the server, so recall is scoped to that folder's project (docs/mcp.md).
        args += ["--workspace", WORKSPACE_VARIABLE[client]]
    for word in (cmd[0], *args):
        check_safe(word, f"the {client} MCP config")
    entry: dict = {"command": cmd[0], "args": args}
    if client == "claude":
        entry = {"type": "stdio", **entry}
    return entry


@dataclass
class McpPlan:
    client: str
    path: Path
    edit: FileEdit
    entry: dict
    notes: list[str] = field(default_factory=list)


# -- JSON clients -----------------------------------------------------------------------------------


def merge_json(text: str | None, entry: dict, *, path: Path | str = "<config>") -> str:
    """Pure: the JSON config ``text`` with ``mcpServers.agentmem`` set to ``entry``; every other
    key kept in its order. Refused when the text is not a JSON object or ``mcpServers`` is not one."""
    doc = json_object(path, text) or {}
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise Refused(f'{path}: "mcpServers" is not an object; it was not changed')
    mine = servers.get(SERVER_NAME)
    # Keys the user added to our entry (env, disabled, ...) stay; command and args are ours.
    merged = {**mine, **entry} if isinstance(mine, dict) else entry
    if mine == merged and text is not None:
        return text
    servers[SERVER_NAME] = merged
    nl = "\r\n" if text and "\r\n" in text else "\n"
    return (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").replace("\n", nl)


# -- TOML (Codex) -----------------------------------------------------------------------------------

# A table header line ([table] or [[array-of-tables]]), and the names ours can have in one.
_HEADER = re.compile(r"^[ \t]*\[\[?([^\]\n]*)\]\]?[ \t]*(?:#.*)?$")
_OUR_TABLE = {f"mcp_servers.{q}{SERVER_NAME}{q}" for q in ("", '"', "'")}


def toml_table(entry: dict, nl: str = "\n") -> str:
    lines = [
        f"[mcp_servers.{SERVER_NAME}]",
        f"command = {toml_string(entry['command'])}",
        "args = [" + ", ".join(toml_string(a) for a in entry["args"]) + "]",
    ]
    return nl.join(lines) + nl


def _parse_toml(text: str, path: Path | str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Refused(f"{path} is not valid TOML ({exc}); fix or remove it first — it was not changed") from exc


_KEY = re.compile(r"""^[ \t]*(?:command|args|"command"|"args"|'command'|'args')[ \t]*=""")
_STRINGS = re.compile(r""""(?:[^"\\\n]|\\.)*"|'[^'\n]*'""")


def _value_lines(lines: list[str], i: int) -> int:
    """How many lines the key/value starting at ``lines[i]`` spans (a multi-line array)."""
    depth = 0
    n = 0
    for line in lines[i:]:
        n += 1
        bare = _STRINGS.sub("", line).split("#", 1)[0]
        depth += bare.count("[") - bare.count("]")
        if depth <= 0:
            return n
    return n


def merge_toml(text: str | None, entry: dict, *, path: Path | str = "<config>") -> str:
    """Pure: ``text`` with ``command`` and ``args`` of our ``[mcp_servers.agentmem]`` table
    replaced (the user's other keys and sub-tables, e.g. ``env``, stay), or the table appended
    when absent; every other byte kept. The result is parsed and must equal the old document with
    only those two keys changed, else the change is refused."""
    text = text or ""
    old = _parse_toml(text, path)
    servers = old.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise Refused(f"{path}: mcp_servers is not a table; it was not changed")
    mine = servers.get(SERVER_NAME)
    wanted = (
        {**mine, "command": entry["command"], "args": entry["args"]}
        if isinstance(mine, dict)
        else {"command": entry["command"], "args": entry["args"]}
    )
    if mine == wanted:
        return text
    nl = "\r\n" if "\r\n" in text else "\n"
    ours = toml_table(entry, nl)
    lines = text.splitlines(keepends=True)
    start = None
    for i, line in enumerate(lines):
        m = _HEADER.match(line.rstrip("\r\n"))
        if m and m.group(1).strip().replace(" ", "").replace("\t", "") in _OUR_TABLE:
            start = i
            break
    if start is not None:
        body: list[str] = []
        i = start + 1
        while i < len(lines) and not _HEADER.match(lines[i].rstrip("\r\n")):
            if _KEY.match(lines[i]):
                i += _value_lines(lines, i)
                continue
            body.append(lines[i])
            i += 1
        head = ours.split(nl, 1)[1]  # our command/args lines, without the header
        new = (
            "".join(lines[: start + 1])
            + ("" if lines[start].endswith("\n") else nl)
            + head
            + "".join(body)
            + "".join(lines[i:])
        )
    elif isinstance(mine, dict):
        raise Refused(
            f"{path} defines mcp_servers.{SERVER_NAME} in a form this installer does not rewrite "
            f"(inline table or dotted keys); replace it by hand with:\n{ours}"
        )
    elif not text.strip():
        new = text + ours
    else:
        new = (text if text.endswith("\n") else text + nl) + nl + ours
    want = dict(old)
    want["mcp_servers"] = {**servers, SERVER_NAME: wanted}
    if _parse_toml(new, path) != want:
        raise Refused(
            f"{path}: could not place [mcp_servers.{SERVER_NAME}] without changing other settings; "
            f"add it by hand:\n{ours}"
        )
    return new


# -- plan and apply ---------------------------------------------------------------------------------


NOTES = {  # client: (after writing the user's config, a project's)
    "cursor": ("Restart Cursor or toggle the server under Settings > MCP; its tools appear as memory_*.",) * 2,
    "claude": (
        "Written to ~/.claude.json (user scope); quit Claude Code first, it rewrites that file. "
        "Check with `claude mcp list`.",
        "Claude Code asks once to approve a project's .mcp.json servers; check with `claude mcp list`.",
    ),
    "codex": (
        "Check with `codex mcp list`.",
        "Codex reads a project's .codex/config.toml only in a trusted project; check with `codex mcp list`.",
    ),
    "claude-desktop": ("Quit and reopen Claude Desktop to load the server.",) * 2,
}


def plan_mcp_install(
    client: str,
    *,
    vault: str | os.PathLike,
    project: str | os.PathLike | None = None,
    agent: str | None = None,
    argv: list[str] | None = None,
    home: Path | None = None,
) -> McpPlan:
    path = config_path(client, project=project, home=home)
    if path.is_symlink():
        # Dotfiles managers link these files: write the target, do not replace the link by a copy.
        path = path.resolve()
    before, text = read_for_edit(path)
    from agentmem_vault.longterm.sources import project_of_folder

    entry = server_entry(
        client, vault=vault, agent=agent, argv=argv, project=project_of_folder(project) if project is not None else None
    )
    new = merge_toml(text, entry, path=path) if client == "codex" else merge_json(text, entry, path=path)
    check = (lambda b: tomllib.loads(b.decode("utf-8-sig"))) if client == "codex" else json.loads
    edit = plan_text_edit(path, before, new, what="TOML" if client == "codex" else "JSON", check=check)
    return McpPlan(client, path, edit, entry, [NOTES[client][project is not None]])


def apply_mcp_install(plan: McpPlan) -> dict:
    return _result(plan, apply_edit(plan.edit), dry_run=False)


def _result(plan: McpPlan, backup: Path | None, *, dry_run: bool) -> dict:
    return {
        "client": plan.client,
        "file": str(plan.path),
        "created": plan.edit.before is None,
        "changed": plan.edit.changed,
        "backup": str(backup) if backup else None,
        "entry": plan.entry,
        "server": SERVER_NAME,
        "notes": plan.notes,
        "dry_run": dry_run,
        "text": plan.edit.after.decode("utf-8-sig"),
    }


def install_mcp(
    client: str,
    *,
    vault: str | os.PathLike,
    project: str | os.PathLike | None = None,
    agent: str | None = None,
    argv: list[str] | None = None,
    dry_run: bool = False,
) -> dict:
    plan = plan_mcp_install(client, vault=vault, project=project, agent=agent, argv=argv)
    return _result(plan, None, dry_run=True) if dry_run else apply_mcp_install(plan)
