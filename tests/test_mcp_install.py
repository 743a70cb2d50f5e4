"""``agentmem install-mcp``: each client's own config format, merged with what is there, backed up,
idempotent, refusing unparseable files; and the entry it writes really starts the server."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.errors import Refused, UsageError
from agentmem_vault.integrations.mcp_install import (
    config_path,
    install_mcp,
    merge_toml,
    server_entry,
)

ARGV = ["/opt/agentmem env/bin/agentmem"]


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".agentmem-backup-*"))


@pytest.mark.parametrize(
    "client, rel, key",
    [
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("claude", ".mcp.json", "mcpServers"),
    ],
)
def test_json_clients_merge_backup_and_stay_idempotent(
    client: str, rel: str, key: str, vault: Vault, tmp_path: Path
) -> None:
    proj = tmp_path / "我的 project"
    path = proj / rel
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"mcpServers": {"github": {"command": "npx", "args": ["-y", "gh"]}}, "other": true}\n', encoding="utf-8"
    )
    before = path.read_bytes()
    r = install_mcp(client, vault=vault.root, project=proj, argv=ARGV)
    assert r["changed"] and not r["created"] and r["file"] == str(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["other"] is True and doc[key]["github"] == {"command": "npx", "args": ["-y", "gh"]}
    ours = doc[key]["agentmem"]
    assert ours["command"] == ARGV[0]
    assert ours["args"][:3] == ["mcp", "--vault", str(vault.root)]
    assert ours["args"][-2:] == ["--project", "我的 project"]  # recall scoped to the project
    assert ("type" in ours) is (client == "claude")
    [bak] = backups(path)
    assert bak.read_bytes() == before
    again = install_mcp(client, vault=vault.root, project=proj, argv=ARGV)
    assert not again["changed"] and backups(path) == [bak]


def test_user_scope_files(vault: Vault, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    claude_json = home / ".claude.json"
    claude_json.write_text(json.dumps({"numStartups": 3, "projects": {"/x": {"mcpServers": {}}}}), encoding="utf-8")
    r = install_mcp("claude", vault=vault.root, argv=ARGV)
    doc = json.loads(claude_json.read_text(encoding="utf-8"))
    assert r["file"] == str(claude_json)
    assert doc["numStartups"] == 3 and doc["projects"] == {"/x": {"mcpServers": {}}}
    assert doc["mcpServers"]["agentmem"]["args"][-2:] == ["--agent", "claude-main-agent"]
    r = install_mcp("cursor", vault=vault.root, argv=ARGV)
    assert r["created"] and Path(r["file"]) == home / ".cursor" / "mcp.json"
    assert "--agent" not in json.loads(Path(r["file"]).read_text(encoding="utf-8"))["mcpServers"]["agentmem"]["args"]


def test_claude_desktop_path_per_os(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert (
        config_path("claude-desktop", home=home, platform="darwin")
        == home / "Library/Application Support/Claude/claude_desktop_config.json"
    )
    assert (
        config_path("claude-desktop", home=home, platform="win32", environ={"APPDATA": str(tmp_path / "Roaming")})
        == tmp_path / "Roaming" / "Claude" / "claude_desktop_config.json"
    )
    assert (
        config_path("claude-desktop", home=home, platform="linux", environ={})
        == home / ".config/Claude/claude_desktop_config.json"
    )
    assert (
        config_path("claude-desktop", home=home, platform="linux", environ={"XDG_CONFIG_HOME": str(tmp_path / "x")})
        == tmp_path / "x" / "Claude" / "claude_desktop_config.json"
    )
    with pytest.raises(UsageError):
        config_path("claude-desktop", project=tmp_path, home=home)


CODEX = """# Codex settings (mine)
model = "gpt-5"   # keep this comment

[mcp_servers.docs]
command = "npx"
args = [
  "-y",   # multi-line, with a comment
  "docs-mcp",
]

