"""Files written for other programs: every path is quoted so that it reads back as itself, and a
path no format can hold (a line break, a control character, non-UTF-8 bytes) is refused before
anything is written. Checked with each format's own reader: systemd-analyze, git check-attr, a
real git merge, plistlib, tomllib, json, and the PowerShell and cmd.exe quoting rules."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.errors import Refused, UnsafeValue, UsageError
from agentmem_vault.integrations import file_edit, hook_install, mcp_install, merge_install, rules, setup
from agentmem_vault.integrations import user_service as us
from agentmem_vault.ops.board import init_vault
from conftest import run_cli
from test_sync_merge import git as git_run

# Everything a path may hold that a quoter must keep as text.
HOSTILE = "雲端 硬碟/100% $HOME %h ;x 'O\"Neil' & <x> ’‘‚‛ a*b [x] #1 !y `id` $(id) \\z"
UNSAFE = {
    "newline": "v\nExecStartPre=/bin/touch pwned",
    "carriage return": "v\rx",
    "line separator": "v\u2028x",
    "next line": "v\x85x",
    "escape": "v\x1bx",
    "non-utf8": os.fsdecode(b"v\xffx"),
}


@pytest.fixture(autouse=True)
def _no_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


def hostile_vault(tmp_path: Path, name: str = HOSTILE) -> Vault:
    v = Vault(tmp_path / name)
    v.root.mkdir(parents=True)
    init_vault(v)
    return v


# -- readers of the formats, as the other programs read them ------------------------------------


def powershell_words(command: str) -> list[str]:
    """The words of ``& 'a' 'b' …`` as PowerShell reads single-quoted strings: any of ' ‘ ’ ‚ ‛
    ends the string unless doubled."""
    quotes = "'\u2018\u2019\u201a\u201b"
    assert command.startswith("& ")
    words, i, s = [], 2, command
    while i < len(s):
        assert s[i] in quotes, s[i:]
        i += 1
        word = ""
        while True:
            if s[i] in quotes:
                if i + 1 < len(s) and s[i + 1] in quotes:
                    word += s[i]
                    i += 2
                    continue
                i += 1
                break
            word += s[i]
            i += 1
        words.append(word)
        assert i == len(s) or s[i] == " ", s[i:]
        i += 1
    return words


def crt_split(line: str) -> list[str]:
    """How the Microsoft C runtime splits a command line into argv."""
    args: list[str] = []
    cur, quoted, had, i = "", False, False, 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            n = 0
            while i < len(line) and line[i] == "\\":
                n += 1
                i += 1
            if i < len(line) and line[i] == '"':
                cur += "\\" * (n // 2)
                if n % 2:
                    cur += '"'
                    i += 1
            else:
                cur += "\\" * n
            had = True
            continue
        if c == '"':
            quoted = not quoted
            had = True
        elif c in " \t" and not quoted:
            if had:
                args.append(cur)
            cur, had = "", False
        else:
            cur += c
            had = True
        i += 1
    if had:
        args.append(cur)
    return args


def cmd_line_argv(line: str, environ: dict[str, str]) -> list[str]:
    """What cmd.exe runs for one line of a batch file: %-expansion first (``%%`` is ``%``,
    ``%NAME%`` a variable), then ``& | < >`` outside double quotes end the command; the rest is
    split by the C runtime."""
    out, i = "", 0
    while i < len(line):
        if line.startswith("%%", i):
            out, i = out + "%", i + 2
            continue
        m = re.match(r"%([^%]+)%", line[i:])
        if m and m.group(1) in environ:
            out, i = out + environ[m.group(1)], i + m.end()
            continue
        out, i = out + line[i], i + 1
    quoted = False
    for c in out:
        if c == '"':
            quoted = not quoted
        assert quoted or c not in "&|<>", f"cmd.exe would split {out!r} at {c!r}"
    return crt_split(out)


# -- systemd ------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_analyze_accepts_a_hostile_path_ending_in_a_backslash(tmp_path: Path) -> None:
    vault = hostile_vault(tmp_path, HOSTILE.replace("/", " ") + "\\")
    sd = us.service_definition(vault, platform="linux", argv=[sys.executable, "-m", "agentmem_vault"], home=tmp_path)
    unit = tmp_path / "units" / sd.name
    unit.parent.mkdir()
    unit.write_bytes(sd.content)
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 and "Failed to initialize manager" in proc.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {proc.stderr.strip()}")
    assert proc.returncode == 0 and sd.name not in proc.stderr, proc.stderr
    keys = [ln.split("=", 1)[0] for ln in sd.text.splitlines() if "=" in ln and not ln.startswith("#")]
    assert keys == ["Description", "Type", "ExecStart", "Restart", "RestartSec", "Environment", "WantedBy"]
    assert not any(ln.endswith("\\") for ln in sd.text.splitlines())  # no line continues into the next


# -- every writer refuses what it cannot hold ----------------------------------------------------


def _systemd(v: Vault, home: Path) -> None:
    us.install(v, runner=lambda a: (0, ""), platform="linux", argv=["/bin/agentmem"], home=home)


def _launchd(v: Vault, home: Path) -> None:
    us.install(v, runner=lambda a: (0, ""), platform="darwin", argv=["/bin/agentmem"], home=home)


def _startup(v: Vault, home: Path) -> None:
    us.service_definition(v, platform="win32", argv=[r"C:\a\agentmem.exe"], home=home, kind="startup")


def _schtasks(v: Vault, home: Path) -> None:
    us.service_definition(v, platform="win32", argv=[r"C:\a\agentmem.exe"], home=home)


def _hooks(agent: str) -> Callable[[Vault, Path], None]:
    def run(v: Vault, home: Path) -> None:
        hook_install.apply_install(hook_install.plan_install(agent, vault=str(v.root), home=home, argv=["/bin/a"]))

    return run


def _powershell(v: Vault, home: Path) -> None:
    hook_install.hook_command("cursor", "cursor-session-start", vault=str(v.root), platform="win32")


def _mcp(client: str) -> Callable[[Vault, Path], None]:
    def run(v: Vault, home: Path) -> None:
        mcp_install.apply_mcp_install(mcp_install.plan_mcp_install(client, vault=v.root, home=home, argv=["/bin/a"]))

    return run


def _user_config(v: Vault, home: Path) -> None:
    setup._config_step(v, dry_run=False)


WRITERS = {
    "systemd": _systemd,
    "launchd": _launchd,
    "startup-cmd": _startup,
    "task-scheduler": _schtasks,
    "cursor-hooks": _hooks("cursor"),
    "claude-settings": _hooks("claude"),
    "codex-hooks": _hooks("codex"),
    "powershell": _powershell,
    "cursor-mcp": _mcp("cursor"),
    "claude-mcp": _mcp("claude"),
    "codex-toml": _mcp("codex"),
    "user-config": _user_config,
}


@pytest.mark.parametrize("kind", sorted(UNSAFE))
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_path_no_format_can_hold_is_refused_and_nothing_is_written(tmp_path: Path, writer: str, kind: str) -> None:
    vault = Vault(tmp_path / "vaults" / UNSAFE[kind])
    try:
        vault.root.mkdir(parents=True)
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system cannot hold that name")
    init_vault(vault)
    home = tmp_path / "home"
    home.mkdir()
    config = Path(os.environ["AGENTMEM_CONFIG_DIR"])
    with pytest.raises(UnsafeValue) as info:
        WRITERS[writer](vault, home)
    assert "nothing was written" in info.value.message or "cannot" in info.value.message
    assert [p for p in home.rglob("*") if p.is_file()] == []
    assert not (config / "config.yaml").exists()


def test_the_cli_names_the_refusal_without_a_traceback(tmp_path: Path, cli) -> None:
    vault = hostile_vault(tmp_path, "v\nExecStartPre=x")
    proc = cli("daemon", "install", "--json", vault=vault)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "unsafe_value"
    assert "Traceback" not in proc.stderr


# -- shells --------------------------------------------------------------------------------------


def test_powershell_doubles_every_single_quote_character() -> None:
    path = "C:\\Users\\O’Brien ‘x’ ‚y‛ 'z'\\vault"
    argv = ["C:\\Program Files\\agent’s\\agentmem.exe"]
    cmd = hook_install.hook_command("cursor", "cursor-session-start", vault=path, argv=argv, platform="win32")
    assert powershell_words(cmd) == [*argv, "hook", "cursor-session-start", "--vault", path]


def test_posix_hook_command_reads_back_through_sh(tmp_path: Path) -> None:
    path = str(tmp_path / HOSTILE)
    cmd = hook_install.hook_command("claude", "claude-session-start", vault=path, argv=["printf", "%s\\0"])
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, timeout=30, check=True).stdout
    assert out.split(b"\0")[:-1] == [w.encode() for w in ["hook", "claude-session-start", "--vault", path]]


def test_startup_cmd_survives_percent_ampersand_and_caret(tmp_path: Path) -> None:
    root = "C:\\Users\\me\\100%USERNAME% & calc ^ (x) !y! 雲端\\"
    vault = Vault(Path(root))
    argv = ["C:\\Program Files\\a&b\\agentmem.exe"]
    text = us.startup_cmd(us.daemon_argv(vault, argv))
    line = next(ln for ln in text.split("\r\n") if ln.startswith("start "))
    words = cmd_line_argv(line, {"USERNAME": "EVIL"})
    assert words == ["start", "", "/b", *argv, "--vault", root, "daemon", "run"]
    assert "setlocal DisableDelayedExpansion" in text


def test_task_scheduler_refuses_a_variable_but_keeps_a_lone_percent(tmp_path: Path) -> None:
    ok = us.service_definition(Vault(Path("C:\\v\\100% sure")), platform="win32", argv=["C:\\a\\agentmem.exe"])
    assert "100% sure" in ok.text
    with pytest.raises(UnsafeValue, match="expands %NAME%"):
        us.service_definition(Vault(Path("C:\\v\\%APPDATA%")), platform="win32", argv=["C:\\a\\agentmem.exe"])


# -- formats with parsers -------------------------------------------------------------------------


def test_every_json_toml_and_plist_file_parses_back_to_the_path(tmp_path: Path) -> None:
    vault = hostile_vault(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    argv = [str(tmp_path / 'bin ’x\' "y" ]]\\' / "agentmem")]
    for agent in ("cursor", "claude", "codex"):
        plan = hook_install.plan_install(agent, vault=str(vault.root), home=home, argv=argv)
        hook_install.apply_install(plan)
        doc = json.loads(plan.path.read_text(encoding="utf-8"))
        commands = json.dumps(doc)
        assert json.dumps(plan.actions[0]["command"])[1:-1] in commands
    for client in ("cursor", "claude", "codex"):
        plan = mcp_install.plan_mcp_install(client, vault=vault.root, home=home, argv=argv)
        mcp_install.apply_mcp_install(plan)
        data = plan.path.read_bytes().decode()
        doc = tomllib.loads(data) if client == "codex" else json.loads(data)
        entry = doc["mcp_servers" if client == "codex" else "mcpServers"]["agentmem"]
        assert entry["command"] == argv[0] and entry["args"][1:3] == ["--vault", str(vault.root)]
    sd = us.service_definition(vault, platform="darwin", argv=argv, home=home)
    assert plistlib.loads(sd.content)["ProgramArguments"][:3] == [argv[0], "--vault", str(vault.root)]


# -- git ------------------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    return str(git_run(cwd, *args).stdout)


def check_attr(repo: Path, path: str) -> str:
    return git(repo, "check-attr", "merge", "--", path).rsplit(": ", 1)[1].strip()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_gitattributes_claims_exactly_the_vault_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    folder = 'a*b [x] #1 !y "q" \\z'
    vault = hostile_vault(repo, folder)
    merge_install.install_merge_driver(vault, argv=["agentmem"], machine="")
    assert check_attr(repo, f"{folder}/memory/index.md") == "agentmem-index"
    assert check_attr(repo, f"{folder}/memory/sessions/s.md") == "agentmem-snapshot"
    assert check_attr(repo, f"{folder}/memory/.agentmem/journal.jsonl") == "union"
    # Other folders the glob characters would have matched are not claimed.
    for other in ('aZb x #1 !y "q" \\z', 'ab [x] #1 !y "q" \\z', 'a*b y #1 !y "q" \\z'):
        assert check_attr(repo, f"{other}/memory/index.md") == "unspecified", other


@needs_git
def test_a_newline_in_the_vault_path_cannot_claim_other_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("*.txt text\n", encoding="utf-8")
    vault = hostile_vault(repo, "v\n*.py merge=agentmem-index\nw")
    with pytest.raises(UnsafeValue):
        merge_install.install_merge_driver(vault, argv=["agentmem"], machine="")
    assert (repo / ".gitattributes").read_text(encoding="utf-8") == "*.txt text\n"
    assert check_attr(repo, "tool.py") == "unspecified"


@needs_git
def test_the_merge_driver_runs_from_a_path_with_percent_quotes_and_spaces(tmp_path: Path) -> None:
    bindir = tmp_path / "100%A it's %P bin"
    bindir.mkdir()
    script = bindir / "agentmem"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m agentmem_vault "$@"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    vault = hostile_vault(repo, "vault")
    merge_install.install_merge_driver(vault, argv=[str(script)], machine="")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vault")

    def register(now: str) -> str:
        proc = run_cli("register", "--json", vault=vault, env={"AGENTMEM_NOW": now})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return str(json.loads(proc.stdout)["session_id"])

    git(repo, "checkout", "-q", "-b", "other")
    a = register("2026-06-01T09:30")
    git(repo, "commit", "-q", "-am", "a")
    git(repo, "checkout", "-q", "main")
    b = register("2026-06-01T09:31")
    git(repo, "commit", "-q", "-am", "b")
    git(repo, "merge", "-q", "--no-edit", "other")
    board = vault.index_path.read_text(encoding="utf-8")
    assert a in board and b in board and "<<<<<<<" not in board


# -- the one file-edit step -----------------------------------------------------------------------


def _race(monkeypatch: pytest.MonkeyPatch, target: Path, theirs: bytes) -> None:
    """Another editor saves ``target`` between the installer's plan and its write."""
    real = file_edit.read_bytes
    seen = {"n": 0}

    def read(path: Path) -> bytes | None:
        if Path(path) == target:
            seen["n"] += 1
            if seen["n"] == 2:
                target.write_bytes(theirs)
        return real(path)

    monkeypatch.setattr(file_edit, "read_bytes", read)


