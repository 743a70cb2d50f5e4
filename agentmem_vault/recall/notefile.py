"""Read one long-term memory note (``memory/long-term/<title>.md``) for recall.

A small reader of its own so that recall does not wait for, or depend on, the extraction code: the
frontmatter keys (docs/longterm.md) are flat (scalars and lists), so a strict little parser reads them
about fifty times faster than PyYAML; anything it does not understand is handed to PyYAML when
``allow_yaml`` is true (index build), and makes the note unreadable otherwise (hook fast path).
A note that cannot be parsed at all is still indexed by its file name and body, with ``error`` set:
a hand-written note in Obsidian is a memory too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_FM_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.S | re.M)
_KEY_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*$")
_ITEM_RE = re.compile(r"^[ \t]+-[ \t]+(.*?)[ \t]*$|^-[ \t]+(.*?)[ \t]*$")
_HISTORY_RE = re.compile(r"^##[ \t]+(?:History|歷史|历史)[ \t]*$", re.M | re.I)
_NEXT_H2_RE = re.compile(r"^#{1,2}[ \t]+\S", re.M)
_LINK_RE = re.compile(r"^\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]$")


class _Unsupported(ValueError):
    """Frontmatter the strict parser does not read (left to PyYAML)."""


@dataclass
class NoteDoc:
    """The fields recall needs from one note; missing keys get neutral defaults."""

    path: Path
    id: str = ""
    title: str = ""
    category: str = ""
    keywords: list[str] = field(default_factory=list)
    usage_scenario: list[str] = field(default_factory=list)
    project: str = ""
    module: str = ""
    importance: float = 0.5
    score: int | None = None
    status: str = "active"
    created: str = ""
    updated: str = ""
    sources: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    content: str = ""
    error: str | None = None


# -- strict flat-YAML reader ---------------------------------------------------------------------


def _scalar(raw: str) -> str:
    v = raw.strip()
    if not v:
        return ""
    if v[0] == '"':
        if not v.endswith('"') or len(v) < 2 or "\\" in v or '"' in v[1:-1]:
            raise _Unsupported("double-quoted string with escapes")
        return v[1:-1]
    if v[0] == "'":
        if not v.endswith("'") or len(v) < 2:
            raise _Unsupported("single-quoted string")
        inner = v[1:-1]
        if "'" in inner.replace("''", ""):
            raise _Unsupported("single-quoted string")
        return inner.replace("''", "'")
    if v[0] in "[{&*!|>%@`":
        raise _Unsupported(f"YAML construct {v[0]!r}")
    cut = v.find(" #")
    if cut >= 0:
        v = v[:cut].rstrip()
    if ": " in v:
        raise _Unsupported("nested mapping")
    return v


def _flow_list(raw: str) -> list[str]:
    v = raw.strip()
    if not (v.startswith("[") and v.endswith("]")):
        raise _Unsupported("flow list")
    inner = v[1:-1]
    items: list[str] = []
    buf: list[str] = []
    quote = ""
    for ch in inner:
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            buf.append(ch)
        elif ch == ",":
            items.append("".join(buf))
            buf = []
        elif ch in "[]{}":
            raise _Unsupported("nested flow collection")
        else:
            buf.append(ch)
    if quote:
        raise _Unsupported("unterminated quote")
    items.append("".join(buf))
    out = [_scalar(i) for i in items]
    if out and out[-1] == "" and not items[-1].strip():
        out.pop()  # trailing comma or empty list
    return [o for o in out if o != ""]


def parse_flat_yaml(text: str) -> dict[str, Any]:
    """Read ``key: scalar``, ``key: [a, b]`` and ``key:`` + ``- item`` lines; raise on anything else."""
    data: dict[str, Any] = {}
    current: str | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _ITEM_RE.match(line)
        if m and current is not None:
            item = m.group(1) if m.group(1) is not None else m.group(2)
            if not isinstance(data.get(current), list):
                data[current] = []
            data[current].append(_scalar(item))
            continue
        if line[:1] in " \t":
            raise _Unsupported("indented line that is not a list item")
        m = _KEY_RE.match(line)
        if not m:
            raise _Unsupported(f"line not understood: {line[:40]!r}")
        key, value = m.group(1), m.group(2)
        if key in data:
            raise _Unsupported(f"duplicate key {key!r}")
        if value is None or value == "":
            data[key] = None
            current = key
            continue
        current = None
        data[key] = _flow_list(value) if value.startswith("[") else _scalar(value)
    return data


def _yaml_mapping(text: str) -> dict[str, Any]:
    import yaml  # deferred: only for frontmatter the strict reader refused

    try:
        CLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(text, Loader=CLoader)  # noqa: S506 - SafeLoader variants only
    except yaml.YAMLError as exc:
        raise ValueError(f"frontmatter is not valid YAML: {str(exc).splitlines()[0]}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"frontmatter is a {type(data).__name__}, not a mapping")
    return data


# -- field coercion --------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    return str(value).strip()


def _list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        out: list[str] = []
        for v in value:
            if isinstance(v, (list, tuple)):  # unquoted [[link]] in YAML is a nested list
                out.extend(f"[[{_text(x)}]]" for x in v)
            elif v is not None and _text(v):
                out.append(_text(v))
        return out
    # "a, b" or "a，b" written by hand in Obsidian's text field
    return [p.strip() for p in re.split(r"[,，、;；]", str(value)) if p.strip()]


def _float(value: Any, default: float) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return default
    return f if f == f else default  # NaN


def _int(value: Any) -> int | None:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


def strip_history(body: str) -> str:
    """Drop a ``## History`` section (previous versions of the note): it must not rank."""
    m = _HISTORY_RE.search(body)
    if not m:
        return body
    rest = body[m.end():]
    nxt = _NEXT_H2_RE.search(rest)
    tail = rest[nxt.start():] if nxt else ""
    return (body[: m.start()].rstrip() + ("\n\n" + tail if tail else "")).strip()


