"""``agentmem hook <name>``: the agents' lifecycle hooks (Cursor, Claude Code, Codex CLI).

Hooks:
  cursor-session-start | claude-session-start | codex-session-start
      Register the chat as an ``idle`` row (docs/board.md "Defaults"), record the
      conversation ID <-> Session ID pair, and answer in the agent's format with
      ``Your Memory Session ID is: <id>`` — only after the row verified. A chat that is already
      registered (Claude Code ``resume``/``compact``, or any repeat of a known conversation ID
      whose row still exists) gets its existing Session ID back and no new row.
  cursor-session-end | cursor-stop | claude-session-end | claude-stop | codex-stop
      Queue the transcript for long-term extraction (``extract-queue.jsonl``, docs/daemon.md)
      and answer ``{}``.
  claude-user-prompt | codex-user-prompt
      ``UserPromptSubmit``: add the memories relevant to the prompt that the chat has not been
      given yet (``recall/prompt.py``), or answer ``{}``.

Options (before or after the hook name): ``--vault PATH``, ``--agent NAME``.

Never break the chat: every failure (empty or invalid stdin, no vault, lock timeout, read-only
vault, a damaged table, anything unexpected) exits 0 with no Session ID and leaves one line in
``memory/.agentmem/hooks.log`` (or ``<user cache dir>/hooks.log`` when there is no vault). A
session-start answer then carries that line for the user (``payloads.failure_answer``); the others
answer ``{}``.

Fast: this runs on every new chat; ``entry.py`` dispatches here before click is imported, and
what this path may import is docs/performance.md's "Imports" list.

Vault for a hook: ``--vault`` > ``AGENTMEM_VAULT`` > user config ``vault:`` > walking up from each
of the payload's ``workspace_roots`` / ``cwd`` > ``CURSOR_PROJECT_DIR`` / ``CLAUDE_PROJECT_DIR`` >
the process's current folder.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from agentmem_vault.hooks.payloads import (
    HOOKS,
    HookEvent,
    PayloadError,
    decode_stdin,
    failure_answer,
    parse_event,
    prompt_answer,
    render_answer,
    session_start_answer,
    start_context,
)

USAGE = (
    "usage: agentmem hook {" + "|".join(HOOKS) + "} [--vault PATH] [--agent NAME]\n"
    "Reads the agent's hook JSON on stdin and prints the agent's hook answer (JSON) on stdout.\n"
)

STDIN_TIMEOUT = 3.0  # seconds; some agents never close stdin
# A hook payload is a few kilobytes (50,000 workspace roots are 2 MB); more is not a payload
# (/dev/zero, `yes`) and is refused before it is parsed (docs/reliability.md, "Limits").
MAX_PAYLOAD_BYTES = 8_000_000
LOG_MAX_BYTES = 1_000_000
DEFAULT_AGENT_NAMES = {"claude": "claude-main-agent", "codex": "codex-main-agent"}


class HookArgs:
    __slots__ = ("name", "vault", "agent")

    def __init__(self, name: str | None, vault: str | None, agent: str | None):
        self.name, self.vault, self.agent = name, vault, agent


def parse_args(args: list[str]) -> HookArgs:
    """``[--vault V] [--agent A] hook NAME [--vault V] [--agent A]`` (global options allowed first)."""
    opts: dict[str, str | None] = {"--vault": None, "--agent": None}
    name, seen_hook, rest = None, False, iter(args)
    for a in rest:
        key, eq, value = a.partition("=")
        if key in opts:  # "--vault V" or "--vault=V"; a last "--vault" with no value is ignored
            opts[key] = value if eq else next(rest, opts[key])
        elif a == "hook" and not seen_hook:
            seen_hook = True
        elif not a.startswith("-") and name is None and seen_hook:
            name = a
    return HookArgs(name, opts["--vault"], opts["--agent"])


# -- stdin ----------------------------------------------------------------------------------------


def _complete_json(buf: bytes) -> bool:
    """True once ``buf`` holds one whole JSON object (the agent may never close stdin)."""
    if not buf.rstrip().endswith(b"}"):
        return False
    import json

    from agentmem_vault.fastimport import utf8

    try:
        json.loads(utf8(buf))
        return True
    except (ValueError, UnicodeDecodeError):
        return False


def read_stdin(timeout: float = STDIN_TIMEOUT) -> bytes:
    """All of stdin, but never wait longer than ``timeout``: an agent that keeps the pipe open
    must not hang the chat. Stops early once a complete JSON object has arrived."""
    stream = sys.stdin
    if stream is None:
        return b""
    try:
        if stream.isatty():
            return b""
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return b""
    deadline = time.monotonic() + timeout
    if sys.platform == "win32":  # select() does not work on Windows pipes: read in a thread
        import threading

        got: list[bytes] = []
        finished = threading.Event()

        def _reader() -> None:
            try:
                while True:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    got.append(chunk)
                    if sum(map(len, got)) > MAX_PAYLOAD_BYTES or _complete_json(b"".join(got)):
                        break  # a whole object (or too much): do not wait for EOF
            except Exception:  # noqa: BLE001 - a reader thread must not raise
                pass
            finally:
                finished.set()

        threading.Thread(target=_reader, daemon=True).start()
        finished.wait(timeout)
        return _bounded(b"".join(list(got)))
    chunks: list[bytes] = []
    # What the agent has written already, without waiting: usually the whole payload (the agent
    # writes it as it starts us), and then select is not even imported (docs/performance.md).
    try:
        os.set_blocking(fd, False)
        try:
            # At most 1 MB here, where no deadline is checked: a stdin that is always ready and
            # never ends (/dev/zero, an endless writer) goes on in the loop below, against the timeout.
            while len(chunks) < 16:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return b"".join(chunks)  # end of input
                chunks.append(chunk)
        except BlockingIOError:
            pass  # nothing more for now
        finally:
            os.set_blocking(fd, True)
    except OSError:
        pass  # not a descriptor that can be made non-blocking: wait below
    if chunks and _complete_json(b"".join(chunks)):
        return b"".join(chunks)  # a whole object: do not wait for EOF (Claude Code may keep stdin open)
    import select

    total = sum(map(len, chunks))
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            ready, _, _ = select.select([fd], [], [], remaining)
        except (OSError, ValueError):
            break
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_PAYLOAD_BYTES:
            break
        if chunk.rstrip()[-1:] in (b"}", b""):  # only then can the object be complete
            buf = b"".join(chunks)
            if _complete_json(buf):
                return buf  # a whole object: do not wait for EOF (Claude Code may keep stdin open)
    return _bounded(b"".join(chunks))


def _bounded(data: bytes) -> bytes:
    if len(data) > MAX_PAYLOAD_BYTES:
        raise PayloadError(
            f"stdin is over {MAX_PAYLOAD_BYTES:,} bytes; a hook payload is a few kilobytes (not read further)"
        )
    return data


def _stdin_timeout() -> float:
    try:
        return float(os.environ.get("AGENTMEM_HOOK_STDIN_TIMEOUT") or STDIN_TIMEOUT)
    except ValueError:
        return STDIN_TIMEOUT


# -- logging --------------------------------------------------------------------------------------


def _log_paths(vault_root: Path | None) -> list[Path]:
    from agentmem_vault.vault import user_cache_dir

    paths = []
    if vault_root is not None:
        paths.append(vault_root / "memory" / ".agentmem" / "hooks.log")
    paths.append(user_cache_dir() / "hooks.log")
    return paths


def log_line(vault_root: Path | None, hook: str, status: str, message: str) -> Path | None:
    """One line per failure; falls back to the user cache dir when the vault is not writable."""
    from agentmem_vault.ops.conversations import stamp
    from agentmem_vault.fs import append_line, ensure_writable

    try:
        ts = stamp()
    except Exception:  # noqa: BLE001 - a bad AGENTMEM_NOW must not stop the log line
        from agentmem_vault.clock import iso_epoch

        ts = iso_epoch(time.time())
    msg = " ".join(str(message).split())
    line = f"{ts} pid={os.getpid()} {hook or '-'} {status}: {msg}\n".encode("utf-8", "replace")
    for path in _log_paths(vault_root):
        try:
            if vault_root is not None and path.is_relative_to(vault_root):
                if not (vault_root / "memory").is_dir():
                    continue  # never create memory/ just to log
                # A read-only memory/ (or .agentmem/) means "do not touch", even for root.
                ensure_writable(vault_root / "memory")
                ensure_writable(path.parent)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                if path.stat().st_size > LOG_MAX_BYTES:
                    os.replace(path, path.with_name(path.name + ".1"))
            except FileNotFoundError:
                pass
            append_line(path, line)
            return path
        except Exception:  # noqa: BLE001 - try the next place
            continue
    return None


# -- vault ----------------------------------------------------------------------------------------


def find_vault(explicit: str | None, roots: tuple[str, ...]):
    """The hook's vault (see the module docstring for the order)."""
    from agentmem_vault.config import resolve_vault, user_config
    from agentmem_vault.errors import VaultNotFound

    if explicit or os.environ.get("AGENTMEM_VAULT") or user_config().get("vault"):
        return resolve_vault(explicit)
    cands: list[str] = list(roots)
    for env in ("CURSOR_PROJECT_DIR", "CLAUDE_PROJECT_DIR"):
        v = os.environ.get(env)
        if v and v not in cands:
            cands.append(v)
    for c in cands:
        try:
            p = Path(c).expanduser()
            if not p.is_absolute():
                continue
            return resolve_vault(None, cwd=p)
        except (VaultNotFound, OSError, ValueError):
            continue
    try:
        return resolve_vault(None)
    except VaultNotFound:
        from agentmem_vault.command import chat_command  # light (docs/performance.md)

        where = ", ".join(cands) if cands else "no workspace in the payload"
        am = chat_command()  # the chat's shell may not have agentmem on its PATH (docs/setup.md)
        raise VaultNotFound(
            f"no vault found (searched up from: {where}; and {os.getcwd()}). Fix: run `{am} setup`, "
            f"or reinstall the hook with `{am} --vault PATH install-hook <agent>`"
        ) from None