def _rules(home: Path, project: Path) -> Path:
    rules.install_rules(project)
    return project / rules.RULE_PATH


def _agents_md(home: Path, project: Path) -> Path:
    rules.install_rules(project, agents_md=True)
    return project / "AGENTS.md"


def _codex_features(home: Path, project: Path) -> Path:
    setup._codex_toml_step(home, dry_run=False)
    return home / ".codex" / "config.toml"


def _hook_file(home: Path, project: Path) -> Path:
    hook_install.apply_install(hook_install.plan_install("cursor", vault="/v", home=home, argv=["/bin/a"]))
    return home / ".cursor" / "hooks.json"


def _mcp_file(home: Path, project: Path) -> Path:
    mcp_install.apply_mcp_install(mcp_install.plan_mcp_install("cursor", vault="/v", home=home, argv=["/bin/a"]))
    return home / ".cursor" / "mcp.json"


INSTALLERS = {  # name: (run, folder ("home" or "project"), file, its old bytes)
    "rules": (_rules, "project", rules.RULE_PATH, b"my own rule\n"),
    "agents-md": (_agents_md, "project", Path("AGENTS.md"), b"# Mine\n"),
    "codex-features": (_codex_features, "home", Path(".codex/config.toml"), b"model = 'x'\n"),
    "hooks": (_hook_file, "home", Path(".cursor/hooks.json"), b"{}\n"),
    "mcp": (_mcp_file, "home", Path(".cursor/mcp.json"), b"{}\n"),
}


