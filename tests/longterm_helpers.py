"""A local HTTP server that answers like the Anthropic Messages API (POST /v1/messages), so the
real ``anthropic`` client is exercised without the network."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from agentmem_vault.longterm.schema import MemoryObject


def message(content: list[dict], *, usage: dict | None = None, stop_reason: str = "tool_use") -> dict:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage
        or {"input_tokens": 120, "output_tokens": 40, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0},
    }


def tool_reply(name: str, data: Any) -> tuple[int, dict, bytes]:
    body = message([{"type": "tool_use", "id": "toolu_1", "name": name, "input": data}])
    return 200, {}, json.dumps(body).encode()


def memory_object(title: str, content: str, **kw: Any) -> MemoryObject:
    """A candidate as extraction yields it (a development rule unless ``kw`` says otherwise)."""
    d: dict[str, Any] = dict(
        action="create",
        title=title,
        content=content,
        category="development_code_specification",
        keywords=[],
        usage_scenario=[],
        importance=0.8,
        score=5,
        sources=["file:a.md"],
    )
    d.update(kw)
    return MemoryObject(**d)


def memory(title: str, content: str, **kw: Any) -> dict:
    d = {
        "action": "create",
        "title": title,
        "content": content,
        "category": "project_tech_stack",
        "keywords": ["pnpm"],
        "usage_scenario": ["installing packages"],
        "project": "",
        "module": "",
        "importance": 0.8,
        "reason": "the user said so",
    }
    d.update(kw)
    return d


class FakeMessagesAPI:
    """Replies from ``script`` (a list of (status, headers, body) consumed in order), then from
    ``extract_memories`` / ``assess_score`` by the forced tool's name. Requests are recorded."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict, bytes]] = []
        self.extract_memories: list[dict] = []
        self.assess_score: int | Callable[[dict], int] = 5
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        # "tool": forced tool replies; "text": JSON / "评分：N" in text although a tool was forced;
        # "no-tools": HTTP 400 for any request with tools or cache_control, text replies otherwise
        self.shape = "tool"
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(n)
                try:
                    req = json.loads(raw)
                except ValueError:
                    req = {"_raw": raw.decode("utf-8", "replace")}
                with api._lock:
                    api.requests.append({"path": self.path, "headers": dict(self.headers), "body": req})
                    status, headers, body = api.script.pop(0) if api.script else api._default(req)
                    api.statuses.append(status)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _default(self, req: dict) -> tuple[int, dict, bytes]:
        kind = request_kind(req)
        if self.shape == "no-tools" and (
            "tools" in req or any("cache_control" in b for b in req.get("system") or [] if isinstance(b, dict))
        ):
            err = {"type": "error", "error": {"type": "invalid_request_error", "message": "unsupported field"}}
            return 400, {}, json.dumps(err).encode()
        if kind == "assess":
            score = self.assess_score(req) if callable(self.assess_score) else self.assess_score
            if self.shape == "tool":
                return tool_reply("record_assessment", {"reason": "specific and requested by the user", "score": score})
            # a weaker model answers in the assessment prompt's own text format
            return text_reply(f"它不同于负面示例：具体且可操作。\n评分：{score}")
        if self.shape == "tool":
            return tool_reply("record_memories", {"explanation": "none violated", "memories": self.extract_memories})
        return text_reply(
            "```json\n"
            + json.dumps({"explanation": "none violated", "memories": self.extract_memories}, ensure_ascii=False)
            + "\n```"
        )

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeMessagesAPI":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def calls(self, tool: str) -> list[dict]:
        return [r["body"] for r in self.requests if (r["body"].get("tool_choice") or {}).get("name") == tool]

    def answered(self, kind: str) -> list[dict]:
        """Requests of one kind ("extract" / "assess") that got a 200 reply, whatever their shape."""
        return [
            r["body"] for r, st in zip(self.requests, self.statuses) if st == 200 and request_kind(r["body"]) == kind
        ]


def request_kind(req: dict) -> str:
    tool = (req.get("tool_choice") or {}).get("name")
    if tool:
        return "assess" if tool == "record_assessment" else "extract"
    system = " ".join(b.get("text", "") for b in req.get("system") or [] if isinstance(b, dict))
    return "assess" if "值得记住" in system and "评分" in system and "<目标>" not in system else "extract"


def text_reply(text: str) -> tuple[int, dict, bytes]:
    body = message([{"type": "text", "text": text}], stop_reason="end_turn")
    return 200, {}, json.dumps(body).encode()


OVERLOADED = (
    529,
    {"retry-after": "0", "retry-after-ms": "1"},
    json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode(),
)
RATE_LIMITED = (
    429,
    {"retry-after": "0", "retry-after-ms": "1"},
    json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}).encode(),
)


# -- pytest fixtures shared by the model-path tests (imported into their modules) -------------------

import pytest  # noqa: E402


@pytest.fixture
def api():
    """A started local Messages-API server, stopped after the test."""
    srv = FakeMessagesAPI().start()
    yield srv
    srv.stop()


@pytest.fixture
def no_base_url(monkeypatch):
    """The tests give the server's URL themselves; a base URL from the environment must not win."""
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


class StalledServer:
    """A local socket server whose answers never finish: each connection goes to ``serve(conn,
    stop)`` in a thread of its own; without ``serve`` it is held open, read from and answered never.
    ``accepted`` counts the connections."""

    def __init__(self, serve: Callable[[socket.socket, threading.Event], None] | None = None) -> None:
        self.serve = serve
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.conns: list[socket.socket] = []
        self.accepted = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._t = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(c)
            self.accepted += 1
            if self.serve is not None:
                t = threading.Thread(target=self.serve, args=(c, self._stop), daemon=True)
                self._threads.append(t)
                t.start()

    def __enter__(self) -> "StalledServer":
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(timeout=5)
        for t in self._threads:
            t.join(timeout=5)
        for c in self.conns:
            c.close()
        self.sock.close()
