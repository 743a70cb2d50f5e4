"""No traceback, ever (docs/reliability.md): values the YAML loader rejects, malformed rows in
`list`, non-UTF-8 vault paths, overflowing numbers, line breaks in one-line fields and look-alike
digits in Session IDs each become the tool's own error (or, for the hook, its defaults)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.errors import ConfigError, InvalidSessionId
from agentmem_vault.model import yamlload
from agentmem_vault.model.ids import find_ids, is_valid_session_id, validate_session_id
from agentmem_vault.ops.board import init_vault
from conftest import run_cli
from hooks_helpers import cursor_start

NOW = "2026-06-01T09:30"
SID = "2026-06-01-0930-cursor-main-agent"
BAD_YAML = {
    "impossible date": "foo: 2026-02-30\n",
    "self-reference": "x: &a [*a]\n",
    "5,000 deep": "x: " + "[" * 5000 + "]" * 5000 + "\n",
    "billion laughs": "a: &a [1,1,1,1,1,1,1,1,1,1]\n"
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(8)),
}


def no_traceback(proc) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]


@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_the_loader_turns_every_shape_into_its_own_problem(name: str) -> None:
    with pytest.raises(ConfigError, match=r"^config.yaml is not valid YAML .*; fix it$"):
        yamlload.load(BAD_YAML[name], ConfigError, "config.yaml", "fix it")


@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_bad_yaml_in_config_is_a_clear_error_and_the_hook_uses_defaults(vault: Vault, name: str) -> None:
    vault.config_path.write_text(BAD_YAML[name], encoding="utf-8")
    for args in (["organize"], ["context", "pytest"], ["register"], ["extract"], ["--json", "list"]):
        proc = run_cli(*args, vault=vault, env={"AGENTMEM_NOW": NOW})
        no_traceback(proc)
        if proc.returncode != 0:
            assert proc.returncode == 1 and "config.yaml" in proc.stderr + proc.stdout, (args, proc.stderr)
    hook = run_cli(
        "hook",
        "cursor-session-start",
        input=json.dumps(cursor_start(vault.root, "conv-1")),
        env={"AGENTMEM_VAULT": str(vault.root)},
    )
    no_traceback(hook)
    assert "Your Memory Session ID is:" in json.loads(hook.stdout)["additional_context"]


@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_bad_yaml_in_a_note_is_skipped_and_reported(vault: Vault, name: str) -> None:
    lt = vault.memory / "long-term"
    lt.mkdir(exist_ok=True)
    (lt / "bad.md").write_text(f"---\nid: lt-abc123\ntitle: bad\n{BAD_YAML[name]}---\npytest fixtures\n", "utf-8")
    for args in (["memories", "list"], ["memories", "search", "pytest"], ["context", "pytest"], ["reindex"]):
        proc = run_cli(*args, vault=vault, env={"AGENTMEM_NOW": NOW})
        no_traceback(proc)
        assert proc.returncode == 0, (args, proc.stderr)
    assert "unreadable" in run_cli("memories", "list", vault=vault).stdout


@pytest.mark.parametrize("name", sorted(BAD_YAML))
def test_bad_yaml_in_a_snapshot_is_a_clear_error(vault: Vault, name: str) -> None:
    assert run_cli("register", "--manual", "--topic", "t", vault=vault, env={"AGENTMEM_NOW": NOW}).returncode == 0
    snap = vault.session_path(SID)
    snap.write_text(f"---\n{BAD_YAML[name]}---\n" + snap.read_text(encoding="utf-8"), encoding="utf-8")
    for args in (["show", SID], ["update", SID, "--topic", "x"], ["doctor"], ["list"]):
        proc = run_cli(*args, vault=vault, env={"AGENTMEM_NOW": NOW}, input="")
        no_traceback(proc)
        assert proc.returncode in (0, 1), (args, proc.returncode, proc.stderr)


@pytest.mark.parametrize("name", ["impossible date", "self-reference"])
def test_the_merge_driver_falls_back_on_a_note_it_cannot_read(tmp_path: Path, name: str) -> None:
    base = "---\nid: lt-abc123\ntitle: t\n" + BAD_YAML[name] + "---\nbody\n"
    o, a, b = tmp_path / "O", tmp_path / "A", tmp_path / "B"
    o.write_text(base, encoding="utf-8")
    a.write_text(base.replace("body", "body from A"), encoding="utf-8")
    b.write_text(base + "more from B\n", encoding="utf-8")
    proc = run_cli("merge-driver", "note", str(o), str(a), str(b), "n.md", process=True)
    no_traceback(proc)
    assert proc.returncode in (0, 1)
    assert "body from A" in a.read_text(encoding="utf-8")  # git's merge result: nothing of A lost


# -- malformed rows -------------------------------------------------------------------------------


def test_a_malformed_row_is_listed_not_a_crash(vault: Vault) -> None:
    text = vault.index_path.read_text(encoding="utf-8")
    vault.index_path.write_text(text + "| broken | row |\n", encoding="utf-8")
    for args in (["list"], ["--json", "list"], ["list", "--json"]):
        proc = run_cli(*args, vault=vault)
        no_traceback(proc)
        assert proc.returncode == 0, proc.stderr
    out = json.loads(run_cli("list", "--json", vault=vault).stdout)
    assert out["malformed"] and out["malformed"][0]["raw"].startswith("| broken")


def test_mcp_memory_list_reports_a_malformed_row(vault: Vault) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from test_mcp_server import call, drive

    vault.index_path.write_text(vault.index_path.read_text(encoding="utf-8") + "| broken | row |\n", encoding="utf-8")
    got = drive(vault, lambda c: call(c, "memory_list", {}))
    assert not got["error"] and got["malformed"][0]["raw"].startswith("| broken")


# -- numbers and one-line fields --------------------------------------------------------------------


def test_an_overflowing_stale_days_is_a_usage_error(vault: Vault) -> None:
    proc = run_cli("organize", "--stale-days", "1000000000000", "--json", vault=vault)
    no_traceback(proc)
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["code"] == "usage"


def test_mcp_organize_with_an_overflowing_stale_days_is_a_usage_error(vault: Vault) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from test_mcp_server import call, drive

    got = drive(vault, lambda c: call(c, "memory_organize", {"stale_days": 1000000000000}))
    assert got["error"]["code"] == "usage" and "36500" in got["error"]["message"]


@pytest.mark.parametrize("field", ["--summary", "--topic", "--keywords"])
@pytest.mark.parametrize("brk", ["\n", "\r", "\u2028", "\x85"])
def test_a_line_break_in_a_one_line_field_is_refused_before_writing(vault: Vault, field: str, brk: str) -> None:
    env = {"AGENTMEM_NOW": NOW}
    assert run_cli("register", "--manual", "--topic", "t", vault=vault, env=env).returncode == 0
    before = {p: p.read_bytes() for p in vault.memory.rglob("*.md")}
    for args in (["update", SID, field, f"a{brk}b"], ["register", "--manual", field, f"a{brk}b"]):
        proc = run_cli(*args, "--json", vault=vault, env=env, input="")
        no_traceback(proc)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert json.loads(proc.stdout)["error"]["code"] == "field_not_one_line"
    assert {p: p.read_bytes() for p in vault.memory.rglob("*.md")} == before


def test_mcp_refuses_a_five_million_character_topic(vault: Vault) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from test_mcp_server import call, drive

    assert run_cli("register", "--manual", "--topic", "t", vault=vault, env={"AGENTMEM_NOW": NOW}).returncode == 0
    size = vault.index_path.stat().st_size

    async def scenario(c):
        return await call(c, "memory_update", {"session_id": SID, "topic": "x" * 5_000_000})

    got = drive(vault, scenario)
    assert got["error"]["code"] == "field_too_long" and "200" in got["error"]["message"]
    assert vault.index_path.stat().st_size == size


# -- digits and paths -------------------------------------------------------------------------------


@pytest.mark.parametrize("digits", ["２０２６", "٢٠٢٦", "۲۰۲۶", "२०२६"])
def test_session_ids_are_ascii_digits_only(digits: str) -> None:
    sid = f"{digits}-06-01-0930-cursor-main-agent"
    assert not is_valid_session_id(sid)
    assert find_ids(f"archive {sid}") == [] or find_ids(f"archive {sid}") == ()
    with pytest.raises(InvalidSessionId):
        validate_session_id(sid)


def test_a_non_utf8_vault_path_works_or_is_refused_cleanly(tmp_path: Path) -> None:
    root = tmp_path / os.fsdecode(b"vault-\xff")
    try:
        root.mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system cannot hold a non-UTF-8 name")
    v = Vault(root)
    env = {"AGENTMEM_NOW": NOW}
    for args in (["init"], ["register"], ["context", "pytest"], ["list"]):
        proc = run_cli(*args, vault=v, env=env)
        no_traceback(proc)
        assert proc.returncode == 0, (args, proc.stderr)
    hook = run_cli(
        "hook", "cursor-session-start", "--vault", str(root), input=json.dumps(cursor_start(tmp_path, "c-1")), env=env
    )
    no_traceback(hook)
    assert "Your Memory Session ID is:" in json.loads(hook.stdout)["additional_context"]
    proc = run_cli("daemon", "install", "--json", vault=v, env=env)
    no_traceback(proc)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "unsafe_value"
    init_vault(v)  # idempotent on that path too


def test_an_mcp_argument_that_is_not_unicode_text_is_a_usage_error(vault: Vault) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from agentmem_vault.mcp import tools  # noqa: F401  (importing the groups registers them)
    from agentmem_vault.mcp.registry import ENTRIES, Front, _bind

    front = Front(str(vault.root), None, None)
    fns = {e.fn.__name__: e.fn for e in ENTRIES if e.kind == "tool"}
    for name, args in (("memory_whoami", {"conversation_id": "\udcff"}), ("memory_register", {"topic": "a\udcffb"})):
        result = _bind(fns[name], front, "tool")(**args)  # JSON carries "\udcff"; the SDK passes it on
        assert result.is_error and result.structured_content["error"]["code"] == "usage", result.structured_content
