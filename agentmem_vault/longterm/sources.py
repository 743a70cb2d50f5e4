"""Read a source (session snapshot, Cursor / Claude Code transcript, plain text) into turns.

Readers never raise on content: unknown or broken lines are skipped and counted in
``ReadResult.skipped``. Only a missing/unreadable file is an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, SessionNotFound, SnapshotFormatError, UsageError
from agentmem_vault.fs import read_bytes, read_head
from agentmem_vault.model.ids import validate_session_id
from agentmem_vault.ops import projects

KINDS = ("session", "cursor", "cursor-txt", "claude", "text")


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    text: str
    # when the turn was said (YYYY-MM-DDTHH:MM[:SS]), where the format records it; "" otherwise
    at: str = ""
    # a snapshot's ``## Decisions`` item ("decision", or "superseded" when marked so); "" otherwise
    section: str = ""


@dataclass(frozen=True)
class Source:
    kind: str  # one of KINDS
    path: Path
    ref: str  # what a note lists under ``sources``: "[[session-id]]" or "cursor:<id>" etc.
    project: str = ""
    workspace: str = ""  # the folder the chat ran in, when known (the project is derived from it)
    project_note: str = ""  # why the project is unknown (reported by extract --json)


@dataclass
class ReadResult:
    turns: list[Turn] = field(default_factory=list)
    skipped: int = 0  # lines/blocks that could not be read
    cut: int = 0  # turns longer than MAX_TURN_CHARS, kept up to that length
    title: str = ""
    sha: str = ""  # of the bytes these turns were read from (a transcript may grow meanwhile)


# -- locating sources ------------------------------------------------------------------------------


def source_for_session(vault: Vault, session_id: str) -> Source:
    """The snapshot of a session (``sessions/<id>.md``, or ``archive/<id>/session.md``)."""
    sid = validate_session_id(session_id)
    for p in (vault.session_path(sid), vault.archive_path(sid) / "session.md"):
        if p.is_file():
            return Source("session", p, f"[[{sid}]]")
    raise SessionNotFound(f"no snapshot for session {sid} in {vault.sessions_dir} or the archive")


SNIFF_BYTES = 1 << 18  # the first lines of a transcript say its kind


def _sniff_jsonl(path: Path) -> str:
    try:
        head = (read_head(path, SNIFF_BYTES) or b"").decode("utf-8", "replace").lstrip("\ufeff")
    except AgentmemError:
        head = ""  # unreadable here: read_source says why
    for line in head.splitlines()[:50]:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            if obj.get("type") in ("user", "assistant", "summary", "system") and "role" not in obj:
                return "claude"
            if "role" in obj:
                return "cursor"
    return "cursor" if "agent-transcripts" in path.parts else "claude"


def source_for_transcript(path: str | os.PathLike, *, kind: str | None = None) -> Source:
    """A transcript file; the kind is guessed from the location and the first lines."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UsageError(f"transcript not found: {p}")
    if kind is None:
        if p.suffix.lower() == ".jsonl":
            kind = _sniff_jsonl(p)
        elif p.suffix.lower() == ".txt" and "agent-transcripts" in p.parts:
            kind = "cursor-txt"
        else:
            kind = "text"
    if kind not in KINDS:
        raise UsageError(f"unknown source kind {kind!r}")
    if "agent-transcripts" in p.parts:  # ~/.cursor/projects/<slug>/agent-transcripts/...
        ref = f"cursor:{p.stem}"
    elif kind == "claude":
        ref = f"claude:{p.stem}"
    else:
        ref = f"file:{p.name}"
    ident = projects.for_transcript(p)  # the recorded cwd, else the decoded slug; never a cut slug
    if ident.name:
        return Source(kind, p.absolute(), ref, ident.name, ident.root)
    note = ident.note if kind != "text" else ""
    return Source(kind, p.absolute(), ref, "", "", note)


