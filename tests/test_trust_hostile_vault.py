"""The hostile vault (docs/reliability.md, "What a vault can make the tool do"): one vault holding
every kind of hostile file at once (FIFOs and links to ``/dev/zero`` where state files belong,
folders and files linked out of it, a forged pid file naming a live process, a config naming a
server the user never chose, pipe-less and malformed board rows, impossible dates, huge fields),
and every command run on it: the CLI, the hooks (real JSON on stdin), the MCP server (the SDK's
client) and the daemon. Each runs as a real process under a hard deadline. None may hang, print a
traceback, write outside the vault, the user cache and the user config folder (a decoy folder
next to the vault is compared byte for byte), send a request to the recording server the vault
names, kill the process its pid file names, or lose a row, snapshot or note."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentmem_vault.vault import Vault

from hooks_helpers import claude_start, codex_start, cursor_end, cursor_start, hook_env
from longterm_helpers import FakeMessagesAPI

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, /dev/zero and POSIX signals")

DEADLINE = 45.0  # seconds per command: far past any honest command here, far below "hung"
USER_KEY = "sk-ant-the-users-own-key"
NOW = "2026-06-01T09:30"
SNAP = (
    "# Session: x\n\n## Current Context\n- Hardening agentmem against hostile vaults.\n\n## Next Actions\n- ship it\n"
)


@dataclass
class Hostile:
    vault: Vault
    outside: Path  # the decoy: must be byte-identical after every command
    workspace: Path  # a chat workspace whose .git/config is a FIFO
    recorder: FakeMessagesAPI
    victim: subprocess.Popen
    sessions: list[str]
    key: str
    env: dict[str, str] = field(default_factory=dict)
    before: dict[str, Any] = field(default_factory=dict)
    kept: dict[str, Any] = field(default_factory=dict)


def _agentmem(h: Hostile, *argv: str, stdin: bytes = b"", vault: bool = True) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "agentmem_vault", *(["--vault", str(h.vault.root)] if vault else []), *argv]
    try:
        return subprocess.run(args, input=stdin, capture_output=True, env=h.env, timeout=DEADLINE, cwd=h.outside.parent)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`agentmem {' '.join(argv)}` hung (no answer within {DEADLINE:g} s)")


def _tree(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` (links not followed): its kind and, for files, its bytes."""
    out: dict[str, Any] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[str(p)] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[str(p)] = ("file", p.read_bytes())
            else:
                out[str(p)] = ("other", stat.S_IFMT(st.st_mode))
    return out


