"""Reading the board: init, list, show, find (library functions; the CLI only prints)."""

from __future__ import annotations

import math
from collections import Counter
from importlib import resources
from dataclasses import dataclass
from pathlib import Path

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault
from agentmem_vault.config import vault_config
from agentmem_vault.errors import SessionNotFound, SnapshotFormatError, UsageError, WriteFailed
from agentmem_vault.model.ids import validate_session_id
from agentmem_vault.board.rules import is_untouched_idle
from agentmem_vault.model.textnorm import fold, tokenize
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import make_dirs, read_text


def init_vault(vault: Vault) -> dict:
    """Create the memory/ layout, the index header and a commented config; idempotent. A vault
    whose memory/ would be inside ``wiki/`` is refused before anything is created."""
    from agentmem_vault.config import check_not_in_wiki

    check_not_in_wiki(vault)
    created: list[str] = []
    for d in (vault.memory, vault.sessions_dir, vault.archive_dir, vault.longterm_dir, vault.state_dir):
        if not d.is_dir():
            if d.exists():
                raise WriteFailed(f"cannot create the folder {d}: a file is in the way")
            make_dirs(d)  # honours a read-only parent even for root (docs/reliability.md)
            created.append(str(d.relative_to(vault.root)))
    with BoardWriter(vault, "init") as w:
        if read_text(vault.index_path) is None:
            w.write_file(vault.index_path, it.new_index_text(), action="create_index")
            created.append("memory/index.md")
        else:
            w.index()  # validates the existing table; a damaged one is reported, not rewritten
        if not vault.config_path.exists():
            config = resources.files("agentmem_vault.templates").joinpath("vault-config.yaml").read_text("utf-8")
            w.write_file(vault.config_path, config, action="create_config")  # commented defaults
            created.append(str(vault.config_path.relative_to(vault.root)))
        else:
            vault_config(vault)  # an unreadable or invalid config is reported, not left for later
        from agentmem_vault.ops.obsidian import install_bases, merge_types  # docs/obsidian.md

        created += install_bases(w)
        obsidian = merge_types(vault, w)
        if obsidian["types_changed"]:
            created.append(f".obsidian/types.json ({len(obsidian['types_changed'])} property types merged)")
    return {"vault": str(vault.root), "created": created, **obsidian}


def load_index(vault: Vault) -> it.IndexDoc:
    text = read_text(vault.index_path)
    return it.parse_index(text or "")


LIST_STATUSES = (*it.STATUSES, "archived")
# The Metadata of an archive index (docs/lifecycle.md): the row's columns, its Status kept as
# Original Status, and when it was archived.
ARCHIVE_FIELDS = tuple("Original Status" if c == "Status" else c for c in it.COLUMNS) + ("Archived At",)


def list_rows(vault: Vault, status: str | None = None) -> tuple[list[it.Row], list[it.BadRow]]:
    """The board's rows (with ``status``: only those); ``archived``: the archived sessions' rows,
    from ``archive/<id>/index.md`` (they are never on the board, docs/lifecycle.md)."""
    if status == "archived":
        return archived_rows(vault), []
    doc = load_index(vault)
    if status and status not in it.STATUSES:
        raise UsageError(f"unknown status {status!r}; use one of {', '.join(LIST_STATUSES)}")
    rows = [r for r in doc.row_list() if status is None or r.status == status]
    return rows, doc.bad


@dataclass
class SessionView:
    row: it.Row | None
    snapshot_path: Path | None
    snapshot: str | None
    archived: bool

    def to_dict(self) -> dict:
        return {
            "row": self.row.to_dict() if self.row else None,
            "snapshot_path": str(self.snapshot_path) if self.snapshot_path else None,
            "snapshot": self.snapshot,
            "archived": self.archived,
        }


