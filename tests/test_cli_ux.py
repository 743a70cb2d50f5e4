"""The command line as a user meets it: help on every command, --json errors, honest messages.

Runs against a copy of sample_vault/ (the vault the README tour uses)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from agentmem_vault.cli import cli
from agentmem_vault.ops.lifecycle import OrganizePlan, render_organize

SAMPLE = Path(__file__).resolve().parent.parent / "sample_vault"
SRC = "2026-05-25-1318-cursor-main-agent"  # active, referenced by CUR
CUR = "2026-05-26-0900-cursor-main-agent"  # continues from SRC


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    dst = tmp_path / "我的雲端硬碟 vault"
    shutil.copytree(SAMPLE, dst, ignore=shutil.ignore_patterns(".agentmem"))
    return dst


def run(*args: str, input: str | None = None, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False, prog_name="agentmem")


def _walk(group: click.Group, path: tuple[str, ...] = ()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield path + (name,), cmd
        if isinstance(cmd, click.Group):  # sub-groups walked the same way
            yield from _walk(cmd, path + (name,))


def test_every_command_and_group_has_help_text() -> None:
    assert (cli.help or "").strip()
    seen = list(_walk(cli))
    assert len(seen) > 20  # the whole tree was walked, sub-groups included
    for path, cmd in seen:
        assert (cmd.help or "").strip(), f"`agentmem {' '.join(path)}` has no help text"
        short = cmd.get_short_help_str(limit=80)
        assert len(short) > 12 and not short.endswith(("e.g.", "e.g...")), f"{path}: short help {short!r}"
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.hidden:
                assert (p.help or "").strip(), f"`agentmem {' '.join(path)}` option {p.opts} has no help"


def test_lazy_command_table_matches_the_modules() -> None:
    """Every command a module registers is in the lazy table, and every table entry resolves."""
    import importlib

    from agentmem_vault import cli as cli_pkg

    mods = {m for ms in cli_pkg._COMMANDS.values() for m in ms} | {m for ms in cli_pkg._MEMORIES.values() for m in ms}
    for m in mods:
        importlib.import_module(f"agentmem_vault.cli.{m}")
    assert set(cli.commands) == set(cli_pkg._COMMANDS) | {"memories"}
    assert set(cli_pkg.memories.commands) == set(cli_pkg._MEMORIES)


def test_help_option_works_for_every_command_but_hook() -> None:
    for path, _cmd in _walk(cli):
        if path == ("hook",):  # dispatched before click; covered below
            continue
        r = run(*path, "--help")
        assert r.exit_code == 0 and "Usage: agentmem " + " ".join(path) in r.stdout, path


def test_hook_help_comes_from_the_fast_path() -> None:
    from tests.conftest import run_cli

    p = run_cli("hook", "--help")
    assert p.returncode == 0 and "cursor-session-start" in p.stderr + p.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--status", "bogus", "--json"],
        ["--json", "no-such-command"],
        ["register", "--topic", "x", "--json"],
        ["daemon", "no-such", "--json"],
        ["memories", "show", "--json"],
    ],
)
def test_usage_errors_are_json_under_json(sample: Path, args: list[str]) -> None:
    r = run("--vault", str(sample), *args)
    assert r.exit_code == 2
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "usage" and err["message"]


def test_usage_error_without_json_stays_click_text(sample: Path) -> None:
    r = run("--vault", str(sample), "list", "--status", "bogus")
    assert r.exit_code == 2 and "Invalid value for '--status'" in r.stderr and r.stdout == ""


def test_library_error_json_after_the_subcommand(sample: Path) -> None:
    # In-process (no sys.argv): --json after the command must still give the error object.
    r = run("--vault", str(sample), "show", "2026-01-01-0000-nobody", "--json")
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "session_not_found"


def test_say_update_without_snapshot_says_unchanged(sample: Path) -> None:
    r = run("--vault", str(sample), "say", "狀態更新", CUR, env={"AGENTMEM_NOW": "2026-06-01T10:00"})
    assert r.exit_code == 0
    assert f"updated {CUR}: snapshot unchanged" in r.stdout and "merged" not in r.stdout
    snap = "## Next Actions\n- 補上 CRLF 測試\n"
    r = run(
        "--vault",
        str(sample),
        "say",
        "状态更新",
        CUR,
        "--snapshot",
        "-",
        input=snap,
        env={"AGENTMEM_NOW": "2026-06-01T10:05"},
    )
    assert r.exit_code == 0 and "snapshot merged" in r.stdout and "Updated At 2026-06-01 10:05" in r.stdout


def test_say_release_of_a_missing_link_says_nothing_to_do(sample: Path) -> None:
    r = run("--vault", str(sample), "say", f"解除引用 memory {SRC}", "--session", CUR)
    assert r.exit_code == 0 and f"{CUR} no longer continues from {SRC}" in r.stdout
    r = run("--vault", str(sample), "say", f"解除引用 memory {SRC}", "--session", CUR)
    assert r.exit_code == 0 and "nothing to do" in r.stdout and "no longer" not in r.stdout


def test_continue_and_release_take_the_session_from_the_hook_env(sample: Path) -> None:
    env = {"AGENTMEM_SESSION_ID": CUR, "AGENTMEM_NOW": "2026-06-01T10:00"}
    before = (sample / "memory/index.md").read_text(encoding="utf-8").count("\n")
    r = run("--vault", str(sample), "release", SRC, env=env)
    assert r.exit_code == 0 and f"{CUR} no longer continues from {SRC}" in r.stdout
    r = run("--vault", str(sample), "continue", SRC, "--json", env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)["session_id"] == CUR
    index = (sample / "memory/index.md").read_text(encoding="utf-8")
    assert index.count("\n") == before  # no new manual registration
    assert f"| {CUR} |" in index.split(f"| {SRC} |")[1].split("\n")[0]  # SRC's Referenced By
    assert "Your Memory Session ID" not in r.stdout
    r = run("--vault", str(sample), "release", SRC)  # no env, no --session: usage error
    assert r.exit_code == 2


def test_find_folds_simplified_to_traditional_and_marks_archived(sample: Path) -> None:
    r = run("--vault", str(sample), "find", "合并")  # the board says 合併
    assert r.exit_code == 0 and CUR in r.stdout
    r = run("--vault", str(sample), "find", "目录", "--archived")
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("2026-05-10-1400"))
    assert " archived " in line


def test_memories_show_unknown_is_a_failure_not_a_usage_error(sample: Path) -> None:
    r = run("--vault", str(sample), "memories", "show", "lt-000000", "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "memory_not_found"


def test_init_in_a_new_folder_makes_it_the_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like `git init`: with no vault configured, the current folder becomes one."""
    monkeypatch.chdir(tmp_path)
    r = run("init")
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "memory" / "index.md").is_file()
    r = run("init", "--vault", str(tmp_path / "new" / "我的 vault"))  # missing folders are created
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "new" / "我的 vault" / "memory" / "index.md").is_file()