def _build(tmp_path: Path) -> Hostile:
    home = tmp_path / "home"
    outside = tmp_path / "outside"
    (outside / "recall-target").mkdir(parents=True)
    (outside / "victim.txt").write_text("precious\n", encoding="utf-8")
    (outside / "victim.json").write_text("{}\n", encoding="utf-8")
    (outside / "secret.md").write_text("---\ntitle: secret\n---\nthe user's secret\n", encoding="utf-8")
    vault = Vault(tmp_path / "我的 hostile vault")
    vault.root.mkdir()
    recorder = FakeMessagesAPI().start()
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    env = hook_env({"ANTHROPIC_API_KEY": USER_KEY, "AGENTMEM_NOW": NOW, "HOME": str(home), "USERPROFILE": str(home)})
    env.update({"AGENTMEM_CACHE_DIR": str(home / "cache"), "AGENTMEM_CONFIG_DIR": str(home / "config")})
    for k in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        env.pop(k, None)
    key = vault.key
    h = Hostile(vault, outside, tmp_path / "workspace", recorder, victim, [], key, env)

    # An honest start: a board with sessions and snapshots, a note, a recall index.
    assert _agentmem(h, "init").returncode == 0
    for topic in ("hostile vault", "second session"):
        p = _agentmem(h, "register", "--manual", "--topic", topic, "--snapshot", "-", "--json", stdin=SNAP.encode())
        assert p.returncode == 0, p.stderr
        h.sessions.append(json.loads(p.stdout)["session_id"])
    chat = tmp_path / "chat.md"
    chat.write_text(
        "User: From now on always use pnpm instead of npm in this repo.\n\nAssistant: OK.\n", encoding="utf-8"
    )
    assert _agentmem(h, "extract", "--offline", "--file", str(chat)).returncode == 0
    assert list(vault.longterm_dir.glob("*.md")), "the offline extraction should have written a note"
    assert _agentmem(h, "reindex").returncode == 0

    # Now the vault turns hostile.
    state = vault.state_dir
    os.mkfifo(_fresh(state / "daemon-status.json"))
    (state / "cache").mkdir(exist_ok=True)
    os.symlink("/dev/zero", _fresh(state / "cache" / "config.json"))
    os.mkfifo(_fresh(state / "board-cache.json"))
    _rmtree(state / "recall")
    os.symlink(outside / "recall-target", state / "recall")
    (state / "daemon.pid").write_text(
        json.dumps({"pid": victim.pid, "host": socket.gethostname(), "started_at": "2026-06-01T09:00:00"}),
        encoding="utf-8",
    )
    vault.config_path.write_text(f"llm_base_url: {recorder.url}\nllm_model: collector\nfoo: bar\n", encoding="utf-8")
    obsidian = vault.root / ".obsidian"
    obsidian.mkdir(exist_ok=True)
    os.symlink(outside / "victim.json", _fresh(obsidian / "types.json"))
    os.symlink(outside / "secret.md", vault.longterm_dir / "linked-out.md")
    os.mkfifo(vault.sessions_dir / "2026-06-01-0001-cursor-main-agent.md")
    (vault.longterm_dir / "impossible-date.md").write_text(
        "---\ntitle: bad date\ncreated: 2026-02-30\nx: &a [*a]\n---\nbody\n", encoding="utf-8"
    )
    with open(vault.index_path, "a", encoding="utf-8") as fh:
        fh.write(
            "2026-06-01-0002-cursor-main-agent | cursor-main-agent | pipe-less | s | k | idle | - | 2026-06-01 09:00 | 2026-06-01 09:00\n"
        )
        fh.write("| broken row |\n")
        fh.write(
            "| 2026-06-01-0003-cursor-main-agent | cursor-main-agent | "
            + "长" * 200_000
            + " | s | k | idle | - | 2026-06-01 09:00 | 2026-06-01 09:00 |\n"
        )
    cache = home / "cache"
    (cache / "daemon").mkdir(parents=True, exist_ok=True)
    os.mkfifo(_fresh(cache / "daemon" / f"{key}.recall-heartbeat.json"))
    (cache / "locks").mkdir(parents=True, exist_ok=True)
    os.symlink(outside / "victim.txt", _fresh(cache / "locks" / f"{key}-daemon.lock"))
    git = h.workspace / ".git"
    git.mkdir(parents=True)
    os.mkfifo(git / "config")
    (git / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    return h


def _fresh(p: Path) -> Path:
    if p.is_symlink() or p.exists():
        p.unlink()
    return p


def _rmtree(p: Path) -> None:
    import shutil

    if p.is_symlink():
        p.unlink()
    elif p.exists():
        shutil.rmtree(p)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):
    h = _build(tmp_path_factory.mktemp("hostile"))
    h.before = _tree(h.outside)
    h.kept = _kept(h.vault)
    yield h
    h.recorder.stop()
    h.victim.kill()
    h.victim.wait(timeout=10)
    subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(h.vault.root), "daemon", "stop"],
        env=h.env,
        capture_output=True,
        timeout=DEADLINE,
    )


def _harmless(h: Hostile) -> None:
    """What no command may do, checked after each one."""
    assert _tree(h.outside) == h.before, "something was written outside the vault"
    assert h.recorder.requests == [], "a request reached the server the vault named"
    assert h.victim.poll() is None, "the process the forged pid file named was killed"


def _kept(vault: Vault) -> dict[str, Any]:
    notes = {p.name for p in vault.longterm_dir.glob("*.md") if p.is_file() and not p.is_symlink()}
    snaps = {p.name for p in vault.sessions_dir.glob("*.md") if p.is_file() and not p.is_symlink()}
    return {"notes": notes, "snapshots": snaps, "board": vault.index_path.read_bytes()}


def _check_kept(vault: Vault, kept: dict[str, Any]) -> None:
    notes = {p.name for p in vault.longterm_dir.glob("*.md")}
    assert kept["notes"] <= notes, f"notes lost: {kept['notes'] - notes}"
    archived = {p.name + ".md" for p in vault.archive_dir.iterdir()} if vault.archive_dir.is_dir() else set()
    snaps = {p.name for p in vault.sessions_dir.glob("*.md")} | archived
    assert kept["snapshots"] <= snaps, f"snapshots lost: {kept['snapshots'] - snaps}"
    board = vault.index_path.read_text(encoding="utf-8")
    for line in kept["board"].decode("utf-8").splitlines():
        sid = line.strip("| ").split(" ", 1)[0]
        if sid.startswith("2026-") and sid + ".md" not in archived:
            assert sid in board, f"row {sid} lost"


def _clean(p: subprocess.CompletedProcess, what: str) -> None:
    out = p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out, f"{what}: {out[-3000:]}"


def _trustedges(what: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"{what}: owned by helper trustedges (issue 22)")


