"""Where the daemon keeps its files.

In the vault's ``memory/.agentmem/`` (hidden from Obsidian, never needed for correctness): the pid
file, the status file, the log. Outside the vault, in the user cache directory: the single-instance
lock and the stop request, because cloud-sync clients break lock files and sync them to other
machines.
"""

from __future__ import annotations

from pathlib import Path

from agentmem_vault.vault import Vault, user_cache_dir


def pid_path(vault: Vault) -> Path:
    return vault.state_dir / "daemon.pid"


def status_path(vault: Vault) -> Path:
    return vault.state_dir / "daemon-status.json"


def log_path(vault: Vault) -> Path:
    return vault.state_dir / "daemon.log"


def instance_lock_path(vault: Vault) -> Path:
    return user_cache_dir() / "locks" / f"{vault.key}-daemon.lock"


def stop_request_path(vault: Vault) -> Path:
    return user_cache_dir() / "locks" / f"{vault.key}-daemon.stop"


def stderr_path(vault: Vault) -> Path:
    return user_cache_dir() / "daemon" / f"{vault.key}.stderr.log"