def agent_name(ev: HookEvent, explicit: str | None, cfg: dict) -> str:
    """``--agent`` > ``AGENTMEM_AGENT`` > config (``background_agent_name`` for Cursor background
    agents; ``claude_agent_name`` / ``codex_agent_name``; ``agent_name``) > built-in default."""
    from agentmem_vault.config import resolve_agent

    if explicit or os.environ.get("AGENTMEM_AGENT"):
        return resolve_agent(explicit, cfg)
    if ev.agent == "cursor":
        if ev.background and cfg.get("background_agent_name"):
            return resolve_agent(str(cfg["background_agent_name"]), cfg)
        return resolve_agent(None, cfg)
    name = cfg.get(f"{ev.agent}_agent_name") or DEFAULT_AGENT_NAMES[ev.agent]
    return resolve_agent(str(name), cfg)


# -- the hooks ------------------------------------------------------------------------------------


def _lock_timeout(cfg: dict) -> float:
    try:
        t = min(float(cfg.get("hook_lock_timeout", 5.0)), float(cfg.get("lock_timeout", 10.0)))
    except (TypeError, ValueError):
        t = 5.0
    return max(0.0, t)


def _recall_context(
    vault,
    cfg: dict,
    ev: HookEvent,
    session_id: str,
    doc: object = None,
    project: str = "",
    project_names: tuple[str, ...] = (),
) -> str:
    """Long-term rules and recent active sessions for a new chat (the recall module), recorded in
    the injection audit; best effort: an ImportError or any other failure just leaves the context
    without it."""
    if cfg.get("hook_recall") is False:
        return ""
    try:
        from agentmem_vault.recall import session_start_context

        given: list = []
        # Scoped to the chat's project (docs/projects.md): another project's rules never show here.
        # ``doc``: an IndexDoc or a summary.BoardState
        budget, exclude = _start_budget(cfg), (session_id,)
        text = session_start_context(
            vault, budget=budget, doc=doc, exclude=exclude, project_names=project_names, given=given
        )  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - recall is optional on this path
        return ""
    text = text.strip() if isinstance(text, str) else ""
    try:
        if text:
            from agentmem_vault.recall.audit import from_given, record

            notes, sessions = from_given(given)
            record(
                vault,
                "session-start",
                session_id=session_id,
                conversation_id=ev.conversation_id,
                agent=ev.agent,
                project=project,
                budget=_start_budget(cfg),
                chars=len(text),
                notes=notes,
                sessions=sessions,
            )
    except Exception:  # noqa: BLE001 - the audit never costs the chat its context
        pass
    return text


