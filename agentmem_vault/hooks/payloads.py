"""Agent hook payloads in, agent hook answers out (pure: text -> HookEvent -> dict). What each
agent sends and which answer it honours: docs/setup.md ("What the hooks read and answer").
All answers are written ASCII-only (``\\uXXXX`` escapes are valid JSON), so the console encoding
of the shell that runs the hook (PowerShell on Windows) can never garble a CJK vault path.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple

from agentmem_vault.errors import PayloadError
from agentmem_vault.fastimport import utf8

# hook name -> (agent, event)
HOOKS: dict[str, tuple[str, str]] = {
    "cursor-session-start": ("cursor", "session-start"),
    "claude-session-start": ("claude", "session-start"),
    "codex-session-start": ("codex", "session-start"),
    "cursor-session-end": ("cursor", "session-end"),
    "cursor-stop": ("cursor", "stop"),
    "claude-session-end": ("claude", "session-end"),
    "claude-stop": ("claude", "stop"),
    "codex-stop": ("codex", "stop"),
    "claude-user-prompt": ("claude", "prompt"),
    "codex-user-prompt": ("codex", "prompt"),
}

_MAX_ID = 200
# Workspace roots read from a payload (docs/reliability.md, "Limits"): a multi-root workspace has
# a handful; each root is looked at on the way to the vault and the project.
MAX_ROOTS = 64
_CTRL_RE = re.compile(r"[\x00-\x1f\x7f]")
# Cursor on Windows has been seen to send workspace roots as "/c:/Users/..." (a URI path).
_WIN_URI_PATH_RE = re.compile(r"^/[A-Za-z]:[/\\]")


# One agent hook call: ``agent`` cursor | claude | codex; ``event`` session-start | session-end |
# stop | prompt; ``conversation_id`` the agent's own chat ID; ``roots`` the folders to search for the
# vault, in order; ``source`` startup | resume | clear | compact (Claude Code, Codex); ``background``
# a Cursor background agent. A named tuple: importing dataclasses costs the hook more than its own work.
HookEvent = namedtuple("HookEvent", "agent event conversation_id transcript_path roots source background extra")


def _clean_str(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    v = value.strip()
    if not v or len(v) > 4096:
        return None
    return v


def _clean_id(value: object) -> str | None:
    v = _clean_str(value)
    if v is None or len(v) > _MAX_ID or _CTRL_RE.search(v):
        return None
    return v


def normalize_root(value: object) -> str | None:
    v = _clean_str(value)
    if v is None or _CTRL_RE.search(v):
        return None
    if v.startswith("file://"):
        from urllib.parse import unquote  # rare: only for URI-shaped roots

        v = unquote(v[len("file://") :])
        if v.startswith("localhost/"):
            v = v[len("localhost") :]
    if _WIN_URI_PATH_RE.match(v):
        v = v[1:]
    return v


def decode_stdin(data: bytes) -> dict:
    """Bytes from the agent -> JSON object; PayloadError for empty, non-JSON or non-object input."""
    if not data or not data.strip():
        raise PayloadError("empty stdin (expected the agent's hook JSON)")
    try:
        text = utf8(data)
    except UnicodeDecodeError:
        # Windows PowerShell 5.1 may re-encode piped text in the ANSI code page or UTF-16.
        try:
            text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode("mbcs")
        except (UnicodeDecodeError, LookupError):
            raise PayloadError("stdin is not UTF-8 text") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PayloadError(f"stdin is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise PayloadError("stdin JSON is nested too deeply") from None
    if not isinstance(obj, dict):
        raise PayloadError(f"stdin JSON is a {type(obj).__name__}, expected an object")
    return obj


def parse_event(obj: dict, agent: str, event: str) -> HookEvent:
    """Read the fields we use from an agent's hook JSON; unknown fields are ignored."""
    if agent == "cursor":
        conv = _clean_id(obj.get("conversation_id")) or _clean_id(obj.get("session_id"))
    else:
        conv = _clean_id(obj.get("session_id")) or _clean_id(obj.get("conversation_id"))
    roots: dict[str, None] = {}  # an ordered set: de-duplication stays linear
    wr = obj.get("workspace_roots")
    if isinstance(wr, str):
        wr = [wr]
    if isinstance(wr, list):
        for r in wr[:MAX_ROOTS]:
            n = normalize_root(r)
            if n:
                roots[n] = None
    cwd = normalize_root(obj.get("cwd"))
    if cwd:
        roots[cwd] = None
    source = _clean_str(obj.get("source"))
    bg = obj.get("is_background_agent")
    return HookEvent(
        agent=agent,
        event=event,
        conversation_id=conv,
        transcript_path=_clean_str(obj.get("transcript_path")),
        roots=tuple(roots),
        source=source.lower() if source else None,
        background=bg is True or (isinstance(bg, str) and bg.lower() == "true"),
        extra={k: obj[k] for k in ("composer_mode", "hook_event_name", "reason", "prompt") if k in obj},
    )


# -- answers --------------------------------------------------------------------------------------


def session_start_answer(agent: str, context: str, session_id: str) -> dict:
    if agent == "cursor":
        return {"additional_context": context, "env": {"AGENTMEM_SESSION_ID": session_id}}
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}}


def prompt_answer(context: str) -> dict:
    """``UserPromptSubmit`` (Claude Code, Codex): the text is added to the model's context."""
    if not context:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}}


def failure_answer(agent: str, event: str, problem: str) -> dict:
    """The answer when a hook failed: no Session ID, but one line the user (Claude Code / Codex
    ``systemMessage``) or the agent (``additional_context``) can act on, instead of a silent ``{}``.
    End-of-session hooks stay ``{}``: nobody reads their answer."""
    if event != "session-start":
        return {}
    line = " ".join(f"Agent Memory (agentmem) is not working in this chat: {problem}".split())
    if len(line) > 400:
        line = line[:397] + "..."
    if agent == "cursor":
        return {"additional_context": line}
    return {"systemMessage": line, "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": line}}


def render_answer(answer: dict) -> str:
    return json.dumps(answer, ensure_ascii=True) + "\n"


def start_context(session_id: str, vault_root: str, *, resumed: bool = False, command: str | None = None) -> str:
    """What the agent reads at the start of the chat: its ID first, then where to go from here.
    ``command``: agentmem as the chat's shell must type it (the installed executable's absolute
    path, quoted: ``command.chat_command``), since a venv install is not on the chat's PATH."""
    if command is None:
        from agentmem_vault.command import chat_command

        command = chat_command()
    am = command
    lines = [
        f"Your Memory Session ID is: {session_id}",
        (
            "(This chat was already registered; it keeps the same Memory Session ID.)"
            if resumed
            else "This chat is registered on the Agent Memory board as an idle placeholder."
        ),
        f"Vault: {vault_root}",
        f"Use the agentmem command for Agent Memory ({am}); never edit memory/index.md by hand:",
        f'- 狀態更新 / update memory session -> {am} update {session_id} --topic "..." --summary "..." --snapshot -',
        f"- 接續 memory / continue memory <SOURCE-ID> -> {am} continue <SOURCE-ID> --session {session_id}",
        f"- 解除引用 memory -> {am} release <SOURCE-ID> --session {session_id}",
        f"- 整理 memory -> {am} organize;  封存 memory session <ID> -> {am} archive <ID>",
        f'- Any trigger phrase: {am} say "<phrase>" [IDs]. Lost this ID? {am} whoami --conversation <chat id>',
    ]
    return "\n".join(lines)