[features]
codex_hooks = true
"""


def test_codex_toml_keeps_every_byte_but_our_table(vault: Vault, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_bytes(CODEX.replace("\n", "\r\n").encode("utf-8"))
    r = install_mcp("codex", vault=vault.root, argv=ARGV)
    new = path.read_bytes().decode("utf-8")
    assert new.startswith(CODEX.replace("\n", "\r\n"))  # the user's text untouched, CRLF kept
    assert "\n" not in new.replace("\r\n", "")
    doc = tomllib.loads(new)
    assert doc["model"] == "gpt-5" and doc["features"] == {"codex_hooks": True}
    assert doc["mcp_servers"]["docs"]["args"] == ["-y", "docs-mcp"]
    assert doc["mcp_servers"]["agentmem"] == {"command": ARGV[0], "args": r["entry"]["args"]}
    # The user adds env to our table; moving the vault rewrites command/args only.
    path.write_bytes(path.read_bytes() + b'[mcp_servers.agentmem.env]\r\nANTHROPIC_API_KEY = "k"\r\n')
    other = tmp_path / "other vault"
    other.mkdir()
    install_mcp("codex", vault=other, argv=ARGV)
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    assert doc["mcp_servers"]["agentmem"]["env"] == {"ANTHROPIC_API_KEY": "k"}
    assert doc["mcp_servers"]["agentmem"]["args"][2] == str(other.absolute())
    assert path.read_text(encoding="utf-8").count("[mcp_servers.agentmem]") == 1
    assert len(backups(path)) == 2
    again = install_mcp("codex", vault=other, argv=ARGV)
    assert not again["changed"]


@pytest.mark.parametrize(
    "client, name, junk",
    [
        ("cursor", ".cursor/mcp.json", b'{"mcpServers": {,}}'),
        ("claude", ".mcp.json", b"[1, 2]"),
        ("cursor", ".cursor/mcp.json", b'{"mcpServers": ["not", "an object"]}'),
        ("codex", ".codex/config.toml", b"model = \n"),
        ("codex", ".codex/config.toml", b"mcp_servers = { agentmem = { command = 'x' } }\n"),
        ("codex", ".codex/config.toml", b"\xff\xfe not utf-8"),
    ],
)
def test_unparseable_or_foreign_shapes_are_refused_untouched(
    client: str, name: str, junk: bytes, vault: Vault, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(junk)
    with pytest.raises(Refused):
        install_mcp(client, vault=vault.root, project=tmp_path, argv=ARGV)
    assert path.read_bytes() == junk and not backups(path)


def test_dry_run_writes_nothing(vault: Vault, tmp_path: Path) -> None:
    r = install_mcp("cursor", vault=vault.root, project=tmp_path, argv=ARGV, dry_run=True)
    assert r["dry_run"] and '"agentmem"' in r["text"]
    assert not (tmp_path / ".cursor").exists()


def test_toml_strings_escape_what_literals_cannot_hold() -> None:
    e = server_entry("codex", vault="/v/it's", argv=["C:\\Program Files\\agentmem.exe"])
    doc = tomllib.loads(merge_toml("", e))
    assert doc["mcp_servers"]["agentmem"]["command"] == "C:\\Program Files\\agentmem.exe"
    assert doc["mcp_servers"]["agentmem"]["args"][2].endswith("it's")


def test_cli_install_then_the_written_entry_starts_the_server(vault: Vault, tmp_path: Path, cli) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    import anyio
    from mcp import Client, StdioServerParameters

    proj = tmp_path / "proj"
    proj.mkdir()
    r = cli("install-mcp", "codex", "--project", str(proj), "--json", vault=vault)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    entry = tomllib.loads((proj / ".codex" / "config.toml").read_text(encoding="utf-8"))["mcp_servers"]["agentmem"]
    assert entry == {"command": res["entry"]["command"], "args": res["entry"]["args"]}
    env = {k: v for k, v in os.environ.items() if k.startswith("AGENTMEM_") or k in ("HOME", "USERPROFILE")}
    names: list[str] = []

    async def main() -> None:
        # Started the way the client would: the command and args from the config, another cwd.
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(tmp_path))
        async with Client(params, mode="legacy", read_timeout_seconds=120) as c:
            names.extend(t.name for t in (await c.list_tools()).tools)
            reg = await c.call_tool("memory_register", {"topic": "via codex config"})
            assert not reg.is_error and reg.structured_content["session_id"].endswith("codex-main-agent")

    anyio.run(main)
    assert "memory_context" in names
    assert sys.executable  # the entry used this environment's agentmem (console script or -m)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_a_symlinked_config_is_written_through_the_link(vault: Vault, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    target = tmp_path / "dotfiles" / "mcp.json"
    target.parent.mkdir()
    target.write_text('{"mcpServers": {}}', encoding="utf-8")
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").symlink_to(target)
    install_mcp("cursor", vault=vault.root, argv=ARGV)
    assert (home / ".cursor" / "mcp.json").is_symlink()
    assert "agentmem" in json.loads(target.read_text(encoding="utf-8"))["mcpServers"]
