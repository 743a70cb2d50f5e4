"""The trust boundary of model settings and the wall-clock deadline of model calls
(docs/reliability.md, "What a vault can make the tool do"). The real anthropic client talks to
local servers on 127.0.0.1 that record what reaches them; a remote host is reached through a
local HTTP proxy (the recorder), so no test touches the network."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from agentmem_vault.vault import Vault, user_config_dir
from agentmem_vault.errors import ConfigError
from agentmem_vault.longterm.endpoint import LOCAL_KEY, is_loopback, resolve_endpoint

from conftest import run_cli as _run_cli
from longterm_helpers import FakeMessagesAPI, StalledServer, memory

USER_KEY = "sk-ant-the-users-own-key"


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: the SDK reads the real environment
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


@pytest.fixture
def recorder():
    api = FakeMessagesAPI().start()
    api.extract_memories = [memory("Use pnpm", "Use pnpm instead of npm in this repository.")]
    yield api
    api.stop()


def _chat(tmp_path: Path) -> Path:
    chat = tmp_path / "chat.md"
    chat.write_text("User: From now on use pnpm instead of npm in this repo.\n\nAssistant: OK.\n", encoding="utf-8")
    return chat


def _user_config(text: str) -> None:
    user_config_dir().mkdir(parents=True, exist_ok=True)
    (user_config_dir() / "config.yaml").write_text(text, encoding="utf-8")


def _no_proxy_env(**extra: str) -> dict:
    env = {"HTTP_PROXY": "", "http_proxy": "", "HTTPS_PROXY": "", "https_proxy": "", "ALL_PROXY": "", "all_proxy": ""}
    env.update({"NO_PROXY": "", "no_proxy": "", "ANTHROPIC_BASE_URL": "", "ANTHROPIC_AUTH_TOKEN": ""})
    env.update(extra)
    return env


def _seen_secrets(api: FakeMessagesAPI) -> list[str]:
    return [json.dumps(r["headers"]) for r in api.requests if USER_KEY in json.dumps(r["headers"])]


def test_a_vault_server_without_the_users_opt_in_gets_nothing(vault: Vault, tmp_path: Path, recorder) -> None:
    vault.config_path.write_text(f"llm_base_url: {recorder.url}\n", encoding="utf-8")
    p = run_cli("extract", "--file", str(_chat(tmp_path)), vault=vault, env=_no_proxy_env(ANTHROPIC_API_KEY=USER_KEY))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "llm_base_url" in p.stderr and "comes from the vault" in p.stderr and "llm_allow_vault_base_url" in p.stderr
    assert recorder.requests == []  # not the key, not the conversation
    assert list(vault.longterm_dir.glob("*.md")) == []


def test_opted_in_loopback_server_is_used(vault: Vault, tmp_path: Path, recorder) -> None:
    vault.config_path.write_text(f"llm_base_url: {recorder.url}\n", encoding="utf-8")
    _user_config("llm_allow_vault_base_url: true\n")
    p = run_cli(
        "extract", "--file", str(_chat(tmp_path)), "--json", vault=vault, env=_no_proxy_env(ANTHROPIC_API_KEY=USER_KEY)
    )
    assert p.returncode == 0, p.stderr
    assert recorder.requests and json.loads(p.stdout)["mode"] == "model"


def test_opted_in_remote_vault_server_gets_the_vaults_token_never_the_users_key(
    vault: Vault, tmp_path: Path, recorder
) -> None:
    vault.config_path.write_text(
        "llm_base_url: http://models.teammate.example\nllm_auth_token: the-vaults-token\n", encoding="utf-8"
    )
    _user_config("llm_allow_vault_base_url: true\n")
    env = _no_proxy_env(ANTHROPIC_API_KEY=USER_KEY, HTTP_PROXY=recorder.url, http_proxy=recorder.url)
    p = run_cli("extract", "--file", str(_chat(tmp_path)), "--json", vault=vault, env=env)
    assert p.returncode == 0, p.stderr
    assert recorder.requests, "the request should have gone through the proxy"
    assert all(r["path"].startswith("http://models.teammate.example/") for r in recorder.requests)
    assert {r["headers"].get("Authorization") for r in recorder.requests} == {"Bearer the-vaults-token"}
    assert _seen_secrets(recorder) == []


def test_remote_vault_server_without_opt_in_is_refused_before_connecting(
    vault: Vault, tmp_path: Path, recorder
) -> None:
    vault.config_path.write_text("anthropic_base_url: http://collector.example:18777\n", encoding="utf-8")
    env = _no_proxy_env(ANTHROPIC_API_KEY=USER_KEY, HTTP_PROXY=recorder.url, http_proxy=recorder.url)
    p = run_cli("eval", "--set", "tuned", vault=vault, env=env)
    assert p.returncode == 1 and "Traceback" not in p.stderr and "collector.example" in p.stderr
    assert recorder.requests == []


def test_the_users_own_server_is_trusted(vault: Vault, tmp_path: Path, recorder) -> None:
    vault.config_path.write_text("llm_base_url: http://collector.example:18777\n", encoding="utf-8")
    _user_config(f"llm_base_url: {recorder.url}\n")  # the user's choice wins over the vault's
    p = run_cli(
        "extract", "--file", str(_chat(tmp_path)), "--json", vault=vault, env=_no_proxy_env(ANTHROPIC_API_KEY=USER_KEY)
    )
    assert p.returncode == 0, p.stderr
    assert recorder.requests and all(r["path"] == "/v1/messages" for r in recorder.requests)


def test_resolve_endpoint_rules() -> None:
    env = {"ANTHROPIC_API_KEY": USER_KEY}
    ep = resolve_endpoint({}, {}, env)
    assert ep is not None and (ep.base_url, ep.api_key, ep.origin) == (None, USER_KEY, "default")
    assert resolve_endpoint({}, {}, {}) is None  # nothing configured: offline
    ep = resolve_endpoint({"anthropic_api_key": "vault-key"}, {}, {})
    assert ep is not None and ep.api_key == "vault-key" and ep.base_url is None  # the vault's own key to Anthropic
    with pytest.raises(ConfigError, match="comes from the vault"):
        resolve_endpoint({"llm_base_url": "http://127.0.0.1:1"}, {}, env)
    with pytest.raises(ConfigError):
        resolve_endpoint({"llm_base_url": "http://x.example"}, {"llm_allow_vault_base_url": "yes"}, env)  # not `true`
    ep = resolve_endpoint({"llm_base_url": "http://x.example"}, {"llm_allow_vault_base_url": True}, env)
    assert ep is not None and (ep.api_key, ep.auth_token) == (LOCAL_KEY, None)
    ep = resolve_endpoint({"llm_base_url": "http://[::1]:8080"}, {"llm_allow_vault_base_url": True}, env)
    assert ep is not None and ep.api_key == USER_KEY
    ep = resolve_endpoint({"llm_base_url": "http://x.example"}, {}, {**env, "ANTHROPIC_BASE_URL": "http://gw.example"})
    assert ep is not None and (ep.base_url, ep.api_key, ep.origin) == ("http://gw.example", USER_KEY, "environment")
    assert [is_loopback(u) for u in ("http://localhost:1", "http://127.9.0.1", "http://127.0.0.1.example", "x")] == [
        True,
        True,
        False,
        False,
    ]


def trickle(gap: float) -> Callable[[socket.socket, threading.Event], None]:
    """Answer with headers, then one byte of the body every ``gap`` seconds, forever."""

    def serve(c: socket.socket, stop: threading.Event) -> None:
        with c:
            c.settimeout(5)
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += c.recv(65536)
                c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n")
                while not stop.wait(gap):
                    c.sendall(b" ")
            except OSError:
                return

    return serve


def test_a_trickling_server_cannot_stretch_the_deadline(vault: Vault, tmp_path: Path) -> None:
    vault.config_path.write_text(
        "llm_timeout: 5\nllm_source_deadline: 5\nmax_retries: 4\nllm_progress_seconds: 1\n", encoding="utf-8"
    )
    with StalledServer(trickle(2.0)) as srv:
        env = _no_proxy_env(ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=srv.url)
        t0 = time.monotonic()
        p = run_cli("extract", "--file", str(_chat(tmp_path)), "--json", vault=vault, env=env, timeout=120)
        took = time.monotonic() - t0
    assert "Traceback" not in p.stderr and srv.accepted >= 1
    # the old code was still running at 150 s; 45 s leaves room for interpreter starts on a loaded machine
    assert took < 45, f"extract took {took:.0f} s against a 5 s deadline"
    out = json.loads(p.stdout)
    assert any("deadline" in e["error"] for e in out["errors"]), out["errors"]
    used = [float(m) for m in re.findall(r"\((\d+) s of 5 s\)", p.stderr)]
    assert used and max(used) <= 6, p.stderr  # the progress line tells the real time, and it stays within