def project_of_folder(folder: str | os.PathLike) -> str:
    """The project name of a workspace folder (ops/projects.py), so that a front end that knows
    the caller's folder (MCP server, installer) scopes recall the same way as extraction."""
    return projects.identify(Path(folder).expanduser()).name


def discover_cursor(home: Path | None = None) -> list[Source]:
    base = (home or Path.home()) / ".cursor" / "projects"
    found: list[Path] = []
    if base.is_dir():
        found += base.glob("*/agent-transcripts/*/*.jsonl")
        found += base.glob("*/agent-transcripts/*.jsonl")
        found += base.glob("*/agent-transcripts/*.txt")
    return [source_for_transcript(p) for p in sorted(set(found))]


def discover_claude(home: Path | None = None) -> list[Source]:
    base = (home or Path.home()) / ".claude" / "projects"
    found = sorted(base.glob("*/*.jsonl")) if base.is_dir() else []
    return [source_for_transcript(p, kind="claude") for p in found]


def discover_sessions(vault: Vault) -> list[Source]:
    out = []
    if vault.sessions_dir.is_dir():
        for p in sorted(vault.sessions_dir.glob("*.md")):
            try:
                out.append(source_for_session(vault, p.stem))
            except Exception:  # a stray file with a non-ID name is not a session
                continue
    return out


def select_sources(
    vault: Vault,
    *,
    sessions: Iterable[str] = (),
    files: Iterable[str | os.PathLike] = (),
    cursor: bool = False,
    claude: bool = False,
) -> list[Source]:
    """What ``extract`` reads: the named sessions and files, all Cursor / Claude Code transcripts
    when asked; every session snapshot of the vault when nothing is named."""
    sessions, files = list(sessions), list(files)
    out = [source_for_session(vault, sid) for sid in sessions]
    out += [source_for_transcript(f) for f in files]
    if cursor:
        out += discover_cursor()
    if claude:
        out += discover_claude()
    if not (sessions or files or cursor or claude):
        out = discover_sessions(vault)
    return out


# -- reading ---------------------------------------------------------------------------------------


def read_source(source: Source, known_sha: str | None = None, redact: Callable[[str], str] | None = None) -> ReadResult:
    """The source's turns, redacted (docs/redaction.md) by ``redact`` (a run's ``text_redactor()``). When what
    was read has ``known_sha`` (the sha of a source already extracted), nothing will be derived from it: it is
    neither parsed nor redacted (no turns; the caller knows how many it had)."""
    try:  # regular files only: /dev/zero or a FIFO would never end (docs/reliability.md)
        size = os.stat(source.path).st_size
    except OSError:
        size = 0  # read_bytes says what is wrong with it
    if size > MAX_SOURCE_BYTES:
        raise UsageError(
            f"{source.path} is {size:,} bytes, over the {MAX_SOURCE_BYTES:,}-byte limit of a source; "
            "nothing was extracted from it (split it, or extract the sessions it came from)"
        )
    try:
        raw = read_bytes(source.path)
    except (OSError, AgentmemError) as exc:
        raise UsageError(f"cannot read {source.path}: {getattr(exc, 'message', None) or exc}") from exc
    if raw is None:
        raise UsageError(f"cannot read {source.path}: No such file or directory")
    sha = hashlib.sha256(raw).hexdigest()[:24]
    if known_sha is not None and sha == known_sha:
        return ReadResult(sha=sha)
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    reader = {
        "session": snapshot_turns,
        "cursor": parse_cursor_jsonl,
        "cursor-txt": parse_role_blocks,
        "claude": parse_claude_jsonl,
        "text": parse_role_blocks,
    }[source.kind]
    res = reader(text)
    res.sha = sha
    res = bound_turns(res)
    # Secrets out before anything is derived from the text (titles, file names, keywords):
    # a derived field can lose the shape that makes a secret recognisable (docs/redaction.md).
    redact = redact or text_redactor()
    res.turns = [t if (r := redact(t.text)) == t.text else replace(t, text=r) for t in res.turns]
    res.title = redact(res.title)
    return res


