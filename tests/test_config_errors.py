"""Reliability: config.yaml is validated once, with a clear message naming the key; a cache dir
that is a file is a clear error (docs/reliability.md). No traceback reaches the user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault

from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from hooks_helpers import answer, cursor_start, hooks_log, id_from, run_hook

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}


@pytest.mark.parametrize(
    "line,key",
    [
        ('stale_days: "x"', "stale_days"),
        ("stale_days: 1e308", "stale_days"),
        ("stale_days: -1", "stale_days"),
        ("stale_days: .nan", "stale_days"),
        ("stale_days: 2.5", "stale_days"),
        ("stale_days: true", "stale_days"),
        ("lock_timeout: [1]", "lock_timeout"),
        ("lock_timeout: .inf", "lock_timeout"),
    ],
)
def test_bad_organize_settings_name_the_key(vault: Vault, line: str, key: str) -> None:
    vault.config_path.write_text(line + "\n", encoding="utf-8")
    p = run_cli("organize", vault=vault, env=NOW)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert key in p.stderr and "config.yaml" in p.stderr


@pytest.mark.parametrize(
    "line,key",
    [
        ('llm_timeout: "x"', "llm_timeout"),
        ("max_retries: -1", "max_retries"),
        ("max_retries: 1e9", "max_retries"),
        ("concurrency: 0", "concurrency"),
        ('min_score: "high"', "min_score"),
        ("llm_source_deadline: 0", "llm_source_deadline"),
        ("llm_source_deadline: soon", "llm_source_deadline"),
    ],
)
def test_bad_extract_settings_name_the_key(vault: Vault, tmp_path: Path, line: str, key: str) -> None:
    chat = tmp_path / "chat.md"
    chat.write_text("User: hi\n", encoding="utf-8")
    vault.config_path.write_text(line + "\n", encoding="utf-8")
    p = run_cli(
        "extract",
        "--file",
        str(chat),
        vault=vault,
        env={"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert key in p.stderr


def test_hook_with_a_bad_setting_still_registers_and_logs(vault: Vault, tmp_path: Path) -> None:
    vault.config_path.write_text('stale_days: "x"\n', encoding="utf-8")
    proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=tmp_path)
    assert id_from(answer(proc))
    assert any("stale_days" in line for line in hooks_log(vault))


@pytest.mark.parametrize("args", [("daemon", "start"), ("daemon", "run"), ("register",), ("list",)])
def test_cache_dir_that_is_a_file(vault: Vault, tmp_path: Path, args: tuple[str, ...]) -> None:
    cache = tmp_path / "cache-file"
    cache.write_text("not a folder", encoding="utf-8")
    p = run_cli(*args, vault=vault, env={**NOW, "AGENTMEM_CACHE_DIR": str(cache)}, timeout=60)
    assert "Traceback" not in p.stderr, p.stderr
    if args != ("list",):  # list needs no lock and no cache
        assert p.returncode == 1 and "cache" in p.stderr.lower(), p.stderr
    assert cache.read_text(encoding="utf-8") == "not a folder"
    if args == ("daemon", "start"):
        json.loads(
            run_cli("daemon", "status", "--json", vault=vault, env={"AGENTMEM_CACHE_DIR": str(cache)}).stdout or "{}"
        )


def test_a_given_vault_needs_no_home_folder(vault: Vault, tmp_path: Path) -> None:
    # A process with no HOME and no passwd entry (a container's arbitrary UID): Path.home() raises.
    # --vault or AGENTMEM_VAULT names the vault, so the user config (under the home folder) is never
    # needed; the command runs instead of ending in a traceback.
    import os
    import subprocess
    import sys

    code = (
        "import pathlib, sys\n"
        "def no_home(cls): raise RuntimeError('Could not determine home directory.')\n"
        "pathlib.Path.home = classmethod(no_home)\n"
        "from agentmem_vault.cli import cli\n"
        "cli(sys.argv[1:])\n"
    )
    gone = ("HOME", "USERPROFILE", "XDG_CONFIG_HOME", "AGENTMEM_CONFIG_DIR", "APPDATA")
    env = {k: v for k, v in os.environ.items() if k not in gone}
    for args, extra in (
        (["--vault", str(vault.root), "list", "--json"], {}),
        (["list", "--json"], {"AGENTMEM_VAULT": str(vault.root)}),
    ):
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env={**env, **extra})
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        assert json.loads(out.stdout)["rows"] == []


def test_a_yaml_error_reads_the_same_in_the_cli_and_mcp(vault: Vault) -> None:
    """One wording for every YAML refusal (model/yamlload.load): the file, line and column, the
    problem and what to do; the CLI and an MCP tool say it alike, for config.yaml and for a note."""
    import re

    import anyio
    from mcp import Client, MCPError
    from test_mcp_server import server_params

    vault.config_path.write_text("stale_days: 3\nlock_timeout: [1\n", encoding="utf-8")
    got: dict[str, str] = {}

    async def main() -> None:
        async with Client(server_params(vault), mode="legacy", read_timeout_seconds=120) as c:
            r = await c.call_tool("memory_context", {"task": "pytest"})
            got["config"] = r.structured_content["error"]["message"]
            vault.config_path.unlink()
            try:
                await c.read_resource("agentmem://memory/bad")
            except MCPError as exc:
                got["note"] = str(exc)

    cli = run_cli("context", "pytest", vault=vault)
    assert cli.returncode == 1 and cli.stderr.startswith("error: ") and cli.stderr.count("\n") == 1
    config = cli.stderr[len("error: ") : -1]
    where = re.escape(str(vault.config_path))
    assert re.fullmatch(where + r" is not valid YAML at line 3, column 1 \(.*'\]'.*\); fix or remove that file", config)
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "bad.md").write_text("---\ntitle: ok\nkeywords: [a\n---\nbody\n", encoding="utf-8")
    anyio.run(main)
    assert got["config"] == config
    shown = run_cli("memories", "show", "bad", vault=vault)
    assert shown.returncode == 1 and shown.stderr.count("\n") == 1
    note = shown.stderr[len("error: ") : -1]
    assert re.fullmatch(
        r"bad.md: the frontmatter is not valid YAML at line 4, column 1 \(.*'\]'.*\); "
        "fix its frontmatter first, nothing was changed",
        note,
    )
    assert note in got["note"]