@pytest.mark.parametrize("name", sorted(INSTALLERS))
def test_every_installer_refuses_a_file_changed_while_installing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    run, base, rel, old = INSTALLERS[name]
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    target = tmp_path / base / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(old)
    _race(monkeypatch, target, b"saved by another editor\n")
    with pytest.raises(Refused, match="changed while installing"):
        run(home, project)
    assert target.read_bytes() == b"saved by another editor\n"
    assert [p.name for p in target.parent.iterdir() if target.name in p.name] == [target.name]  # no backup, no temp


@needs_git
def test_gitattributes_changed_while_installing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("*.txt text\n", encoding="utf-8")
    vault = hostile_vault(repo, "vault")
    _race(monkeypatch, repo / ".gitattributes", b"*.md text\n")
    with pytest.raises(Refused, match="changed while installing"):
        merge_install.install_merge_driver(vault, argv=["agentmem"], machine="")
    assert (repo / ".gitattributes").read_bytes() == b"*.md text\n"


def test_status_and_uninstall_of_a_vault_no_unit_can_name_say_not_installed(tmp_path: Path) -> None:
    vault = hostile_vault(tmp_path, "v\nExecStartPre=x")
    assert us.service_status(vault, runner=lambda a: (0, ""), platform="linux", home=tmp_path)["installed"] is False
    assert us.uninstall(vault, runner=lambda a: (0, ""), platform="linux", home=tmp_path)["removed"] is False


@needs_git
def test_gitattributes_keeps_its_crlf_and_a_lone_marker_is_refused_not_doubled(tmp_path: Path) -> None:
    # A CRLF .gitattributes gets the block in CRLF too; a file with only the begin marker is refused
    # (a second block after it would let the next run replace the user's lines between the markers).
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    vault = hostile_vault(repo, "vault")
    attributes = repo / ".gitattributes"
    attributes.write_bytes(b"*.txt text\r\n")
    merge_install.install_merge_driver(vault, argv=["agentmem"], machine="")
    data = attributes.read_bytes()
    assert data.startswith(b"*.txt text\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    lone = (merge_install.BEGIN + "\nmine merge=ours\n").encode("utf-8")
    attributes.write_bytes(lone)
    with pytest.raises(UsageError, match="only one of the agentmem markers"):
        merge_install.install_merge_driver(vault, argv=["agentmem"], machine="")
    assert attributes.read_bytes() == lone
