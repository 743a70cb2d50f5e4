"""Long-term notes in the vault: loading, finding and writing them, and naming new ones.

The note format itself (the ``Note`` model, its one reader and one writer, every normalisation
rule) is ``agentmem_vault.model.notes`` (docs/notes.md).

Public API: ``load_notes(vault, broken=None)`` (skips unreadable notes and reports them),
``find_note``, ``write_note``, ``safe_filename``, ``note_id``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path
from typing import Any

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, NoteFormatError
from agentmem_vault.model.notes import Note, format_note_ts, note_file_problem, read_note_bytes, render_note
from agentmem_vault.model.notes import properties as properties  # longterm/memories.py imports it from here
from agentmem_vault.model.textnorm import fold
from agentmem_vault.fs import read_bytes

MAX_NAME_CHARS = 80
MAX_NAME_BYTES = 180  # many file systems cap a name at 255 bytes; CJK is 3 bytes a character


def note_now() -> str:
    """Now, as every time field of a note is written: the one clock (``AGENTMEM_NOW`` when set),
    to the second (docs/notes.md)."""
    from agentmem_vault.clock import now_precise

    return format_note_ts(now_precise())


# -- names and ids ----------------------------------------------------------------------------------

_DROPPED_NAME_CHARS = re.compile(r'["`<>]')
_BAD_NAME_CHARS = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]')
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def safe_filename(title: str, taken: set[str] | None = None) -> str:
    """A file name (``<name>.md``) safe on Windows and in Obsidian links, unique against ``taken``
    (compared case-insensitively). The model's title is only ever a *source* for this name."""
    name = unicodedata.normalize("NFC", title)
    # readable and close to the title (docs/notes.md): quotes and code marks go, separators become
    # a hyphen, the other refused characters a space ('rel="noopener"' -> 'rel=noopener')
    name = _DROPPED_NAME_CHARS.sub("", name)
    name = re.sub(r"\s*[:：]\s+", " - ", name)  # "Docker image: python" -> "Docker image - python"
    name = re.sub(r"[\\/:]+(?=\s|$)", "", name)  # a path's trailing slash
    name = re.sub(r"[\\/:]+", "-", name)
    name = _BAD_NAME_CHARS.sub(" ", name)
    name = re.sub(r"\.{2,}", ".", name)
    name = " ".join(name.split()).strip(" .-")
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
        h = hashlib.sha256(f"{basis}\n{salt}".encode() if salt else basis.encode("utf-8")).hexdigest()[:6]
        if not taken or f"lt-{h}" not in taken:
            return f"lt-{h}"
    raise AgentmemError("could not find a free note ID")  # pragma: no cover


# -- vault access ------------------------------------------------------------------------------------


def load_notes(vault: Vault, broken: list[Path] | None = None, reasons: dict[Path, str] | None = None) -> list[Note]:
    """Every readable note in ``memory/long-term/`` (sorted by file name). Notes that cannot be
    parsed are skipped, never fatal; their paths are appended to ``broken`` and the one-line
    reason put in ``reasons`` when those are given."""
    folder = vault.longterm_dir
    notes: list[Note] = []
    if not folder.is_dir():
        return notes
    # The same files the recall index reads: every .md below the folder, hidden entries skipped.
    paths = [p for p in folder.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    for p in sorted(paths, key=lambda q: q.relative_to(folder).as_posix()):
        try:  # fs's read: no FIFO waits, no link outside the vault (docs/reliability.md)
            st = p.stat()
            problem = note_file_problem(st.st_mode, st.st_size)
            if problem:
                raise NoteFormatError(problem)
            data = read_bytes(p)
            if data is None:
                continue  # deleted meanwhile
            notes.append(read_note_bytes(data, p))
        except (OSError, AgentmemError) as exc:  # NoteFormatError is an AgentmemError
            if broken is not None:
                broken.append(p)
            if reasons is not None:
                reasons[p] = exc.message if isinstance(exc, AgentmemError) else (exc.strerror or str(exc))
    return notes


def find_note(notes: list[Note], key: str) -> Note | None:
    """By ID, then exact title, then file name (without .md), then folded title."""
    k = key.strip()
    for pred in (
        lambda n: n.id == k,
        lambda n: n.name == k,
        lambda n: n.path is not None and (n.path.stem == k or n.path.name == k),
        lambda n: fold(n.name) == fold(k),
    ):
        hits = [n for n in notes if pred(n)]
        if hits:
            return hits[0]
    return None


def write_note(writer: Any, vault: Vault, note: Note) -> bool:
    """Write ``note`` to ``note.path`` through the vault writer (``VaultWriter``).

    Refuses (NoteFormatError) when the file on disk now has frontmatter that cannot be read: the
    note would be rewritten from a model that never saw that file's properties."""
    if note.path is None:
        raise AgentmemError("a note needs a path before it is written")
    folder = vault.longterm_dir.absolute()
    p = note.path.absolute()
    if folder not in p.parents or p.suffix != ".md" or ".." in p.relative_to(folder).parts:
        raise AgentmemError(f"refusing to write a note outside {folder}: {p}")
    try:
        current = read_bytes(p)  # a FIFO or an outside link is refused, never waited on
    except (OSError, AgentmemError):
        current = None  # the writer reports an unreadable target itself
    if current is not None:
        try:
            read_note_bytes(current, p)
        except NoteFormatError as exc:
            raise NoteFormatError(f"{p.name}: {exc}; fix its frontmatter first, nothing was written") from exc
    safe = _redacted_path(p, note.id)
    if safe != p:  # the file name is stored too: no secret in it (docs/redaction.md)
        note.path = p = safe
    return writer.write_file(p, render_note(note), action="write_note")


def _redacted_path(p: Path, note_id: str) -> Path:
    """``p`` with any secret in its file name replaced (``REDACTED-aws-key``: no ``:`` or brackets,
    which Windows refuses), numbered when that name is taken, so no other note is overwritten."""
    from agentmem_vault.redaction import redact_text

    stem = redact_text(p.stem)
    if stem is p.stem:
        return p
    stem = re.sub(r"\[REDACTED:([a-z0-9-]+)\]", r"REDACTED-\1", stem)
    out, n = p.with_name(f"{stem}.md"), 2
    while out.exists() and not _is_note(out, note_id):
        out, n = p.with_name(f"{stem} {n}.md"), n + 1
    return out


def _is_note(path: Path, note_id: str) -> bool:
    try:
        data = read_bytes(path)
        return data is not None and read_note_bytes(data, path).id == note_id
    except (OSError, AgentmemError):
        return False
