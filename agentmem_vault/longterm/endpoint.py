"""Which model server to talk to, and with which credential: the trust boundary of model settings.

A vault is shared data (docs/reliability.md, "What a vault can make the tool do"): its
``memory/.agentmem/config.yaml`` arrives from a teammate or a sync client. The user's own choices
live in the environment (``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``)
and in the user config (outside every vault). A server named only by a vault gets the user's
conversations, so it is used only when the user config says ``llm_allow_vault_base_url: true``;
and even then the user's credentials go only to a loopback server: a remote server named by a
vault gets the vault's own token (``llm_auth_token`` / ``anthropic_api_key`` in that config) or
none. Anything else is refused with the reason, before a connection is made.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from agentmem_vault.errors import ConfigError

# A compatible server without a key (a local Ollama or llama-server) still gets a non-empty one:
# the SDK refuses to send a request with no credentials at all, and an empty one would make it
# read the user's environment key instead.
LOCAL_KEY = "local"

OPT_IN = "llm_allow_vault_base_url"
_URL_KEYS = ("llm_base_url", "anthropic_base_url")


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and what they carry: exactly one of ``api_key`` / ``auth_token``."""

    base_url: str | None  # None: Anthropic's own API
    api_key: str | None
    auth_token: str | None
    origin: str  # where base_url came from: "environment", "user config", "vault config" or "default"


def _first(cfg: Mapping, keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = cfg.get(k)
        if v:
            return str(v)
    return None


def is_loopback(url: str) -> bool:
    """True for a server on this machine (127.0.0.0/8, ::1, ``localhost``), by the URL alone."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _credentials(env: Mapping[str, str], user: Mapping, vault: Mapping | None) -> tuple[str | None, str | None]:
    """The first credential, as (api_key, auth_token): environment, then user config, then vault."""
    for api_key, token in (
        (env.get("ANTHROPIC_API_KEY"), env.get("ANTHROPIC_AUTH_TOKEN")),
        (_first(user, ("anthropic_api_key",)), _first(user, ("llm_auth_token",))),
        *([(_first(vault, ("anthropic_api_key",)), _first(vault, ("llm_auth_token",)))] if vault is not None else []),
    ):
        if api_key:
            return api_key, None
        if token:
            return None, token
    return None, None


def resolve_endpoint(
    vault_cfg: Mapping,
    user_cfg: Mapping,
    env: Mapping[str, str],
    *,
    vault_config_path: Path | str = "memory/.agentmem/config.yaml",
    user_config_path: Path | str = "the user config",
) -> Endpoint | None:
    """The model endpoint, None when nothing turns the model path on (offline), or ConfigError
    when the vault names a server the user did not allow (module doc)."""
    env_url = env.get("ANTHROPIC_BASE_URL") or None
    user_url = _first(user_cfg, _URL_KEYS)
    vault_url = _first(vault_cfg, _URL_KEYS)
    if env_url or user_url or not vault_url:
        base_url = env_url or user_url
        origin = "environment" if env_url else "user config" if user_url else "default"
        api_key, token = _credentials(env, user_cfg, vault_cfg)
        if not (api_key or token):
            if not base_url:
                return None  # no key and no server: offline
            api_key = LOCAL_KEY
        return Endpoint(base_url, api_key, token, origin)
    if user_cfg.get(OPT_IN) is not True:
        raise ConfigError(
            f"{vault_config_path}: llm_base_url {vault_url!r} comes from the vault, and a vault may not "
            "send your conversations or keys to a server you did not choose. To use it, set "
            f"ANTHROPIC_BASE_URL, or put `llm_base_url: {vault_url}` (or `{OPT_IN}: true`) in {user_config_path}",
            code="untrusted_setting",
        )
    if is_loopback(vault_url):
        api_key, token = _credentials(env, user_cfg, vault_cfg)
    else:  # a remote server chosen by the vault never sees the user's own credentials
        api_key, token = _credentials({}, {}, vault_cfg)
    if not (api_key or token):
        api_key = LOCAL_KEY
    return Endpoint(vault_url, api_key, token, "vault config")