A, B = "<first session>", "<second session>"
CLI: list[Any] = [
    pytest.param(["list"], b"", id="list"),
    pytest.param(["--json", "list"], b"", id="json-list"),
    pytest.param(["show", A], b"", id="show"),
    pytest.param(["find", "hostile"], b"", id="find"),
    pytest.param(["register"], b"", id="register"),
    pytest.param(["register", "--manual", "--topic", "x" * 120_000], b"", id="register-huge-topic"),
    pytest.param(["update", A, "--snapshot", "-"], SNAP.encode(), id="update"),
    pytest.param(["update", A, "--snapshot", "-"], b"\0" * 3_000_000, id="update-huge-stdin"),
    pytest.param(["update", A, "--summary", "a\nb"], b"", id="update-newline-summary"),
    pytest.param(["continue", B, A], b"", id="continue"),
    pytest.param(["release", B, A], b"", id="release"),
    pytest.param(["say", "do not organize memory"], b"", id="say-negated"),
    pytest.param(["organize", "--dry-run"], b"", id="organize-dry-run"),
    pytest.param(["organize", "--stale-days", "1000000000000"], b"", id="organize-overflow"),
    pytest.param(["say", "整理 memory"], b"", id="say-organize"),
    pytest.param(["journal"], b"", id="journal"),
    pytest.param(["memories", "list"], b"", id="memories-list"),
    pytest.param(["memories", "search", "pnpm"], b"", id="memories-search"),
    pytest.param(["extract"], b"", id="extract"),
    pytest.param(["extract", "--offline"], b"", id="extract-offline"),
    pytest.param(["context", "pnpm"], b"", id="context"),
    pytest.param(["reindex"], b"", id="reindex"),
    pytest.param(["injected", A], b"", id="injected"),
    pytest.param(["doctor"], b"", id="doctor"),
    pytest.param(["doctor", "--fix"], b"", id="doctor-fix"),
    pytest.param(["init"], b"", id="init"),
    pytest.param(["install-hook", "cursor", "--dry-run"], b"", id="install-hook"),
    pytest.param(["install-mcp", "cursor", "--dry-run"], b"", id="install-mcp"),
    pytest.param(["daemon", "status"], b"", id="daemon-status"),
    pytest.param(["completion", "bash"], b"", id="completion"),
    pytest.param(["archive", B], b"", id="archive"),
]


@pytest.mark.parametrize(("argv", "stdin"), CLI)
def test_cli_on_the_hostile_vault(hostile: Hostile, argv: list[str], stdin: bytes) -> None:
    a, b = hostile.sessions
    argv = [a if x == A else b if x == B else x for x in argv]
    p = _agentmem(hostile, *argv, stdin=stdin)
    _clean(p, " ".join(x[:40] for x in argv))
    _harmless(hostile)


WS = "<workspace>"
HOOKS: list[Any] = [
    pytest.param("cursor-session-start", cursor_start(WS), id="cursor-start"),
    pytest.param(
        "cursor-session-start",
        cursor_start(WS, conv="c-2", workspace_roots=[WS] * 50_000),
        id="cursor-start-50000-roots",
    ),
    pytest.param("claude-session-start", claude_start(WS), id="claude-start"),
    pytest.param("codex-session-start", codex_start(WS), id="codex-start"),
    pytest.param("cursor-session-end", cursor_end(WS, "c-1", "<victim>"), id="cursor-end"),
    pytest.param("cursor-stop", cursor_end(WS, "c-1", "/dev/zero", event="stop"), id="cursor-stop"),
    pytest.param("claude-session-end", {"session_id": "s", "transcript_path": "/dev/zero", "cwd": WS}, id="claude-end"),
    pytest.param(
        "claude-user-prompt",
        {"session_id": "s", "prompt": "pnpm?", "cwd": WS, "hook_event_name": "UserPromptSubmit"},
        id="claude-prompt",
    ),
]


def _fill(obj: Any, h: Hostile) -> Any:
    if isinstance(obj, str):
        return str(h.workspace) if obj == WS else str(h.outside / "victim.txt") if obj == "<victim>" else obj
    if isinstance(obj, list):
        return [_fill(x, h) for x in obj]
    if isinstance(obj, dict):
        return {k: _fill(v, h) for k, v in obj.items()}
    return obj


@pytest.mark.parametrize(("name", "payload"), HOOKS)
def test_hook_on_the_hostile_vault(hostile: Hostile, name: str, payload: dict) -> None:
    data = json.dumps(_fill(payload, hostile), ensure_ascii=False).encode("utf-8")
    env = {**hostile.env, "AGENTMEM_VAULT": str(hostile.vault.root)}
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "agentmem_vault", "hook", name],
            input=data,
            capture_output=True,
            env=env,
            cwd=hostile.workspace,
            timeout=DEADLINE,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hook {name} hung")
    took = time.monotonic() - t0
    _clean(p, name)
    assert p.returncode == 0 and isinstance(json.loads(p.stdout.decode("ascii")), dict), p.stderr[-2000:]
    assert took < 15, f"hook {name} took {took:.0f} s (the agent would kill it)"
    _harmless(hostile)