def text_redactor() -> Callable[[str], str]:
    """``redact_text`` with the user's rules read once, and once per distinct text: transcripts
    repeat their boilerplate turns ("Continue", tool notices). One per run: rules can change."""
    from agentmem_vault.redaction import redactor

    return lru_cache(maxsize=None)(redactor())


# A source larger than this is refused before it is read (docs/reliability.md, "Limits"): the
# longest agent transcripts are tens of megabytes.
MAX_SOURCE_BYTES = 256_000_000

# A turn longer than this is cut to it before extraction (docs/reliability.md, "Limits"): what is
# worth remembering is said in a sentence, not in a pasted 10 MB log, and every later step (noise
# filters, cue matching, keywords) is linear in the text at best.
MAX_TURN_CHARS = 20_000


def bound_turns(res: ReadResult) -> ReadResult:
    for i, t in enumerate(res.turns):
        if len(t.text) > MAX_TURN_CHARS:
            res.turns[i] = replace(t, text=t.text[:MAX_TURN_CHARS])  # its time and section kept
            res.cut += 1
    return res


_WRAPPER_RE = re.compile(r"</?user_query>", re.I)
_QUERY_RE = re.compile(r"<user_query>(.*?)</user_query>", re.S | re.I)
# Context Cursor injects around the real query; it is not something the user said.
_INJECTED_RE = re.compile(
    r"<(user_info|attached_files|system_reminder|system-reminder|additional_data|open_and_recently_viewed_files|"
    r"git_status|rules|project_layout|agent_requestable_workspace_rules)>.*?</\1>",
    re.S | re.I,
)


def _clean_user_text(text: str) -> str:
    text = _INJECTED_RE.sub("", text)
    text = m.group(1) if (m := _QUERY_RE.search(text)) else text
    return _WRAPPER_RE.sub("", text).strip()


def _text_of(content: object) -> tuple[str | None, bool]:
    """Text of a message content (string or blocks); second value: only tool results inside."""
    if isinstance(content, str):
        return content, False
    if not isinstance(content, list):
        return None, False
    parts: list[str] = []
    tool_only = bool(content)
    for block in content:
        if isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
                tool_only = False
            elif block.get("type") not in ("tool_result",):
                tool_only = False
        elif isinstance(block, str):
            parts.append(block)
            tool_only = False
    return "\n".join(parts), tool_only


def _json_objects(text: str, res: ReadResult) -> Iterator[dict]:
    """The JSON object of each non-blank line; anything else is counted in ``res.skipped``."""
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: "[" * 100000 nests too deep
            obj = None
        if isinstance(obj, dict):
            yield obj
        else:
            res.skipped += 1


def parse_cursor_jsonl(text: str) -> ReadResult:
    res = ReadResult()
    for obj in _json_objects(text, res):
        role = obj.get("role")
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else obj.get("content")
        body, _ = _text_of(content)
        if role not in ("user", "assistant") or body is None:
            res.skipped += 1
            continue
        body = _clean_user_text(body) if role == "user" else body.strip()
        if body:
            when = obj.get("timestamp") or obj.get("createdAt") or obj.get("created_at")
            res.turns.append(Turn(role, body, statement_time(when)))
    return res


def parse_claude_jsonl(text: str) -> ReadResult:
    res = ReadResult()
    for obj in _json_objects(text, res):
        typ = obj.get("type")
        if typ == "summary" and isinstance(obj.get("summary"), str):
            res.title = res.title or obj["summary"]
            continue
        if typ not in ("user", "assistant"):
            continue  # system/progress/file-history lines carry no conversation; not an error
        msg = obj.get("message")
        if not isinstance(msg, dict):
            res.skipped += 1
            continue
        role = msg.get("role", typ)
        body, tool_only = _text_of(msg.get("content"))
        if body is None or role not in ("user", "assistant"):
            res.skipped += 1
            continue
        if tool_only or obj.get("isMeta"):
            continue  # tool results and meta lines are not things the user said
        body = body.strip()
        if role == "user" and re.match(r"^<(command-name|local-command-stdout|command-message)>", body):
            continue
        if body:
            res.turns.append(Turn(role, body, statement_time(obj.get("timestamp"))))
    return res


