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
from agentmem_vault.fastimport import LazyRegex
from agentmem_vault.board.table import Row
from agentmem_vault import fs
from agentmem_vault.model.redact import Pattern, applies, parse_patterns, redact
from agentmem_vault.model.redact import redact_bytes as _redact_bytes
from agentmem_vault.vault import Vault


def _strings(value: object, key: str) -> tuple[str, ...]:
    items = [] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise ConfigError(f"{key} in the user config: expected a list of text")
    return tuple(items)


@lru_cache(maxsize=8)
def _rules(
    patterns: tuple[str, ...], allow: tuple[str, ...]
) -> tuple[tuple[Pattern, ...], tuple[re.Pattern[str], ...]]:
    try:
        extra = parse_patterns("\n".join(patterns), where="redaction_patterns in the user config").patterns
        return extra, tuple(re.compile(a) for a in allow)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    except re.error as exc:
        raise ConfigError(f"redaction_allow in the user config: {exc.pattern!r}: {exc}") from exc


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
    return _rules(*(_strings(cfg.get(key), key) for key in ("redaction_patterns", "redaction_allow")))


def redact_text(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]`` (the same object when none)."""
    return redactor()(text)


def redactor() -> Callable[[str], str]:
    """``redact_text`` with the user's rules read once: for redacting the many turns of one source
    (reading the user config per turn was most of an unchanged extraction re-run)."""
    rules = user_rules()
    return lambda text: redact(text, None, rules)


def redact_row(row: Row) -> Row:
    """A board row with every cell redacted (an equal row when nothing is a secret)."""
    return Row(*map(redactor(), row.cells()))


def in_memory(vault_memory: PurePath, path: PurePath) -> bool:
    """Whether ``path`` is stored under this vault's ``memory/`` and redacted there."""
    return PurePath(path).is_relative_to(vault_memory) and applies(PurePath(path).relative_to(vault_memory))


def redact_bytes(data: bytes) -> bytes:
    """UTF-8 text redacted with the user's rules too; anything else (a binary file) as it is. The
    text ``redact_board`` just returned is not scanned a second time (it holds no secret)."""
    rules = user_rules()
    if _CLEAN and _CLEAN[0] == (rules, data):
        return data
    return _redact_bytes(data, rules)


# -- the board (docs/redaction.md "Which text is scanned when") -------------------------------------
_CLEAN: list[tuple[object, bytes]] = []  # (rules, UTF-8) of the text redact_board last returned
RECORD = "board-redacted.json"  # memory/.agentmem/: the digest of the last board redact_board returned
# a cut: the blank run with a line break after a "|" (a row's end), inside no match but @multiline's
_CUT = LazyRegex(r"(?<=\|)[^\S\n]*\n\s*")  # compiled on first use: the hook never rewrites the board


def new_pieces(clean: str, text: str) -> list[tuple[int, int]]:
    """The pieces of ``text`` (the spans between cuts) that are not pieces of ``clean``."""
    known, out, at = set(_CUT.split(clean)), [], 0
    for start, end in [*(m.span() for m in _CUT.finditer(text)), (len(text), len(text))]:
        if text[at:start] not in known:
            out.append((at, start))
        at = end
    return out


def redact_board(vault: Vault, before: str, text: str) -> str:
    """``text``, the board about to replace ``before`` (read under the vault lock), redacted: when
    ``before`` or its start is a board this returned under the same rules (the record), only the
    pieces of ``text`` new to it, else the whole (docs/redaction.md "Which text is scanned when")."""
    import hashlib

    from agentmem_vault.model import redact as model, template_text

    def _digest(*parts: str) -> str:
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    rules, path, only = user_rules(), vault.state_dir / RECORD, None
    if _CLEAN and _CLEAN[0] == (rules, text.encode("utf-8", "surrogatepass")):
        return text  # what this returned a moment ago (write_index_text, then _rewrite)
    allow = repr([(a.pattern, a.flags) for a in rules[1]])  # (a compiled pattern's repr is cut short)
    try:
        with open(str(model.__file__), "rb") as fh:  # the code, the built-in patterns and the user's rules
            code = fh.read().decode("latin-1")
    except OSError:  # no source file beside the package (a frozen install): its version stands for it
        from agentmem_vault import __version__ as code
    key = _digest(code, template_text("redaction", "patterns.txt"), repr(rules[0]), allow)
    got = fs.load_cache(path, 1)
    n, sha = got[1] if got is not None and got[0] == key and isinstance(got[1], list) and len(got[1]) == 2 else (0, "")
    if isinstance(n, int) and 0 < n <= len(before) and _digest(before[:n]) == sha:
        only = new_pieces(before[:n], text)
    out = redact(text, None, rules, only)
    _CLEAN[:] = [(rules, out.encode("utf-8", "surrogatepass"))]
    fs.save_cache(path, 1, key, [len(out), _digest(out)])
    return out


# The file layer redacts every write under memory/ with the built-in patterns on its own; once this
# module is loaded (the writer and the board import it) it uses these rules, the user's included.
# Registered rather than imported by fs: config reads through fs, and this module reads config.
fs.REDACT[:] = [redact_bytes]
