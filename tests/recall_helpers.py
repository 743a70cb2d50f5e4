"""Recall test helpers: write labelled corpus notes into a vault as real Markdown files."""

from __future__ import annotations

import json
import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "recall"
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]]')


def _yaml_str(s: str) -> str:
    # Quote when plain YAML would misread it (":", "#", leading specials); corpus text has no '"'.
    if not s or re.search(r'[:#\[\]{},&*!|>%@`"\']', s) or s.strip() != s:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def note_text(n: dict) -> str:
    lines = ["---", f"id: {n['id']}", f"title: {_yaml_str(n['title'])}", f"category: {n.get('category', '')}"]
    lines.append("keywords: [" + ", ".join(_yaml_str(k) for k in n.get("keywords", [])) + "]")
    lines.append("usage_scenario:")
    lines += [f"  - {_yaml_str(u)}" for u in n.get("usage_scenario", [])]
    lines += [
        f"project: {n.get('project', '')}",
        f"module: {n.get('module', '')}",
        f"importance: {n.get('importance', 0.5)}",
        "score: 4",
        f"status: {n.get('status', 'active')}",
        f"created: {n.get('created', n.get('updated', '2026-01-01T00:00'))}",
        f"updated: {n.get('updated', '2026-01-01T00:00')}",
        f'sources: ["[[{n.get("source", "2026-05-25-1318-cursor-main-agent")}]]"]',
        "tags: [agent-memory/long-term]",
        "---",
        n.get("content", ""),
        "",
    ]
    return "\n".join(lines)


def note_filename(n: dict) -> str:
    return _UNSAFE.sub("-", n["title"]).strip() + ".md"


def write_note(longterm: Path, n: dict) -> Path:
    longterm.mkdir(parents=True, exist_ok=True)
    p = longterm / note_filename(n)
    p.write_text(note_text(n), encoding="utf-8")
    return p


def load_corpus() -> list[dict]:
    with open(FIXTURES / "notes.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_queries() -> list[dict]:
    return json.loads((FIXTURES / "queries.json").read_text(encoding="utf-8"))


def load_long_tasks() -> dict:
    """{"long": [{"q", "relevant", "kind"}], "offtopic": [task, ...]}: wordy tasks for the context cutoff."""
    return json.loads((FIXTURES / "long_tasks.json").read_text(encoding="utf-8"))


def write_corpus(longterm: Path, notes: list[dict] | None = None) -> dict[str, Path]:
    """Write every corpus note; returns {key: path}."""
    return {n["key"]: write_note(longterm, n) for n in (notes if notes is not None else load_corpus())}


def write_filler_notes(longterm: Path) -> None:
    """Five unrelated memories, so that a test task's words are rare, as in a real vault (a vault of
    three notes that all share the task's words gives those words no weight)."""
    for i, topic in enumerate(("pnpm packages", "docker images", "release tags", "sql migrations", "css tokens")):
        write_note(
            longterm,
            {
                "id": f"lt-f0000{i}",
                "title": f"Notes on {topic}",
                "keywords": topic.split(),
                "content": f"About {topic}.",
            },
        )