_ROLE_LINE_RE = re.compile(
    r"^\s*(?:\*\*|#{1,4}\s*)?(user|human|me|you|assistant|ai|claude|cursor|agent|用户|用戶|使用者|助手|助理)"
    r"(?:\*\*)?\s*[:：](?:\*\*)?\s?(.*)$",
    re.I,
)
_USER_NAMES = {"user", "human", "me", "用户", "用戶", "使用者"}


def parse_role_blocks(text: str) -> ReadResult:
    """Plain text / Markdown (``User:`` / ``Assistant:``) and Cursor's legacy ``user:`` blocks."""
    res = ReadResult()
    role: str | None = None
    buf: list[str] = []
    preamble = 0

    def flush() -> None:
        if role is not None:
            body = _clean_user_text("\n".join(buf)) if role == "user" else "\n".join(buf).strip()
            if body:
                res.turns.append(Turn(role, body))

    for line in text.split("\n"):
        m = _ROLE_LINE_RE.match(line)
        if m:
            flush()
            role = "user" if m.group(1).lower() in _USER_NAMES else "assistant"
            buf = [m.group(2)]
        elif role is None:
            if line.strip().startswith("# ") and not res.title:
                res.title = line.strip()[2:].strip()
            elif line.strip():
                preamble += 1
        else:
            buf.append(line)
    flush()
    res.skipped = preamble if res.turns else 0
    return res


def snapshot_turns(text: str) -> ReadResult:
    """A session snapshot: its Current Context paragraphs and Decisions items, each as a turn.

    Read with the snapshot model (``agentmem_vault.model.snapshot``) so extraction sees exactly what
    update/merge wrote. Transient sections (Next Actions, Open Questions, Files) are not durable
    knowledge and are left out; a superseded decision is no longer true.
    """
    from agentmem_vault.model.snapshot import parse_snapshot as parse_session_snapshot

    res = ReadResult()
    try:
        snap = parse_session_snapshot(text)
    except SnapshotFormatError:
        res.skipped = 1
        return res
    res.title = snap.topic or snap.session_id
    at = statement_time(snap.metadata.get("Updated At", ""))
    for section in ("Current Context", "Decisions"):
        for item in snap.items(section):
            # Current Context is paragraphs, and agents often write them as bullet lines.
            text = "\n".join(re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", ln) for ln in item.strip().splitlines()).strip()
            if not text:
                continue
            # every Decisions item is a decision; a superseded one retires the note it produced
            kind = "superseded" if re.match(r"^\[(superseded|已取代)\]", text, re.I) else "decision"
            kind = kind if section == "Decisions" else ""
            res.turns.append(Turn("user", text, at, kind))
    return res


_TIME = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)")


def statement_time(value: object) -> str:
    """A recorded time (``2026-12-01 10:05``, ISO 8601 with a zone or milliseconds) as local
    ``YYYY-MM-DDTHH:MM[:SS]``, the form of the note's times; "" when it is not one. A time with a
    zone ("…Z", "+08:00") is converted to local time; one without is taken as local."""
    m = _TIME.match(value) if isinstance(value, str) else None
    if m is None:
        return ""
    text = str(value).strip()
    if re.search(r"(?:Z|[+-]\d{2}:?\d{2})$", text):
        from datetime import datetime

        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%dT%H:%M:%S")
        except ValueError:
            pass
    return f"{m.group(1)}T{m.group(2)}"
