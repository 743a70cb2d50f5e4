"""Config resolution: the user's and the vault's settings, which vault, which agent name.

Kept free of heavy imports: the sessionStart hook goes through here on every new chat. PyYAML is
imported only when a config file changed since its parsed copy was cached as JSON.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from agentmem_vault.errors import ConfigError, VaultNotFound
from agentmem_vault.fastimport import LazyRegex
from agentmem_vault.model.ids import validate_agent_name
from agentmem_vault.vault import Vault, user_cache_dir, user_config_dir

TYPE_CHECKING = False  # typing itself is not imported at run time (the hook path, docs/performance.md)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_AGENT = "cursor-main-agent"

DEFAULTS: dict[str, Any] = {
    "agent_name": DEFAULT_AGENT,
    "background_agent_name": "cursor-background-agent",
    "stale_days": 14,
    "lock_timeout": 10.0,
    "model": "claude-sonnet-4-6",
    "assess_model": None,  # None = same as model
    "min_score": 4,
    "concurrency": 4,
    "rescan_seconds": 30,
    "debounce_seconds": 0.5,
    "quiet_minutes": 10,
    "max_snapshot_bytes": 1_000_000,  # the one snapshot limit (ops/sessions.py snapshot_limit)
}


def _read_yaml_cached(path: Path, cache: Path | None) -> dict:
    """Parse a YAML mapping, reusing a JSON copy keyed by (mtime, size) to skip importing PyYAML."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return _NO_SETTINGS
    stamp = [st.st_mtime_ns, st.st_size]
    seen = _PARSED.get(str(path))
    if seen is not None and seen[0] == stamp:
        return seen[1]  # this process read it already (the hook asks four times)
    data = _read_yaml_uncached(path, cache, stamp)
    _PARSED[str(path)] = (stamp, data)
    return data


# path -> ((mtime_ns, size), parsed mapping): one read per process while the file is unchanged.
# Callers never change the mapping they get (vault_config copies it into a fresh dict).
_PARSED: dict[str, tuple[list[int], dict]] = {}
_NO_SETTINGS: dict = {}  # a missing file


_CACHE_VERSION = 1  # of the parsed copies' layout (fs.load_cache)
CONFIG_BYTES = 1 << 20  # a settings file is a few hundred bytes; a bigger one is not read


def _read_yaml_uncached(path: Path, cache: Path | None, stamp: list[int]) -> dict:
    from agentmem_vault.errors import AgentmemError

    # read_bytes refuses a FIFO, a device or an outside link, never hangs
    from agentmem_vault.fs import load_cache, make_dirs, read_bytes, save_cache

    if cache is not None:
        # no cache, or a FIFO / link / junk where it belongs: parse the file itself
        got = load_cache(cache, _CACHE_VERSION, limit=CONFIG_BYTES)
        if got is not None and got[0] == stamp and isinstance(got[1], dict):
            return got[1]
    import yaml  # deferred: only when the config file changed

    from agentmem_vault.model import yamlload

    try:
        raw = read_bytes(path, limit=CONFIG_BYTES)
    except AgentmemError as exc:
        raise ConfigError(f"{path}: {exc.message}") from exc
    try:
        text = (raw or b"").decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text") from exc
    data = yamlload.load(text, ConfigError, str(path), "fix or remove that file", loader=yaml.SafeLoader) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    if cache is not None:
        try:
            make_dirs(cache.parent)  # a read-only vault stays untouched, even for root
        except (OSError, AgentmemError):
            return data  # a cache is never required
        save_cache(cache, _CACHE_VERSION, stamp, data)
    return data


def user_config() -> dict:
    return dict(_read_yaml_cached(user_config_dir() / "config.yaml", user_cache_dir() / "user-config.json"))


_MACHINE_ID_RE = LazyRegex(r"[a-z0-9]{1,12}")  # only when a machine_id is set


def machine_id() -> str:
    """This machine's ``machine_id`` from the user config (outside the vault, so each machine has
    its own): appended to new Session IDs on vaults synced through git (docs/sync.md). Empty, and
    IDs stay ``YYYY-MM-DD-HHMM-<agent>``, unless it is set."""
    value = str(user_config().get("machine_id") or "").strip().lower()
    if value and not _MACHINE_ID_RE.fullmatch(value):
        raise ConfigError(
            f"machine_id {value!r} in {user_config_dir() / 'config.yaml'}: use 1-12 letters a-z or digits"
        )
    return value


