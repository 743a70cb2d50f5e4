"""Which project a call serves: what the client tells the server about the chat's workspace.

The rule and its order are ``recall.scoping.chat_scope`` (docs/mcp.md, "Which project"); this
module only asks the client for its MCP roots (``roots/list``, when the client declared the
capability; deprecated by the 2026-07-28 specification but still sent by clients) and turns
their ``file://`` URIs into folders. A client that does not answer in time, or answers with an
error, gives no roots: the next source in the order decides.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any
from urllib.parse import unquote, urlparse

import anyio

log = logging.getLogger("agentmem.mcp")

ROOTS_TIMEOUT = 5.0  # seconds a client gets to answer roots/list


def root_folder(uri: str) -> str | None:
    """The folder of a ``file://`` root (``file:///C:/x`` -> ``C:/x`` on Windows), else None."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # /C:/Users/... (a Windows drive)
        path = path[1:]
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"  # a UNC share
    return path or None


async def client_roots(ctx: Any) -> list[str]:
    """The folders of the client's MCP roots, in the client's order ([] when it has none)."""
    try:
        session = ctx.session
        caps = session.client_capabilities
        if caps is None or getattr(caps, "roots", None) is None:
            return []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the capability's deprecation: clients still send roots
            with anyio.fail_after(ROOTS_TIMEOUT):
                res = await session.list_roots()
    except Exception as exc:  # noqa: BLE001 - no roots is an answer too: the next source decides
        log.info("roots/list gave no roots: %r", exc)
        return []
    return [f for f in (root_folder(str(r.uri)) for r in res.roots) if f]
