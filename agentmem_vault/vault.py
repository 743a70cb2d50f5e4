"""The vault and its paths: every file of a vault is named here, once (docs/board.md), and the
user-level folders outside any vault (config, cache: locks and logs).

Kept free of heavy imports: the sessionStart hook goes through here on every new chat.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple
from pathlib import Path

from agentmem_vault.errors import ConfigError
from agentmem_vault.model.ids import validate_session_id

TYPE_CHECKING = False  # typing is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

try:  # the builtin module: hashlib loads OpenSSL, which the sessionStart hook cannot afford
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256 as _sha256


def user_config_dir() -> Path:
    env = os.environ.get("AGENTMEM_CONFIG_DIR")
    if env:
        return Path(env)
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "agentmem"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "agentmem"


def user_cache_dir() -> Path:
    """Where locks and logs live: outside any cloud-synced vault (sync clients break lock files)."""
    env = os.environ.get("AGENTMEM_CACHE_DIR")
    if env:
        return Path(env)
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "agentmem" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "agentmem"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentmem"


def ensure_cache_folder(folder: Path) -> Path:
    """Create a folder under the user cache dir, or a clear ConfigError (a cache dir that is a
    file, no permission) naming AGENTMEM_CACHE_DIR, never a traceback."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot use the cache folder {folder}: {exc.strerror or exc} (is {user_cache_dir()} a file?). "
            "Set AGENTMEM_CACHE_DIR to a writable local folder"
        ) from exc
    return folder


def _under(folder: str, name: str) -> Any:
    """A property: ``name`` in the vault's ``folder`` (``memory`` or ``state_dir``)."""
    return property(lambda self: getattr(self, folder) / name)


class Vault(namedtuple("Vault", ("root", "memory", "state_dir"))):
    """A vault folder. A named tuple, not a dataclass (importing ``dataclasses`` costs the
    sessionStart hook more than its own work, docs/performance.md): immutable, with equality and
    repr for free. ``memory`` and ``state_dir``, the two folders every path below is built from,
    are joined once: the hook asks for them dozens of times, and each pathlib join is a parse."""

    __slots__ = ()
    root: Path
    memory: Path
    state_dir: Path

    def __new__(cls, root: Path) -> Vault:
        return super().__new__(cls, root, root / "memory", root / "memory" / ".agentmem")

    def __getnewargs__(self) -> tuple[Path]:  # type: ignore[override]
        return (self.root,)

    # the vault's files and folders, each named once
    index_path: Path = _under("memory", "index.md")
    sessions_dir: Path = _under("memory", "sessions")
    archive_dir: Path = _under("memory", "archive")
    longterm_dir: Path = _under("memory", "long-term")
    journal_path: Path = _under("state_dir", "journal.jsonl")
    issued_ids_path: Path = _under("state_dir", "issued-ids.txt")  # every Session ID handed out (docs/reliability.md)
    config_path: Path = _under("state_dir", "config.yaml")

    def session_path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{validate_session_id(session_id)}.md"

    def archive_path(self, session_id: str) -> Path:
        return self.archive_dir / validate_session_id(session_id)

    @property
    def key(self) -> str:
        """Stable key of this vault for per-vault state kept outside it (locks, logs)."""
        try:
            p = str(self.root.resolve())
        except OSError:
            p = str(self.root.absolute())
        return _sha256(os.path.normcase(p).encode("utf-8", "surrogatepass")).hexdigest()[:16]  # non-UTF-8 names too

    def lock_path(self, name: str = "index") -> Path:
        return user_cache_dir() / "locks" / f"{self.key}-{name}.lock"
