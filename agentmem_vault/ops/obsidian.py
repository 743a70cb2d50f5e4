"""Obsidian set-up and checks (docs/obsidian.md): the Bases views ``init`` installs into memory/,
our property types merged into ``.obsidian/types.json`` (the folder belongs to the user: touched
only when it exists, only our entries, after a backup), and doctor's findings about Properties.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError, NotRegularFile, OutsideVault, SnapshotFormatError, WriteFailed
from agentmem_vault.model import session_props as sp
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import atomic_write_text, read_bytes, read_text
from agentmem_vault.backups import backup_dir

if TYPE_CHECKING:
    from agentmem_vault.ops.doctor.findings import Finding

BASES = ("Sessions.base", "Long-term memories.base")
PROPS_MALFORMED = "properties_malformed"
PROPS_DISAGREE = "properties_disagree"
TYPES_MISSING = "obsidian_types"


def base_template(name: str) -> str:
    return resources.files("agentmem_vault.templates").joinpath("bases", name).read_text(encoding="utf-8")


def install_bases(w: BoardWriter) -> list[str]:
    """Write the Bases views that are missing (a user's edited copy is never overwritten)."""
    created = []
    for name in BASES:
        path = w.vault.memory / name
        if not path.exists():
            w.write_file(path, base_template(name), action="create_base")
            created.append(f"memory/{name}")
    return created


def types_path(vault: Vault) -> Path:
    return vault.root / ".obsidian" / "types.json"


def types_needing_merge(vault: Vault) -> list[str]:
    """Our property names whose type ``.obsidian/types.json`` lacks or gives otherwise ([] without
    ``.obsidian/``). Raises AgentmemError for an unreadable file."""
    if not (vault.root / ".obsidian").is_dir():
        return []
    return _merged(read_text(types_path(vault)), "left as it is")[1]


def _merged(old: str | None, otherwise: str) -> tuple[str, list[str]]:
    try:
        return sp.merge_types_json(old)
    except (ValueError, TypeError) as exc:
        raise AgentmemError(f".obsidian/types.json cannot be read ({exc}); {otherwise}", code=TYPES_MISSING) from exc


def merge_types(vault: Vault, w: BoardWriter) -> dict:
    """Merge our types into ``.obsidian/types.json`` when the vault has ``.obsidian/``; the
    previous file is backed up first. Returns what changed (and where the backup is)."""
    folder = vault.root / ".obsidian"
    if not folder.is_dir():
        return {"types_changed": [], "types_backup": None}
    path = types_path(vault)
    try:
        old = read_text(path)
    except (OutsideVault, NotRegularFile) as exc:  # a link out of the vault or a FIFO: left alone
        return {"types_changed": [], "types_backup": None, "warnings": [exc.message]}
    new, changed = _merged(old, "fix or remove it, nothing was written")
    if not changed:
        return {"types_changed": [], "types_backup": None}
    backup = None
    if old is not None:
        dst = backup_dir(vault.state_dir / "backups", "obsidian") / "types.json"  # backups' one naming scheme
        atomic_write_text(dst, old)
        backup = str(dst.relative_to(vault.root))
    w.journal("merge_obsidian_types", path=path, changed=changed, backup=backup)
    atomic_write_text(path, new)
    if read_text(path) != new:
        raise WriteFailed(f"{path} did not verify after the write")
    return {"types_changed": changed, "types_backup": backup}


# -- doctor -------------------------------------------------------------------------------------


def session_files(vault: Vault) -> list[Path]:
    """Every snapshot and archive file whose properties we keep."""
    from agentmem_vault.ops.lifecycle import folder_names

    names = sorted(folder_names(vault.sessions_dir))
    out = [vault.sessions_dir / n for n in names if n.endswith(".md") and is_valid_session_id(n[:-3])]
    for n in sorted(folder_names(vault.archive_dir)):
        folder = vault.archive_dir / n
        if is_valid_session_id(n):
            out += [folder / m for m in ("session.md", "index.md") if (folder / m).is_file()]
    return out


def property_problems(vault: Vault, w: BoardWriter | None = None) -> list[Finding]:
    """doctor's findings about malformed frontmatter and frontmatter that disagrees with its tables
    (files without frontmatter are fine: upgraded on their next write)."""
    from agentmem_vault.ops.doctor.findings import ERROR, WARNING, Finding
    from agentmem_vault.ops.session_files import board_facts, kind_of

    own = w if w is not None else BoardWriter(vault, "doctor")  # reads only: no lock needed
    out: list[Finding] = []
    for path in session_files(vault):
        found = kind_of(vault, path)
        if found is None:
            continue
        kind, sid = found
        try:
            text = read_text(path)
        except AgentmemError:
            continue  # not UTF-8: doctor's other checks report it
        rel = str(path.relative_to(vault.root).as_posix())
        try:
            if text is None or (fm := sp.split_text(text).frontmatter) is None:
                continue
            sp.parse_frontmatter(fm)
        except SnapshotFormatError as exc:
            hint = "fix the YAML between the '---' lines by hand, or delete that block: it is written again "
            hint += "from the Metadata table on the next update"
            out.append(Finding(PROPS_MALFORMED, ERROR, f"{rel}: {exc.message}", sid, path=rel, hint=hint))
            continue
        try:
            keys = sp.disagreements(text, kind=kind, board=board_facts(own, kind, sid), session_id=sid)
        except SnapshotFormatError:
            continue  # not a readable snapshot: reported by doctor's snapshot checks
        if keys:
            message = f"{rel}: properties {', '.join(keys)} differ from its Metadata table / board row"
            fix = "rewrite those properties from the Metadata table and the board"
            out.append(Finding(PROPS_DISAGREE, WARNING, message, sid, path=rel, fix=fix))
    return out


def fix_properties(w: BoardWriter, paths: list[str]) -> list[str]:
    """Rewrite the disagreeing frontmatter of ``paths`` (relative to the vault) toward the tables
    (the caller backs them up first). Returns the paths fixed."""
    from agentmem_vault.ops.session_files import resync

    fixed = []
    for rel in paths:
        if read_bytes(w.vault.root / rel) is not None:
            resync(w, w.vault.root / rel)
            fixed.append(rel)
    return fixed
