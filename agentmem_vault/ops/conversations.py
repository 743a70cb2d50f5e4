"""Conversation ID <-> Session ID pairs (``conversations.jsonl``) and the queue of finished
transcripts (``extract-queue.jsonl``): two append-only JSON Lines files in ``memory/.agentmem/``
whose formats, locks and readers' rules are in docs/daemon.md ("The hooks' state files")."""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from agentmem_vault.board.rules import pair_project, pair_projects
from agentmem_vault.clock import ISO_SECONDS, now_precise
from agentmem_vault.vault import Vault
from agentmem_vault.errors import SessionNotFound, UsageError
from agentmem_vault.fastimport import utf8
from agentmem_vault.fastimport import datetime  # the C type without datetime.py (docs/performance.md)
from agentmem_vault.locking import exclusive_lock
from agentmem_vault.fs import append_line, make_dirs, read_bytes, read_chunks

CONVERSATIONS = "conversations.jsonl"
EXTRACT_QUEUE = "extract-queue.jsonl"


def conversations_path(vault: Vault) -> Path:
    return vault.state_dir / CONVERSATIONS


def extract_queue_path(vault: Vault) -> Path:
    return vault.state_dir / EXTRACT_QUEUE


def stamp(when: datetime | None = None) -> str:
    """Local time with seconds (``clock.py``: ``AGENTMEM_NOW`` if set)."""
    return (when or now_precise()).strftime(ISO_SECONDS)


