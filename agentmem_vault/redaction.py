"""What is redacted before it is stored under ``memory/`` (docs/redaction.md): the built-in
patterns (``templates/redaction/patterns.txt``), the user's own patterns and the user's
exceptions, both from the user config. A vault's own config.yaml can neither add exceptions nor
remove patterns: a shared vault must not switch off the protection of the user's secrets.

The file-system layer calls ``redact_bytes`` for every write (whole files and appended lines),
so no write path escapes; the writer and the snapshot input call ``redact_text`` first, so what
they verify is what lands on disk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import PurePath

from agentmem_vault.errors import ConfigError
from agentmem_vault.board.table import Row
from agentmem_vault import fs
from agentmem_vault.model.redact import Pattern, applies, parse_patterns, redact
from agentmem_vault.model.redact import redact_bytes as _redact_bytes


def _strings(value: object, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise ConfigError(f"{key} in the user config: expected a list of text")
    return tuple(items)


@lru_cache(maxsize=8)
def _rules(
    patterns: tuple[str, ...], allow: tuple[str, ...]
) -> tuple[tuple[Pattern, ...], tuple[re.Pattern[str], ...]]:
    try:
        extra = parse_patterns("\n".join(patterns), where="redaction_patterns in the user config").patterns
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    compiled: list[re.Pattern[str]] = []
    for a in allow:
        try:
            compiled.append(re.compile(a))
        except re.error as exc:
            raise ConfigError(f"redaction_allow in the user config: {a!r}: {exc}") from exc
    return extra, tuple(compiled)


_LOADING: list[bool] = []  # reading the user config may write its cache: never redact from inside that


def user_rules() -> tuple[tuple[Pattern, ...], tuple[re.Pattern[str], ...]]:
    """(the user's extra patterns, the user's exceptions) from the user config."""
    if _LOADING:
        return (), ()
    from agentmem_vault.config import user_config

    _LOADING.append(True)
    try:
        cfg = user_config()
    finally:
        _LOADING.pop()
    return _rules(
        _strings(cfg.get("redaction_patterns"), "redaction_patterns"),
        _strings(cfg.get("redaction_allow"), "redaction_allow"),
    )


def redact_text(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]`` (the same object when none)."""
    return redactor()(text)


def redactor() -> Callable[[str], str]:
    """``redact_text`` with the user's rules read once: for redacting the many turns of one source
    (reading the user config per turn was most of an unchanged extraction re-run)."""
    extra, allow = user_rules()
    return lambda text: redact(text, None, extra, allow)


def redact_row(row: Row) -> Row:
    """A board row with every cell redacted (the same row when nothing is a secret)."""
    cells = row.cells()
    out = [redact_text(c) for c in cells]
    return row if all(a is b for a, b in zip(out, cells, strict=True)) else Row(*out)


def in_memory(vault_memory: PurePath, path: PurePath) -> bool:
    """Whether ``path`` is stored under this vault's ``memory/`` and redacted there."""
    try:
        return applies(PurePath(path).relative_to(vault_memory))
    except ValueError:
        return False


def redact_bytes(data: bytes) -> bytes:
    """UTF-8 text redacted with the user's rules too; anything else (a binary file) as it is."""
    return _redact_bytes(data, *user_rules())


# The file layer redacts every write under memory/ with the built-in patterns on its own; once this
# module is loaded (the writer and the board import it) it uses these rules, the user's included.
# Registered rather than imported by fs: config reads through fs, and this module reads config.
fs.REDACT[:] = [redact_bytes]