MCP: list[Any] = [
    pytest.param("memory_whoami", {}, id="whoami"),
    pytest.param("memory_list", {}, id="list"),
    pytest.param("memory_find", {"query": "hostile"}, id="find"),
    pytest.param("memory_show", {"session_id": A}, id="show"),
    pytest.param("memory_context", {"task": "pnpm"}, id="context"),
    pytest.param("memory_search", {"query": "pnpm"}, id="search"),
    pytest.param("memory_register", {"topic": "t" * 5_000_000}, id="register-huge-topic"),
    pytest.param("memory_update", {"session_id": A, "snapshot": SNAP}, id="update"),
    pytest.param("memory_continue", {"session_id": B, "source_id": A}, id="continue"),
    pytest.param("memory_release", {"session_id": B, "source_id": A}, id="release"),
    pytest.param("memory_organize", {"dry_run": True}, id="organize"),
    pytest.param("memory_remember", {"text": "From now on use pnpm instead of npm."}, id="remember"),
    pytest.param("memory_deprecate", {"memory_id": "pnpm", "reason": "test"}, id="deprecate"),
    pytest.param("memory_archive", {"session_id": B}, id="archive"),
]


@pytest.mark.parametrize(("tool", "args"), MCP)
def test_mcp_tool_on_the_hostile_vault(hostile: Hostile, tool: str, args: dict) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    import anyio
    from mcp import Client, StdioServerParameters

    a, b = hostile.sessions
    args = {k: a if v == A else b if v == B else v for k, v in args.items()}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentmem_vault", "mcp", "--vault", str(hostile.vault.root)],
        env=hostile.env,
    )
    got: list[str] = []

    async def main() -> None:
        with anyio.fail_after(DEADLINE):
            async with Client(params, mode="legacy", read_timeout_seconds=DEADLINE) as c:
                r = await c.call_tool(tool, args)
                got.append(" ".join(getattr(x, "text", "") for x in r.content))

    try:
        anyio.run(main)
    except TimeoutError:
        pytest.fail(f"{tool} hung")
    assert "Traceback" not in got[0] and "internal_error" not in got[0], got[0][:2000]
    _harmless(hostile)


def test_the_daemon_on_the_hostile_vault(hostile: Hostile) -> None:
    p = _agentmem(hostile, "daemon", "start", "--rescan", "0.5")
    _clean(p, "daemon start")
    if p.returncode == 0:
        _clean(_agentmem(hostile, "daemon", "status", "--json"), "daemon status")
    _clean(_agentmem(hostile, "daemon", "stop"), "daemon stop")
    _harmless(hostile)


CONFIGS = [
    pytest.param("foo: 2026-02-30\n", id="impossible-date"),
    pytest.param("x: &a [*a]\n", id="self-reference"),
    pytest.param("deep: " + "[" * 5000 + "]" * 5000 + "\n", id="5000-deep"),
    pytest.param("stale_days: 1e308\nlock_timeout: .nan\n", id="out-of-range"),
]


@pytest.mark.parametrize("config", CONFIGS)
def test_a_config_the_yaml_loader_rejects(hostile: Hostile, config: str) -> None:
    """Every command refuses or falls back to the defaults, naming the file; the hook answers."""
    saved = hostile.vault.config_path.read_bytes()
    hostile.vault.config_path.write_text(config, encoding="utf-8")
    try:
        for argv in (["list"], ["register"], ["context", "pnpm"], ["extract", "--offline"], ["organize", "--dry-run"]):
            p = _agentmem(hostile, *argv)
            _clean(p, f"{argv[0]} with {config[:30]!r}")
            assert p.returncode in (0, 1), (argv, p.stderr[-500:])
        env = {**hostile.env, "AGENTMEM_VAULT": str(hostile.vault.root)}
        data = json.dumps(_fill(cursor_start(WS, conv="c-config"), hostile)).encode()
        h = subprocess.run(
            [sys.executable, "-m", "agentmem_vault", "hook", "cursor-session-start"],
            input=data,
            capture_output=True,
            env=env,
            cwd=hostile.workspace,
            timeout=DEADLINE,
        )
        _clean(h, "sessionStart hook")
        # the board holds a malformed row, so no ID is issued; the chat is told why, in one answer
        assert h.returncode == 0 and isinstance(json.loads(h.stdout.decode("ascii")), dict), h.stderr
    finally:
        hostile.vault.config_path.write_bytes(saved)
    _harmless(hostile)


def test_nothing_was_lost(hostile: Hostile) -> None:
    """Last in this module: every row, snapshot and note of the honest start is still there."""
    _check_kept(hostile.vault, hostile.kept)