def _append_line(path: Path, entry: dict, *, durable: bool = True) -> None:
    make_dirs(path.parent)
    append_line(path, (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8"), durable=durable)


def record_pair(
    vault: Vault,
    conversation_id: str,
    session_id: str,
    *,
    agent: str,
    source: str | None = None,
    project: str = "",
    workspace: str = "",
) -> dict:
    """Append one pair. Call it while holding the vault's index lock (``VaultWriter``).
    ``project``/``workspace``: the chat's project and folder (ops/projects.py), when known."""
    entry = {
        "time": stamp(),
        "conversation_id": conversation_id,
        "session_id": session_id,
        "agent": agent,
        "source": source,
    }
    if project:
        entry["project"] = project
    if workspace:
        entry["workspace"] = workspace
    # No fsync: a power cut may lose the newest pair (the chat keeps its ID; a resume then gets
    # a new one), never a row or an ID: those are fsynced (docs/reliability.md).
    _append_line(conversations_path(vault), entry, durable=False)
    return entry


def record_session_project(
    vault: Vault, session_id: str, agent: str, *, project: str = "", workspace: str = "", source: str = "cli"
) -> str:
    """A session registered or updated through the CLI or MCP takes the project of the folder the
    command ran in (the agent runs it in its workspace; docs/projects.md), unless its chat's own
    pair already names one (the hook's). ``project``: given by the caller (an MCP server started
    for a project); else ``workspace`` is identified, never a folder inside the vault. Returns the
    project recorded ("" when none). Call it while holding the vault's index lock."""
    if project_of_session(vault, session_id):
        return ""
    if not project and workspace:
        from agentmem_vault.config import vault_config
        from agentmem_vault.ops.projects import aliases_from_config, identify

        folder = Path(workspace).resolve()
        root = vault.root.resolve()
        if folder == root or root in folder.parents:
            return ""
        project = identify(folder, aliases_from_config(vault_config(vault))).name
    if not project:
        return ""
    record_pair(vault, "", session_id, agent=agent, source=source, project=project, workspace=workspace)
    return project


def _json_lines(data: bytes | None) -> Iterator[dict]:
    """The JSON objects on the lines of ``data``; damaged lines (a torn last line, hand edits) are skipped."""
    for raw in (data or b"").splitlines():
        try:
            obj = json.loads(utf8(raw))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(obj, dict):
            yield obj


def _lines_with(data: bytes, needle: bytes, first: int = 0, end: int = -1) -> Iterator[dict]:
    """The JSON objects on the lines of ``data`` (from byte ``first`` to ``end``, both at a line's
    start) that contain ``needle``, newest first, found with ``bytes.rfind`` so that only those
    lines are ever split out and parsed."""
    end = len(data) if end < 0 else end
    while (pos := data.rfind(needle, first, end)) != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        stop = data.find(b"\n", pos)
        yield from _json_lines(data[start : len(data) if stop == -1 else stop])
        end = start


def _needle(conversation_id: str) -> bytes:
    return json.dumps(conversation_id, ensure_ascii=False)[1:-1].encode("utf-8")


def find_pair(vault: Vault, conversation_id: str) -> dict | None:
    """The latest pair recorded for ``conversation_id``, or None (one ``PairScan``)."""
    return PairScan(vault, conversation_id=conversation_id).read().pair if conversation_id else None


class PairScan:
    """``conversations.jsonl`` read once, in chunks of whole lines and never as one copy (the
    sessionStart hook's path: allocating a copy of a 2 MB file cost more than searching it,
    docs/performance.md): its ``size`` and ``crc`` (zlib's CRC-32), the CRC of its first ``split``
    bytes (``head``; None when it is shorter) and whether they end a line (``whole_lines``), the
    bytes after them (``tail``), the latest pair of ``conversation_id`` (``pair``, as ``find_pair``)
    and the Session IDs recorded that start with ``prefix`` (``ids``; rows may be gone: never reuse
    them). ``data``: the file's bytes, when read already."""

    __slots__ = ("path", "data", "want", "split", "size", "crc", "head", "whole_lines", "tail", "pair", "ids")
    CHUNK = 1 << 16  # bytes per read: small enough to stay in the CPU cache while it is checked and searched

    def __init__(self, vault: Vault, data: bytes | None = None, conversation_id: str | None = None, prefix: str = ""):
        self.path, self.data, self.want = conversations_path(vault), data, (conversation_id, prefix)
        self.split, self.size, self.crc = 0, -1, 0  # size -1: not read yet
        self.head: int | None = None
        self.pair: dict | None = None
        self.whole_lines, self.tail, self.ids = True, b"", set[str]()

    def read(self, split: int = 0, *, tail_only: bool = False) -> PairScan:
        """One pass over the file as it is now (see the class); returns ``self``. ``tail_only``:
        ``ids`` only from the bytes after ``split`` (the caller knows those before it)."""
        if self.data is not None:
            return self._scan(iter([self.data]), split, tail_only)
        if read_chunks(self.path, lambda chunks: self._scan(chunks, split, tail_only), chunk=self.CHUNK) is None:
            self._scan(iter(()), split, tail_only)  # no file: nothing recorded
        return self

    def _scan(self, chunks: Iterator[bytes], split: int, tail_only: bool) -> PairScan:
        needle, prefix = _needle(self.want[0]) if self.want[0] else b"", "" if tail_only else self.want[1]
        at, crc, head, rest, pending = 0, 0, 0 if not split else None, list[bytes](), list[bytes]()
        self.pair, self.ids, self.whole_lines = None, set(), True  # from the start when a read is retried
        for chunk in chunks:
            if head is None and split <= at + len(chunk):  # the chunk that holds the split's last byte
                head = zlib.crc32(memoryview(chunk)[: split - at], crc)
                self.whole_lines = chunk[split - at - 1] == 0x0A
            if at + len(chunk) > split:
                rest.append(chunk[max(0, split - at) :])
            crc, at = zlib.crc32(chunk, crc), at + len(chunk)
            cut = chunk.rfind(b"\n") + 1  # searched a block of whole lines at a time, in place
            if not cut:
                pending.append(chunk)
                continue
            first = 0
            if pending:  # the line begun in the chunks before
                first = chunk.find(b"\n") + 1
                self._search(b"".join([*pending, chunk[:first]]), needle, prefix)
            self._search(chunk, needle, prefix, first, cut)
            pending = [chunk[cut:]]
        self._search(b"".join(pending), needle, prefix)  # a last line without its end
        self.split, self.size, self.crc, self.head, self.tail = split, at, crc, head, b"".join(rest)
        if tail_only and self.want[1]:
            self.ids = _ids_with_prefix(self.tail, self.want[1].encode("utf-8"))
        if not split and self.data is None:
            self.data = self.tail  # all of it: whole() need not read it again
        return self

    def _search(self, block: bytes, needle: bytes, prefix: str, first: int = 0, end: int = -1) -> None:
        # rfind, not find or "in": a needle absent from a block is ruled out 2-4x faster by it
        conversation_id = self.want[0]
        end = len(block) if end < 0 else end
        if conversation_id and block.rfind(needle, first, end) != -1:
            for obj in _lines_with(block, needle, first, end):  # the block's latest pair wins over the earlier
                if obj.get("conversation_id") == conversation_id and isinstance(obj.get("session_id"), str):
                    self.pair = obj
                    break
        if prefix and block.rfind(prefix.encode("utf-8"), first, end) != -1:
            self.ids |= _ids_with_prefix(block, prefix.encode("utf-8"), first, end)

    def whole(self) -> bytes:
        """All of the file (read again unless given): for the rare caller that needs more than the tail."""
        if self.data is None:
            self.data = read_bytes(self.path) or b""
        return self.data


# Environment variables an agent's shell may carry, in order of trust.
SESSION_ENV = "AGENTMEM_SESSION_ID"  # set by our Cursor hook (env) and Claude hook (CLAUDE_ENV_FILE)
CONVERSATION_ENVS = ("AGENTMEM_CONVERSATION_ID", "CLAUDE_CODE_SESSION_ID")


def whoami(vault: Vault, conversation_id: str | None, env: Mapping[str, str] | None = None) -> dict:
    """The Session ID of this chat: from ``conversation_id`` (the recorded pairs), else
    ``AGENTMEM_SESSION_ID``, else a conversation ID the agent put in the environment.

    Returns ``{"session_id", "conversation_id", "source", "on_board"}``; SessionNotFound when the
    conversation has no recorded pair, UsageError when there is nothing to look up."""
    from agentmem_vault.model.ids import is_valid_session_id
    from agentmem_vault.board.table import parse_index
    from agentmem_vault.fs import read_text

    env = os.environ if env is None else env
    sid = None
    source = None
    conv = conversation_id.strip() if conversation_id and conversation_id.strip() else None
    if conv is None and env.get(SESSION_ENV, "").strip():
        cand = env[SESSION_ENV].strip()
        if is_valid_session_id(cand):
            sid, source = cand, SESSION_ENV
    if sid is None:
        if conv is None:
            for name in CONVERSATION_ENVS:
                if env.get(name, "").strip():
                    conv, source = env[name].strip(), name
                    break
        else:
            source = "conversation_id"
        if conv is None:
            raise UsageError(
                "no conversation to look up: pass the agent's conversation ID (--conversation / conversation_id), "
                f"or run inside a chat whose hook set {SESSION_ENV}"
            )
        pair = find_pair(vault, conv)
        if pair is None:
            raise SessionNotFound(
                f"no Memory Session ID recorded for conversation {conv!r}. Register this chat by hand: "
                "agentmem register --manual (trigger phrase: 註冊 memory session)"
            )
        sid = pair["session_id"]
    on_board = parse_index(read_text(vault.index_path) or "").find(sid) is not None
    return {"session_id": sid, "conversation_id": conv, "source": source, "on_board": on_board}


def _ids_with_prefix(data: bytes, needle: bytes, first: int = 0, end: int = -1) -> set[str]:
    # One byte search for the prefix, each hit taken when the field's key comes right before it as
    # json.dumps writes it (with or without the space): a burst of chats in one minute costs no JSON
    # parse per line, and a long file one scan, not one per spelling of the key (the hook's path).
    out: set[str] = set()
    end = len(data) if end < 0 else end
    pos = data.find(needle, first, end)
    while pos != -1:
        close = data.find(b'"', pos, end)
        if close == -1:
            break
        if data.endswith((b'"session_id": "', b'"session_id":"'), first, pos):
            sid = data[pos:close].decode("utf-8", "replace")
            if "\\" not in sid:
                out.add(sid)
        pos = data.find(needle, pos + 1, end)
    return out


def transcript_roots(agent: str, extra: object = None) -> list[Path]:
    """The folders an agent keeps its transcripts in (docs/reliability.md): Cursor
    ``~/.cursor/projects``, Claude Code ``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` ``/projects``,
    Codex ``$CODEX_HOME`` or ``~/.codex`` ``/sessions``; plus ``transcript_dirs`` from the config."""
    home = Path.home()
    roots = {
        "cursor": [home / ".cursor" / "projects"],
        "claude": [Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects"],
        "codex": [Path(os.environ.get("CODEX_HOME") or home / ".codex") / "sessions"],
    }.get(agent, [])
    if isinstance(extra, str):
        extra = [extra]
    if isinstance(extra, list):
        roots += [Path(str(x)).expanduser() for x in extra if str(x).strip()]
    return roots


def checked_transcript_path(agent: str, raw: str, extra: object = None) -> str:
    """The absolute transcript path a session-end hook may queue, or ValueError saying why not:
    it must be absolute (``~`` expanded), resolve inside one of the agent's transcript folders
    (no ``..`` escapes, no link out) and, when it exists, be a regular file (not ``/dev/zero``)."""
    p = Path(os.path.expanduser(raw))
    if not p.is_absolute():
        raise ValueError(f"transcript_path {raw!r} is not an absolute path; not queued")
    real = os.path.realpath(p)
    roots = transcript_roots(agent, extra)
    if not any(real.startswith(os.path.realpath(r).rstrip(os.sep) + os.sep) for r in roots):
        where = ", ".join(str(r) for r in roots) or "none known"
        raise ValueError(
            f"transcript_path {raw!r} is not inside {agent}'s transcript folders ({where}); not queued "
            "(add its folder to transcript_dirs in memory/.agentmem/config.yaml if it is one)"
        )
    try:
        st = os.stat(real)
    except OSError:
        return os.path.abspath(p)  # not written yet: the extractor checks it again when it reads it
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"transcript_path {raw!r} is not a regular file; not queued")
    return os.path.abspath(p)


def queue_lock(vault: Vault, timeout: float = 5.0) -> exclusive_lock:
    """``with queue_lock(vault):`` the extraction queue's own lock (not the board's)."""
    return exclusive_lock(vault.lock_path("extract-queue"), timeout, what="the extraction queue")


def queue_transcript(
    vault: Vault,
    path: str,
    *,
    agent: str,
    session_id: str | None,
    conversation_id: str | None,
    timeout: float = 5.0,
) -> dict:
    """Append one transcript to ``extract-queue.jsonl`` (format in the module docstring)."""
    entry = {
        "kind": "transcript",
        "path": path,
        "session_id": session_id,
        "conversation_id": conversation_id,
        "agent": agent,
        "time": stamp(),
    }
    with queue_lock(vault, timeout):
        _append_line(extract_queue_path(vault), entry)
    return entry


def projects_of_sessions(vault: Vault, data: bytes | None = None) -> dict[str, str]:
    """Session ID -> the project its chat was registered in (the last pair that names one): the
    one rule of the sessionStart hook, ``context`` and doctor (docs/projects.md). Every session is
    looked up exactly (never "unknown" because its pair is old: that would offer it to another
    project's chats). ``data``: the file's bytes when the caller has read them already."""
    return pair_projects(PairScan(vault, data).whole())


def project_of_session(vault: Vault, session_id: str) -> str:
    """The project a session's chat was registered in ("" when not recorded)."""
    return pair_project(PairScan(vault).whole(), session_id)
