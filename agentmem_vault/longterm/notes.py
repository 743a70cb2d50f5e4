"""Long-term memory notes: ``memory/long-term/<safe title>.md`` with YAML frontmatter.

This is the format contract that recall/search builds on. Frontmatter keys, in this order::

    id, title, category, keywords, usage_scenario, project, module, importance, score, status,
    created, updated, sources, tags[, deprecated_reason]

followed by keys this program does not know (kept as they were). The body is the content, then an
optional ``## History`` section holding dated previous versions (``### YYYY-MM-DDTHH:MM``).

Public API: ``Note``, ``parse_note(text)``, ``render_note(note)``, ``load_notes(vault, broken=None)``
(skips unreadable notes and appends their paths to ``broken``), ``safe_filename``, ``note_id``,
``find_note``, ``write_note``. Everything here is pure except ``load_notes`` and ``write_note``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from agentmem_vault.config import Vault
from agentmem_vault.errors import AgentmemError, NoteFormatError  # noqa: F401 - NoteFormatError re-exported
from agentmem_vault.model.textnorm import fold

TAG = "agent-memory/long-term"
NOTE_TS = "%Y-%m-%dT%H:%M"
KEY_ORDER = (
    "id", "title", "category", "keywords", "usage_scenario", "project", "module", "importance",
    "score", "status", "created", "updated", "sources", "tags",
)
HISTORY_HEADING = "## History"
MAX_NAME_CHARS = 80
MAX_NAME_BYTES = 180  # many file systems cap a name at 255 bytes; CJK is 3 bytes a character


@dataclass
class HistoryEntry:
    when: str  # YYYY-MM-DDTHH:MM
    text: str


@dataclass
class Note:
    id: str
    title: str
    category: str = "user_behavior"
    keywords: list[str] = field(default_factory=list)
    usage_scenario: list[str] = field(default_factory=list)
    project: str = ""
    module: str = ""
    importance: float = 0.5
    score: int = 3
    status: str = "active"
    created: str = ""
    updated: str = ""
    sources: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=lambda: [TAG])
    deprecated_reason: str = ""
    content: str = ""
    history: list[HistoryEntry] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # unknown frontmatter keys, kept
    path: Path | None = field(default=None, compare=False)

    @property
    def active(self) -> bool:
        return self.status != "deprecated"


def format_note_ts(dt: datetime) -> str:
    return dt.strftime(NOTE_TS)


def _ts(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime(NOTE_TS)
    if isinstance(value, date):
        return value.strftime("%Y-%m-%dT00:00")
    return "" if value is None else str(value).strip()


def _str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v).strip()]
    if isinstance(value, str):
        # a hand-edited "a, b" is read as a list
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(value)]


def _split_frontmatter(text: str) -> tuple[str, str]:
    t = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not t.startswith("---\n"):
        raise NoteFormatError("no YAML frontmatter (the note must start with '---')")
    end = t.find("\n---", 3)
    while end != -1 and t[end + 4 : end + 5] not in ("\n", ""):
        end = t.find("\n---", end + 4)
    if end == -1:
        raise NoteFormatError("the frontmatter is not closed by '---'")
    return t[4 : end + 1], t[end + 5 :] if t[end + 4 : end + 5] == "\n" else ""


def parse_note(text: str) -> Note:
    """Parse a note; raises NoteFormatError for missing/broken frontmatter."""
    fm_text, body = _split_frontmatter(text)
    try:
        data = yaml.safe_load(fm_text) if fm_text.strip() else {}
    except yaml.YAMLError as exc:
        raise NoteFormatError(f"frontmatter is not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise NoteFormatError("frontmatter is not a mapping of properties")
    data = {str(k): v for k, v in data.items()}
    try:
        importance = float(data.get("importance", 0.5))
    except (TypeError, ValueError):
        importance = 0.5
    try:
        score = int(data.get("score", 3))
    except (TypeError, ValueError):
        score = 3
    content, history = _split_body(body)
    known = set(KEY_ORDER) | {"deprecated_reason"}
    return Note(
        id=str(data.get("id") or ""),
        title=str(data.get("title") or ""),
        category=str(data.get("category") or "user_behavior"),
        keywords=_str_list(data.get("keywords")),
        usage_scenario=_str_list(data.get("usage_scenario")),
        project=str(data.get("project") or ""),
        module=str(data.get("module") or ""),
        importance=importance,
        score=score,
        status=str(data.get("status") or "active"),
        created=_ts(data.get("created")),
        updated=_ts(data.get("updated")),
        sources=_str_list(data.get("sources")),
        tags=_str_list(data.get("tags")) if "tags" in data else [TAG],
        deprecated_reason=str(data.get("deprecated_reason") or ""),
        content=content,
        history=history,
        extra={k: v for k, v in data.items() if k not in known},
    )


def _split_body(body: str) -> tuple[str, list[HistoryEntry]]:
    lines = body.split("\n")
    try:
        at = next(i for i, line in enumerate(lines) if line.strip() == HISTORY_HEADING)
    except StopIteration:
        return body.strip("\n"), []
    content = "\n".join(lines[:at]).strip("\n")
    history: list[HistoryEntry] = []
    cur: HistoryEntry | None = None
    buf: list[str] = []
    for line in lines[at + 1 :]:
        if line.startswith("### "):
            if cur is not None:
                cur.text = "\n".join(buf).strip("\n")
                history.append(cur)
            cur, buf = HistoryEntry(line[4:].strip(), ""), []
        elif cur is not None:
            buf.append(line)
    if cur is not None:
        cur.text = "\n".join(buf).strip("\n")
        history.append(cur)
    return content, history


def frontmatter_dict(note: Note) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": note.id,
        "title": note.title,
        "category": note.category,
        "keywords": list(note.keywords),
        "usage_scenario": list(note.usage_scenario),
        "project": note.project,
        "module": note.module,
        "importance": round(float(note.importance), 2),
        "score": int(note.score),
        "status": note.status,
        "created": note.created,
        "updated": note.updated,
        "sources": list(note.sources),
        "tags": list(note.tags),
    }
    if note.status == "deprecated" or note.deprecated_reason:
        d["deprecated_reason"] = note.deprecated_reason
    for k, v in note.extra.items():
        d.setdefault(k, v)
    return d


def render_note(note: Note) -> str:
    fm = yaml.safe_dump(
        frontmatter_dict(note), sort_keys=False, allow_unicode=True, default_flow_style=None, width=10**6
    )
    out = f"---\n{fm}---\n{note.content.strip(chr(10))}\n"
    if note.history:
        out += f"\n{HISTORY_HEADING}\n"
        for h in note.history:
            out += f"\n### {h.when}\n{h.text.strip(chr(10))}\n"
    return out


# -- names and ids ----------------------------------------------------------------------------------

_BAD_NAME_CHARS = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]')
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def safe_filename(title: str, taken: set[str] | None = None) -> str:
    """A file name (``<name>.md``) safe on Windows and in Obsidian links, unique against ``taken``
    (compared case-insensitively). The model's title is only ever a *source* for this name."""
    name = unicodedata.normalize("NFC", title)
    name = _BAD_NAME_CHARS.sub(" ", name)
    name = re.sub(r"\.{2,}", ".", name)
    name = " ".join(name.split()).strip(" .")
    if not name:
        name = "memory"
    # Windows reads the part before the first dot as the device name, ignoring trailing spaces and
    # folding superscript digits: "con.txt", "CON .x" and "LPT¹" are all devices.
    head, dot, rest = name.partition(".")
    if unicodedata.normalize("NFKC", head.rstrip(" ")).lower() in _RESERVED:
        name = f"{head.rstrip(' ')} note{dot}{rest}"
    name = name[:MAX_NAME_CHARS]
    while len(name.encode("utf-8")) > MAX_NAME_BYTES:
        name = name[:-1]
    name = name.strip(" .") or "memory"
    lowered = {t.lower() for t in (taken or set())}
    candidate = f"{name}.md"
    n = 2
    while candidate.lower() in lowered:
        candidate = f"{name} {n}.md"
        n += 1
    return candidate