def test_organize_human_output_leads_with_counts_and_skips_empty_lists() -> None:
    plan = OrganizePlan(
        deleted=["2026-05-27-1402-cursor-main-agent"], marked_stale=[], kept_active=[CUR], protected=[], inconsistent=[]
    )
    text = render_organize(plan, dry_run=True)
    first, *rest = text.splitlines()
    assert first == "organize (dry run, nothing written): would delete 1 idle row(s), would mark 0 stale, keep 1 active"
    assert "inconsistent" not in text and "marked stale" not in text
    assert "  - 2026-05-27-1402-cursor-main-agent" in rest


def test_sample_vault_is_healthy_and_readable(sample: Path) -> None:
    r = run("--vault", str(sample), "doctor", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["ok"] is True
    r = run("--vault", str(sample), "memories", "list", "--all-projects", "--json")  # whatever the cwd names
    notes = json.loads(r.stdout)
    assert 2 <= len(notes["memories"]) <= 4 and not notes["broken"]
    # Tool state the commands create in the bundled vault never reaches git.
    ignored = (SAMPLE.parent / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "sample_vault/memory/.agentmem/" in ignored


def test_fold_joins_common_taiwan_forms() -> None:
    from agentmem_vault.model.textnorm import fold, tokenize

    assert fold("合併 佈署") == fold("合并 布署") == "合并 布署"
    assert "合并" in tokenize("快照合併規則")


def test_say_snapshot_that_is_not_utf8_is_a_clear_error(sample: Path) -> None:
    from tests.conftest import run_cli

    before = (sample / "memory/sessions" / f"{CUR}.md").read_bytes()
    p = run_cli(
        "--vault", str(sample), "say", "狀態更新", CUR, "--snapshot", "-", input=b"## Next Actions\n- \xff\xfe x\n"
    )
    assert p.returncode == 1 and "not UTF-8" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("--vault", str(sample), "say", "狀態更新", CUR, "--snapshot", str(sample / "missing.md"), "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "usage"
    assert (sample / "memory/sessions" / f"{CUR}.md").read_bytes() == before
