"""doctor's search for secrets already stored under ``memory/`` and ``--fix``'s redaction of them
(what is searched, where the originals are copied first: docs/redaction.md, "Secrets already in
the vault"). Left alone: the vault's ``config.yaml`` (a vault's own model token belongs there,
docs/reliability.md), derived caches and binary files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePath

from agentmem_vault import redaction
from agentmem_vault.backups import backup_dir
from agentmem_vault.errors import AgentmemError
from agentmem_vault.fs import atomic_write_bytes, decode_text, read_bytes
from agentmem_vault.model.redact import Pattern, find_secrets
from agentmem_vault.ops.doctor.findings import ERROR, Finding
from agentmem_vault.recall.index import reindex
from agentmem_vault.recall.refresh import longterm_paths
from agentmem_vault.vault import Vault, user_cache_dir
from agentmem_vault.writer import VaultWriter, journal_files

KIND = "secret_stored"
_SKIP = {PurePath(".agentmem", "config.yaml")}


def _candidates(vault: Vault) -> list[Path]:
    out = []
    for dirpath, dirs, files in os.walk(vault.memory):
        dirs.sort()
        for name in sorted(files):
            p = Path(dirpath) / name
            rel = p.relative_to(vault.memory)
            if rel not in _SKIP and redaction.applies(rel) and not os.path.islink(p):
                out.append(p)
    return out


def _text(p: Path) -> str | None:
    try:
        data = read_bytes(p)
        return data.decode("utf-8") if data is not None else None
    except (OSError, AgentmemError, UnicodeDecodeError):
        return None  # binary (the recall index) or unreadable: other checks report those


def stored_secrets(vault: Vault) -> dict[Path, list[str]]:
    """File -> the kinds of secret it holds."""
    rules = redaction.user_rules()
    return {p: kinds for p in _candidates(vault) if (kinds := _kinds(p, rules))}


def _kinds(p: Path, rules: tuple[Iterable[Pattern], Iterable[re.Pattern[str]]]) -> list[str]:
    text = _text(p)
    return sorted({f.kind for f in find_secrets(text, None, rules)}) if text else []


def secret_findings(vault: Vault) -> list[Finding]:
    return [
        Finding(
            KIND,
            ERROR,
            f"{p.relative_to(vault.root)} holds {len(kinds)} kind(s) of secret ({', '.join(kinds)})",
            path=str(p.relative_to(vault.root)),
            fix="replace them with [REDACTED:<kind>] (the file is first copied outside the vault)",
        )
        for p, kinds in stored_secrets(vault).items()
    ]


def backup_root(vault: Vault) -> Path:
    """Where the originals go: the user cache folder, never the synced vault."""
    return user_cache_dir() / "secret-backups" / vault.key


def redact_stored(vault: Vault, findings: list[Finding], w: VaultWriter) -> Path | None:
    """Redact the files of ``findings`` through ``w`` (the caller's writer, holding the vault
    lock); returns the backup folder, None when there was nothing to do. Each file is backed up
    before it is rewritten; a redacted note is current in the recall index at once (``w`` is a
    NoteWriter), which is then rebuilt so that no old page of it keeps the secret."""
    todo = [vault.root / f.path for f in findings if f.kind == KIND and f.path]
    if not todo:
        return None
    folder = backup_dir(backup_root(vault), "redaction")
    journals = journal_files(vault.journal_path)
    for p in todo:
        data = read_bytes(p)
        if data is None:
            continue
        atomic_write_bytes(folder / p.relative_to(vault.memory), data)  # outside memory/: kept as is
        if p in journals:  # the journal cannot journal its own rewrite: the file layer redacts it
            atomic_write_bytes(p, data)
        else:  # journaled, verified; redacted by the writer
            w.write_file(p, decode_text(data, p), action="redact_secrets")
    if longterm_paths(vault, todo):
        reindex(vault)
    for f in findings:
        if f.kind == KIND and f.path:
            f.fixed = not stored_secrets_in(vault.root / f.path)
    return folder


def stored_secrets_in(p: Path) -> bool:
    return bool(_kinds(p, redaction.user_rules()))
