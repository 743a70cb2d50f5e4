"""Where the derived recall index lives (``memory/.agentmem/recall/index.sqlite3``).

A module of its own so that the sessionStart hook can find the file without importing the index
builder (tokenizer, note parser, hashing: about 10 ms it does not need).
"""

from __future__ import annotations

from pathlib import Path

DB_NAME = "index.sqlite3"


def index_dir(vault) -> Path:  # type: ignore[no-untyped-def]
    return vault.state_dir / "recall"


def db_path(vault) -> Path:  # type: ignore[no-untyped-def]
    return index_dir(vault) / DB_NAME