def _start_budget(cfg: dict) -> int:
    try:
        return int(cfg.get("hook_recall_budget", 1500))
    except (TypeError, ValueError):
        return 1500


def _export_for_claude(session_id: str) -> None:
    """Claude Code: make ``AGENTMEM_SESSION_ID`` visible to the agent's Bash commands."""
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if not env_file:
        return
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.fs import append_line

    try:  # a FIFO there would hang the chat's start: regular files only
        append_line(Path(env_file), f"export AGENTMEM_SESSION_ID={session_id}\n".encode(), durable=False)
    except AgentmemError:
        pass


def _hook_config(vault, ev: HookEvent) -> dict:
    """The vault's settings; a bad one is logged and the defaults used: a typo in config.yaml
    must not cost every new chat its Session ID."""
    from agentmem_vault.config import DEFAULTS, vault_config
    from agentmem_vault.errors import ConfigError

    try:
        return vault_config(vault)
    except ConfigError as exc:
        log_line(vault.root, f"{ev.agent}-{ev.event}", "config_error", exc.message + " (defaults used)")
        return dict(DEFAULTS)


def run_session_start(ev: HookEvent, args: HookArgs) -> dict:

    vault = find_vault(args.vault, ev.roots)
    cfg = _hook_config(vault, ev)
    from agentmem_vault.ops.projects import aliases_from_config, identify_roots

    agent = agent_name(ev, args.agent, cfg)
    aliases = aliases_from_config(cfg)
    ident = identify_roots(ev.roots, aliases)
    from agentmem_vault.board.register import start_chat

    sid, resumed, board = start_chat(
        vault,
        agent,
        command="hook " + ev.agent + "-session-start",
        conversation_id=ev.conversation_id,
        client=ev.agent,
        source=ev.source,
        timeout=_lock_timeout(cfg),
        project=ident.name,
        workspace=ident.root,
    )
    context = start_context(sid, str(vault.root), resumed=resumed)
    names = tuple(aliases.names_for(ident.name)) if ident.name else ()
    extra = _recall_context(vault, cfg, ev, sid, board, ident.name, names)
    if extra:
        context += "\n\n" + extra
    if ev.agent == "claude":
        _export_for_claude(sid)
    return session_start_answer(ev.agent, context, sid)