def show_session(vault: Vault, session_id: str) -> SessionView:
    sid = validate_session_id(session_id)
    doc = load_index(vault)
    row = doc.find(sid)
    snap_path = vault.session_path(sid)
    snap = read_text(snap_path)
    if row is not None or snap is not None:
        return SessionView(row, snap_path if snap is not None else None, snap, False)
    arch = vault.archive_path(sid)
    if arch.is_dir():
        meta = read_text(arch / "index.md")
        sp = arch / "session.md"
        row = archived_row(meta or "")
        return SessionView(row, sp if sp.exists() else None, read_text(sp), True)
    raise SessionNotFound(f"unknown Session ID {sid}: not in memory/index.md, sessions/ or archive/")


def archived_rows(vault: Vault) -> list[it.Row]:
    """Every archived session's row, oldest ID first (its Original Status kept in Status)."""
    out = []
    if vault.archive_dir.is_dir():
        for d in sorted(vault.archive_dir.iterdir()):
            r = archived_row(read_text(d / "index.md") or "") if d.is_dir() else None
            if r is not None:
                out.append(r)
    return out


def archived_row(text: str) -> it.Row | None:
    """The row an archive index holds (its Original Status as Status), None when it names no session.
    Its Metadata table is read by the snapshot model, as its properties are (ops/session_files.py)."""
    from agentmem_vault.model.snapshot import parse_snapshot

    try:
        meta = parse_snapshot(text).metadata
    except SnapshotFormatError:
        meta = {}
    if "Session ID" not in meta:  # its Metadata heading edited away: its Field/Value rows (docs/reliability.md)
        cells = [it.split_cells(ln.strip()) for ln in text.lstrip("\ufeff").splitlines() if ln.strip().startswith("|")]
        meta = {c[0]: c[1] for c in reversed(cells) if len(c) >= 2}
    if "Session ID" not in meta:
        return None
    return it.Row(*(meta.get(k, "-" if k == "Referenced By" else "") for k in ARCHIVE_FIELDS[: len(it.COLUMNS)]))


# -- find ---------------------------------------------------------------------------------------

_FIELD_WEIGHTS = (("topic", 3.0), ("keywords", 2.0), ("summary", 1.0))


@dataclass
class RowMatch:
    row: it.Row
    score: float
    archived: bool = False

    def to_dict(self) -> dict:
        return {**self.row.to_dict(), "score": round(self.score, 4), "archived": self.archived}


def find_rows(vault: Vault, query: str, *, archived: bool = False, limit: int = 20) -> list[RowMatch]:
    """Rank rows by Topic/Summary/Keywords (CJK bigrams, Traditional/Simplified folded, BM25-like),
    active/stale before idle placeholders."""
    q = fold(query)
    qtok = set(tokenize(q, fold_first=False))
    if not q:
        raise UsageError("find needs a query")
    rows = [(r, False) for r in load_index(vault).row_list()]
    if archived:
        rows += [(r, True) for r in archived_rows(vault)]
    n = max(1, len(rows))
    docs = [(r, arch, {name: tokenize(getattr(r, name)) for name, _ in _FIELD_WEIGHTS}) for r, arch in rows]
    df = Counter(t for _, _, toks in docs for t in set().union(*toks.values()))  # rows holding each token
    hits: list[RowMatch] = []
    for r, arch, toks in docs:
        score = 0.0
        for name, weight in _FIELD_WEIGHTS:
            ft = toks[name]
            if not ft:
                continue
            for t in qtok:
                tf = ft.count(t)
                if tf:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    score += weight * idf * (tf * 2.2) / (tf + 1.2 * (0.25 + 0.75 * len(ft) / 12))
            if q in fold(getattr(r, name)):
                score += weight  # whole-phrase bonus
        if r.session_id == query.strip():
            score += 100
        if score > 0:
            hits.append(RowMatch(r, score, arch))
    order = {"active": 0, "stale": 0, "idle": 1}
    hits.sort(key=lambda h: (1 if is_untouched_idle(h.row) else order.get(h.row.status, 2), h.archived, -h.score))
    return hits[:limit]
