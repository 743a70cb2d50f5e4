"""Where the derived recall index lives (``memory/.agentmem/recall/index.sqlite3``).

A module of its own so that the sessionStart hook can find the file without importing the index
builder (tokenizer, note parser, hashing: about 10 ms it does not need).
"""

from __future__ import annotations

from pathlib import Path

from agentmem_vault.errors import AgentmemError


def index_dir(vault) -> Path:  # type: ignore[no-untyped-def]
    return vault.state_dir / "recall"


def db_path(vault) -> Path:  # type: ignore[no-untyped-def]
    return index_dir(vault) / "index.sqlite3"


# The rule notes the sessionStart context may show, as of the index's last write: a small JSON file
# beside the index, so that the hook does not import sqlite3 (docs/performance.md). It records the
# index file's (mtime_ns, size) at that write; a mismatch means "ask the index itself".
RULES_NAME = "rules.json"
RULES_VERSION = 1  # of its layout (fs.load_cache)
RULE_IMPORTANCE = 0.9  # notes at or above it are rules, shown to every chat of their scope
RULES_LIMIT = 500  # every project's rules: the hook keeps its own project's and the global ones
RULES_SQL = (
    "SELECT path, mtime_ns, size, note_id, title, content, importance, updated, project FROM notes "
    "WHERE importance >= ? AND status != 'deprecated' ORDER BY importance DESC, updated DESC, title LIMIT ?"
)


def rules_path(vault) -> Path:  # type: ignore[no-untyped-def]
    return index_dir(vault) / RULES_NAME


# The scope key of a note whose project could not be known (``scope: unscoped``): it equals no
# project's name and is not the global key '', so such a note reaches no chat (docs/projects.md).
UNSCOPED_KEY = "\x00unscoped"


def note_scope_key(scope: str, project: str, fold_project) -> str:  # type: ignore[no-untyped-def]
    """Where a note applies: '' everywhere (``scope: global``, or a legacy note with no project
    and no scope), ``UNSCOPED_KEY`` nowhere, else its project's name folded by ``fold_project``
    (recall/scoping.py applies it; here, beside the rules' SQL, so that the index needs no scoping)."""
    s = (scope or "").strip().lower()
    if s == "global":
        return ""
    if s == "unscoped" and not (project or "").strip():
        return UNSCOPED_KEY
    return fold_project(project)


def index_error(path: Path, exc: BaseException, what: str) -> AgentmemError:
    """An SQLite or OS error of the recall index as the tool's own error (docs/reliability.md):
    the notes are the source of truth and untouched; the derived index is as it was."""
    detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return AgentmemError(
        f"could not {what} the recall index {path}: {detail}; the notes are untouched and no temporary "
        "file is left (run `agentmem reindex` once the disk has room)",
        code="recall_index_failed",
    )