def note_id(title: str, source: str, taken: set[str] | None = None) -> str:
    """``lt-`` + 6 hex, stable for the same title and first source (re-runs give the same ID)."""
    basis = f"{fold(title)}\n{source}"
    for salt in range(1000):
        h = hashlib.sha256(f"{basis}\n{salt}".encode("utf-8") if salt else basis.encode("utf-8")).hexdigest()[:6]
        if not taken or f"lt-{h}" not in taken:
            return f"lt-{h}"
    raise AgentmemError("could not find a free note ID")  # pragma: no cover


# -- vault access ------------------------------------------------------------------------------------


def load_notes(vault: Vault, broken: list[Path] | None = None) -> list[Note]:
    """Every readable note in ``memory/long-term/`` (sorted by file name). Notes that cannot be
    parsed are skipped, never fatal; their paths are appended to ``broken`` when it is given."""
    folder = vault.longterm_dir
    notes: list[Note] = []
    if not folder.is_dir():
        return notes
    for p in sorted(folder.glob("*.md")):
        try:
            note = parse_note(p.read_bytes().decode("utf-8"))
        except (NoteFormatError, UnicodeDecodeError, OSError):
            if broken is not None:
                broken.append(p)
            continue
        note.path = p
        notes.append(note)
    return notes


def find_note(notes: list[Note], key: str) -> Note | None:
    """By ID, then exact title, then file name (without .md), then folded title."""
    k = key.strip()
    for pred in (
        lambda n: n.id == k,
        lambda n: n.title == k,
        lambda n: n.path is not None and (n.path.stem == k or n.path.name == k),
        lambda n: fold(n.title) == fold(k),
    ):
        hits = [n for n in notes if pred(n)]
        if hits:
            return hits[0]
    return None


def write_note(writer: Any, vault: Vault, note: Note) -> bool:
    """Write ``note`` to ``note.path`` through the vault writer (``VaultWriter``)."""
    if note.path is None:
        raise AgentmemError("a note needs a path before it is written")
    folder = vault.longterm_dir.absolute()
    p = note.path.absolute()
    if p.parent != folder or p.suffix != ".md":
        raise AgentmemError(f"refusing to write a note outside {folder}: {p}")
    return writer.write_file(p, render_note(note), action="write_note")