def source_id(link: str) -> str:
    """``[[2026-05-25-1318-cursor-main-agent]]`` -> the Session ID inside."""
    s = link.strip()
    m = _LINK_RE.match(s)
    return m.group(1).strip() if m else s


def parse_note_text(text: str, path: Path, *, allow_yaml: bool = True) -> NoteDoc:
    """Parse a note's text (BOM and CRLF tolerated). Never raises for bad content: see ``error``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    note = NoteDoc(path=path, title=path.stem)
    body = text
    data: dict[str, Any] = {}
    m = _FM_RE.match(text)
    if m:
        body = text[m.end():]
        fm = m.group(1)
        try:
            data = parse_flat_yaml(fm)
        except _Unsupported:
            if allow_yaml:
                try:
                    data = _yaml_mapping(fm)
                except ValueError as exc:
                    note.error = str(exc)
            else:
                note.error = "frontmatter needs the full YAML parser"
    elif text.startswith("---"):
        note.error = "frontmatter is not closed by a '---' line"
    note.id = _text(data.get("id"))
    note.title = _text(data.get("title")) or path.stem
    note.category = _text(data.get("category"))
    note.keywords = _list(data.get("keywords"))
    note.usage_scenario = _list(data.get("usage_scenario"))
    note.project = _text(data.get("project"))
    note.module = _text(data.get("module"))
    note.importance = min(1.0, max(0.0, _float(data.get("importance"), 0.5)))
    note.score = _int(data.get("score"))
    note.status = (_text(data.get("status")) or "active").lower()
    note.created = _text(data.get("created"))
    note.updated = _text(data.get("updated")) or note.created
    note.sources = [source_id(s) for s in _list(data.get("sources"))]
    note.tags = _list(data.get("tags"))
    note.content = strip_history(body.replace("\r\n", "\n")).strip()
    return note


def parse_note_bytes(data: bytes, path: Path, *, allow_yaml: bool = True) -> NoteDoc:
    """Decode (undecodable bytes replaced and reported in ``error``) and parse."""
    try:
        text = data.decode("utf-8")
        err = None
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        err = f"not UTF-8 text (byte {exc.start})"
    note = parse_note_text(text, path, allow_yaml=allow_yaml)
    if err and not note.error:
        note.error = err
    return note


def read_note(path: Path, *, allow_yaml: bool = True) -> NoteDoc:
    """Read and parse a note file."""
    return parse_note_bytes(path.read_bytes(), path, allow_yaml=allow_yaml)