def set_user_setting(key: str, value: str) -> Path:
    """Set ``key: value`` in the user config file, keeping every other line (comments included)."""
    from agentmem_vault.fs import atomic_write_text, read_text

    path = user_config_dir() / "config.yaml"
    text = read_text(path) or ""
    line = f"{key}: {json.dumps(value, ensure_ascii=False)}"
    pat = re.compile(rf"^{re.escape(key)}[ \t]*:.*$", re.MULTILINE)
    if pat.search(text):
        text = pat.sub(lambda _: line, text, count=1)
    else:
        text = text + ("" if not text or text.endswith("\n") else "\n") + line + "\n"
    atomic_write_text(path, text)
    return path


def wiki_folder(root: Path) -> Path | None:
    """The ``wiki/`` folder that would hold ``root/memory``, if any. Working memory lives beside
    ``raw/`` and ``wiki/``, never inside ``wiki/`` (docs/setup.md). A folder named ``wiki`` above
    the Obsidian vault (the folder holding ``.obsidian/``) is not the vault's wiki; the vault
    itself may be called anything."""
    chain = (root, *root.parents)
    if not any(p.name.casefold() == "wiki" for p in chain):
        return None  # the usual case, without a single stat (the sessionStart hook resolves a vault)
    for p in chain:
        if (p / ".obsidian").is_dir():
            return None
        if p.name.casefold() == "wiki":
            return p
    return None


def check_not_in_wiki(vault: Vault) -> Vault:
    wiki = wiki_folder(vault.root)
    if wiki is not None:
        from agentmem_vault.errors import Refused

        raise Refused(
            f"refusing the vault {vault.root}: its memory/ folder would be inside {wiki}. Working memory "
            f"lives beside wiki/, not in it: use the folder that holds wiki/ ({wiki.parent}) as the vault",
            code="memory_inside_wiki",
        )
    return vault


def resolve_vault(explicit: str | os.PathLike | None = None, *, cwd: Path | None = None) -> Vault:
    """``--vault`` > ``AGENTMEM_VAULT`` > user config ``vault:`` > walk up from the current folder.
    A vault whose memory/ would sit inside a ``wiki/`` folder is refused (``wiki_folder``)."""
    return check_not_in_wiki(_resolve_vault(explicit, cwd=cwd))


def _resolve_vault(explicit: str | os.PathLike | None, *, cwd: Path | None) -> Vault:
    env = os.environ.get("AGENTMEM_VAULT")
    configured = None if explicit or env else user_config().get("vault")  # read only when it decides
    for value, source, fix in (
        (explicit, "--vault", "check the path, or create it with `agentmem init --vault {}`"),
        (env, "AGENTMEM_VAULT", "fix the variable, or create it with `agentmem init --vault {}`"),
        (
            configured and str(configured),
            f"'vault:' in {user_config_dir() / 'config.yaml'}" if configured else "",  # no home needed otherwise
            "run `agentmem setup` to pick or create the vault",
        ),
    ):
        if value:
            p = Path(value).expanduser()
            if not p.is_dir():
                raise VaultNotFound(f"vault folder not found: {p} (from {source}); {fix.format(p)}")
            return Vault(p.absolute())
    here = (cwd or Path.cwd()).absolute()
    for cand in (here, *here.parents):
        if (cand / "memory" / "index.md").is_file() or (cand / ".obsidian").is_dir():
            return Vault(cand)
    raise VaultNotFound(
        "no vault found: run `agentmem setup` (creates one and remembers it), or pass --vault PATH, set "
        f"AGENTMEM_VAULT, put 'vault: PATH' in {user_config_dir() / 'config.yaml'}, or run inside a folder holding memory/index.md or .obsidian/"
    )


