"""--dry-run writes nothing (docs/reliability.md, "Dry run"): every mutating command, through the
CLI, `say` and MCP, is run with --dry-run on a vault in use, and the vault, the user cache and the
user config folder are compared byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli

SNAP = "## Current Context\nDry-run work.\n\n## Decisions\n- Retry up to 8 times\n"


def _picture(*roots: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            out[dirpath + "/"] = None
            for name in files:
                p = Path(dirpath) / name
                out[str(p)] = p.read_bytes()
    return out


@pytest.fixture
def busy(vault, monkeypatch):
    """A vault in use: an idle row, two sessions with snapshots (one continuing the other), a note."""
    monkeypatch.setenv("AGENTMEM_NOW", "2026-06-01T09:30")
    gone = json.loads(run_cli("--json", "register", vault=vault).stdout)["session_id"]
    assert run_cli("organize", vault=vault).returncode == 0  # deleted: `restore` has a row to bring back
    monkeypatch.setenv("AGENTMEM_NOW", "2026-06-01T09:31")
    idle = json.loads(run_cli("--json", "register", vault=vault).stdout)["session_id"]
    a = json.loads(run_cli("--json", "register", "--manual", "--snapshot", "-", vault=vault, input=SNAP).stdout)
    b = json.loads(run_cli("--json", "register", "--manual", "--snapshot", "-", vault=vault, input=SNAP).stdout)
    a, b = a["session_id"], b["session_id"]
    assert run_cli("continue", a, "--session", b, vault=vault).returncode == 0
    from agentmem_vault.longterm.remember import remember

    remember(vault, "Always run the tests with pytest -q before a landing", offline=True)
    monkeypatch.setenv("AGENTMEM_NOW", "2026-07-01T09:30")
    return vault, idle, a, b, gone


def _roots(vault) -> tuple[Path, ...]:
    return (vault.root, Path(os.environ["AGENTMEM_CACHE_DIR"]), Path(os.environ["AGENTMEM_CONFIG_DIR"]))


def test_every_mutating_command_with_dry_run_writes_nothing(busy, tmp_path: Path) -> None:
    vault, idle, a, b, gone = busy
    note = next(vault.longterm_dir.glob("*.md"))
    nid = note.read_text(encoding="utf-8").split("id: ")[1].split("\n")[0]
    transcript = tmp_path / "chat.txt"
    transcript.write_text("user:\nFrom now on always use ruff format.\n\nassistant:\nOK.\n", encoding="utf-8")
    commands = [
        (["init"], None),
        (["register"], None),
        (["register", "--manual", "--snapshot", "-"], SNAP),
        (["update", a, "--snapshot", "-"], "## Decisions\n- Retry up to 9 times\n"),
        (["update", idle, "--topic", "new topic", "--snapshot", "-"], SNAP),
        (["continue", a, "--session", idle], None),
        (["release", a, "--session", b], None),
        (["organize"], None),
        (["archive", b], None),
        (["archive", a, "--force"], None),
        (["doctor", "--fix"], None),
        (["restore", gone], None),
        (["extract", "--offline", "--file", str(transcript)], None),
        (["memories", "deprecate", nid, "--reason", "replaced"], None),
        (["memories", "move", nid, "--global"], None),
        (["say", "狀態更新", a, "--snapshot", "-"], "## Decisions\n- Retry up to 10 times\n"),
        (["say", "註冊 memory session"], None),
        (["say", f"接續 memory {a}", "--session", idle], None),
        (["say", f"解除引用 memory {a}", "--session", b], None),
        (["say", "整理 memory"], None),
        (["say", f"封存 memory session {b}"], None),
    ]
    before = _picture(*_roots(vault))
    for args, stdin in commands:
        r = run_cli(*args, "--dry-run", vault=vault, input=stdin)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        after = _picture(*_roots(vault))
        changed = sorted(k for k in set(before) | set(after) if before.get(k, b"\0") != after.get(k, b"\0"))
        assert changed == [], (args, changed)
    r = run_cli("update", a, "--snapshot", "-", "--dry-run", vault=vault, input="## Decisions\n- Retry up to 9 times\n")
    assert "dry run: nothing was written; it would change:" in r.stdout and f"memory/sessions/{a}.md" in r.stdout


def test_mcp_tools_with_dry_run_write_nothing(busy) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from tests.test_mcp_server import call, drive

    vault, idle, a, b, _ = busy
    before = _picture(*_roots(vault))

    async def scenario(c) -> list[dict]:
        return [
            await call(c, "memory_update", {"session_id": a, "snapshot": "## Decisions\n- x 11\n", "dry_run": True}),
            await call(c, "memory_register", {"topic": "t", "dry_run": True}),
            await call(c, "memory_continue", {"source_id": a, "session_id": idle, "dry_run": True}),
            await call(c, "memory_release", {"source_id": a, "session_id": b, "dry_run": True}),
            await call(c, "memory_organize", {"dry_run": True}),
            await call(c, "memory_archive", {"session_id": b, "dry_run": True}),
        ]

    got = drive(vault, scenario)
    assert all(not g["error"] and g.get("dry_run") is True for g in got), got
    after = _picture(*_roots(vault))
    changed = sorted(k for k in set(before) | set(after) if before.get(k, b"\0") != after.get(k, b"\0"))
    # the server itself keeps its recall index fresh at start (its own state, not a tool's write)
    assert [k for k in changed if "/recall" not in k and "mcp" not in k.lower()] == [], changed
