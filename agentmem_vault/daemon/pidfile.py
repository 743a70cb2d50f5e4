"""Which process is this vault's daemon: the only process ``daemon stop`` may signal.

The vault's pid file is vault data, never believed; only the run record in the user cache names
the pid to signal, and only while that process's command line is this vault's daemon (the rule:
docs/reliability.md, "make `daemon stop` signal another process").
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

from agentmem_vault.vault import Vault, ensure_cache_folder, user_cache_dir
from agentmem_vault.errors import AgentmemError
from agentmem_vault.fs import atomic_write_text, read_bytes, read_head
from agentmem_vault.daemon import paths


def run_record_path(vault: Vault) -> Path:
    return user_cache_dir() / "locks" / f"{vault.key}-daemon.run"


STATE_FILE_BYTES = 4 << 20  # the daemon's state files are a few KB; anything bigger is not ours


def read_json(path: Path) -> dict | None:
    """A state file's JSON object, or None (absent, a FIFO, a link out, too big, junk)."""
    try:
        data = json.loads((read_bytes(path, limit=STATE_FILE_BYTES) or b"null").decode("utf-8-sig"))
    except (AgentmemError, OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def record_run(vault: Vault, info: dict) -> str:
    """Write this process's pid file and run record; return the run's token."""
    token = secrets.token_hex(16)
    text = json.dumps({**info, "pid": os.getpid(), "token": token}) + "\n"
    record = run_record_path(vault)
    ensure_cache_folder(record.parent)
    atomic_write_text(record, text)  # first: the vault's copy alone never makes a pid trusted
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(paths.pid_path(vault), text)
    return token


def clear_run(vault: Vault, token: str) -> None:
    """Remove the pid file and the run record, when they are still this run's."""
    for path in (paths.pid_path(vault), run_record_path(vault)):
        data = read_json(path)
        if data is not None and data.get("token") == token:
            with suppress(OSError):
                path.unlink()


def command_line(pid: int) -> list[str] | None:
    """The process's argv, or None when it cannot be read (gone, another platform)."""
    if sys.platform.startswith("linux"):
        try:
            raw = read_head(Path(f"/proc/{int(pid)}/cmdline"), 1 << 16) or b""
        except AgentmemError:
            return None
        return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0") if a] or None
    if sys.platform == "darwin":  # pragma: no cover - macOS only
        try:
            out = subprocess.run(
                ["ps", "-ww", "-o", "command=", "-p", str(int(pid))], capture_output=True, timeout=5, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.decode("utf-8", "surrogateescape").split() or None
    return None


def _same_folder(a: str, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def is_daemon_of(argv: list[str], vault: Vault) -> bool:
    """``argv`` is ``agentmem [--vault THIS] … daemon run …`` (as a script or ``-m agentmem_vault``)."""
    if not any(os.path.basename(a).startswith("agentmem") for a in argv[:3]):
        return False
    if not any(argv[i] == "daemon" and argv[i + 1] == "run" for i in range(len(argv) - 1)):
        return False
    for i, a in enumerate(argv):
        if a == "--vault" and i + 1 < len(argv):
            return _same_folder(argv[i + 1], vault.root)
        if a.startswith("--vault="):
            return _same_folder(a.split("=", 1)[1], vault.root)
    return True  # the vault came from AGENTMEM_VAULT or the user config: the run record is this vault's


def trusted_pid(vault: Vault) -> int | None:
    """The pid ``daemon stop`` may signal, or None: the run record's pid when that process is this
    vault's daemon. The vault's pid file is never asked (module doc)."""
    record = read_json(run_record_path(vault))
    pid = record.get("pid") if record else None
    if type(pid) is not int or pid <= 0:
        return None
    argv = command_line(pid)
    return pid if argv is not None and is_daemon_of(argv, vault) else None