# Settings checked once, when the config is read: (kind, low, high). A wrong value is a clear
# ConfigError naming the key, never a traceback in whatever command uses it (docs/reliability.md).
_NUM, _INT, _STR, _BOOL, _STRS = "number", "whole number", "text", "true or false", "text or a list of text"
SETTINGS: dict[str, tuple[str, float | None, float | None]] = {
    "stale_days": (_INT, 0, 36500),
    "lock_timeout": (_NUM, 0, 3600),
    "hook_lock_timeout": (_NUM, 0, 3600),
    "llm_timeout": (_NUM, 0.1, 3600),
    "llm_source_deadline": (_NUM, 0.1, 3600),
    "llm_progress_seconds": (_NUM, 0, 3600),
    "max_retries": (_INT, 0, 20),
    "concurrency": (_INT, 1, 64),
    "min_score": (_INT, 1, 5),
    "extract_chunk_chars": (_INT, 500, 10_000_000),
    "rescan_seconds": (_NUM, 0.05, 86400),
    "debounce_seconds": (_NUM, 0, 3600),
    "quiet_minutes": (_NUM, 0, 100000),
    "hook_recall_budget": (_INT, 0, 1_000_000),
    "max_snapshot_bytes": (_INT, 1024, 1 << 31),
    "hook_recall": (_BOOL, None, None),
    "hook_prompt_budget": (_INT, 0, 100_000),
    "hook_prompt_recall": (_BOOL, None, None),
    "model": (_STR, None, None),
    "agent_name": (_STR, None, None),
    "background_agent_name": (_STR, None, None),
    "allow_any_agent_name": (_BOOL, None, None),
    "transcript_dirs": (_STRS, None, None),
}


def validate_settings(data: dict, where: Path | str) -> dict:
    """Check the known settings (unknown keys are left alone: other tools may share the file)."""
    for key, (kind, low, high) in SETTINGS.items():
        v = data.get(key)
        if v is None:
            continue
        if kind in (_NUM, _INT):
            # v - v == 0 refuses NaN and ±inf (without importing math on the hook path)
            ok = not isinstance(v, bool) and isinstance(v, (int, float)) and v - v == 0
            if ok and kind == _INT:
                ok = v == int(v)
            if ok and ((low is not None and v < low) or (high is not None and v > high)):
                raise ConfigError(f"{where}: {key}: expected a {kind} between {low:g} and {high:g}, got {v!r}")
        elif kind == _STRS:
            ok = isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
        else:
            ok = isinstance(v, bool if kind == _BOOL else str)
        if not ok:
            raise ConfigError(f"{where}: {key}: expected a {kind}, got {v!r}")
    return data


def vault_config(vault: Vault) -> dict:
    """The vault's settings over DEFAULTS, validated (a fresh dict: callers may change it)."""
    raw = _read_yaml_cached(vault.config_path, vault.state_dir / "cache" / "config.json")
    return validate_settings({**DEFAULTS, **raw}, vault.config_path)


AGENT_SUFFIX = "-agent"


def resolve_agent(explicit: str | None, cfg: dict | None = None, *, allow_any: bool = False) -> str:
    """``--agent`` > ``AGENTMEM_AGENT`` > config ``agent_name`` > ``cursor-main-agent``.

    The procedure's convention (docs/board.md): an Agent Name names the agent and ends in
    ``-agent`` (``cursor-main-agent``, ``claude-code-agent``); task wording belongs in the Topic.
    Another name is refused with the reason unless ``allow_any`` (``--allow-agent-name``), the
    config's ``allow_any_agent_name: true`` or ``AGENTMEM_ALLOW_ANY_AGENT_NAME=1`` says so."""
    cfg = cfg or {}
    name = validate_agent_name(
        str(explicit or os.environ.get("AGENTMEM_AGENT") or cfg.get("agent_name") or DEFAULT_AGENT)
    )
    if name.endswith(AGENT_SUFFIX) and len(name) > len(AGENT_SUFFIX):
        return name
    if allow_any or cfg.get("allow_any_agent_name") is True or os.environ.get("AGENTMEM_ALLOW_ANY_AGENT_NAME") == "1":
        return name
    from agentmem_vault.errors import UsageError

    raise UsageError(
        f"agent name {name!r} does not follow the convention: an Agent Name names the agent, not the task, "
        f"and ends in '-agent' (cursor-main-agent, claude-code-agent, codex-main-agent); put the task in "
        "--topic or --keywords. To use this name anyway pass --allow-agent-name, or set "
        "allow_any_agent_name: true in config.yaml or AGENTMEM_ALLOW_ANY_AGENT_NAME=1",
        code="agent_name_convention",
    )