def run_session_end(ev: HookEvent, args: HookArgs) -> dict:
    from agentmem_vault.ops.conversations import checked_transcript_path, find_pair, queue_transcript

    if not ev.transcript_path:
        raise PayloadError("no transcript_path in the payload; nothing to queue")
    vault = find_vault(args.vault, ev.roots)
    cfg = _hook_config(vault, ev)
    try:  # only the agent's own transcript folders: never ../../etc/shadow or /dev/zero
        path = checked_transcript_path(ev.agent, ev.transcript_path, cfg.get("transcript_dirs"))
    except ValueError as exc:
        raise PayloadError(str(exc)) from None
    pair = find_pair(vault, ev.conversation_id) if ev.conversation_id else None
    queue_transcript(
        vault,
        path,
        agent=ev.agent,
        session_id=pair["session_id"] if pair else None,
        conversation_id=ev.conversation_id,
        timeout=_lock_timeout(cfg),
    )
    return {}


def run_prompt(ev: HookEvent, args: HookArgs) -> dict:
    """``UserPromptSubmit``: the memories relevant to the prompt this chat was not given yet."""
    prompt = ev.extra.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return {}
    vault = find_vault(args.vault, ev.roots)
    cfg = _hook_config(vault, ev)
    if cfg.get("hook_prompt_recall") is False:
        return {}
    from agentmem_vault.ops.conversations import find_pair
    from agentmem_vault.ops.projects import aliases_from_config, identify_roots
    from agentmem_vault.recall.prompt import PROMPT_BUDGET, prompt_recall

    aliases = aliases_from_config(cfg)
    ident = identify_roots(ev.roots, aliases)
    pair = find_pair(vault, ev.conversation_id) if ev.conversation_id else None
    try:
        budget = int(cfg.get("hook_prompt_budget", PROMPT_BUDGET))
    except (TypeError, ValueError):
        budget = PROMPT_BUDGET
    text = prompt_recall(
        vault,
        prompt,
        session_id=pair["session_id"] if pair else None,
        conversation_id=ev.conversation_id,
        agent=ev.agent,
        project=ident.name,
        project_names=tuple(aliases.names_for(ident.name)) if ident.name else (),
        budget=budget,
    )
    return prompt_answer(text)


def _vault_root_for_log(args: HookArgs, ev: HookEvent | None) -> Path | None:
    try:
        return find_vault(args.vault, ev.roots if ev else ()).root
    except Exception:  # noqa: BLE001
        return None


def main(argv: list[str]) -> int:
    """Entry from ``entry.py``. Always returns 0 and always prints one JSON object."""
    args = parse_args(argv)
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    answer: dict = {}
    ev: HookEvent | None = None
    try:
        if args.name not in HOOKS:
            sys.stderr.write(USAGE)
            raise PayloadError(f"unknown hook {args.name!r}; expected one of: {', '.join(HOOKS)}")
        agent, event = HOOKS[args.name]
        ev = parse_event(decode_stdin(read_stdin(_stdin_timeout())), agent, event)
        run = {"session-start": run_session_start, "prompt": run_prompt}.get(event, run_session_end)
        answer = run(ev, args)
    except BaseException as exc:  # noqa: BLE001 - never break the chat, not even on Ctrl-C
        answer = {}
        code = getattr(exc, "code", None) if not isinstance(exc, SystemExit) else "exit"
        status = code if isinstance(code, str) else type(exc).__name__
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        logged = log_line(_vault_root_for_log(args, ev), args.name or "-", status, message)
        if args.name in HOOKS:
            answer = failure_answer(*HOOKS[args.name], f"{message} (log: {logged})" if logged else message)
    try:
        sys.stdout.write(render_answer(answer))
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed stdout is the agent's business
        pass
    return 0
