"""Which project's memories a query sees (docs/projects.md): the caller's project and the global
memories by default; ``--project NAME`` for another one; ``--all-projects`` for every project.

``resolve_scope`` is the CLI's (the caller's project is the current folder's); ``chat_scope`` is
for a front end that serves a chat from elsewhere (the MCP server): it takes what the client
told it, in the order of docs/mcp.md, "Which project"."""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from agentmem_vault.vault import Vault
from agentmem_vault.config import vault_config
from agentmem_vault.errors import UnknownProject, UsageError
from agentmem_vault.ops.conversations import projects_of_sessions
from agentmem_vault.ops.projects import ProjectIdentity, aliases_from_config, fold_name, identify
from agentmem_vault.recall.location import UNSCOPED_KEY, note_scope_key


@dataclass
class Scope:
    names: list[str] | None  # casefolded names of the project; None = every project
    project: str = ""  # the project's name ("" = unknown: global memories only)
    source: str = ""  # explicit | all | pinned | git-remote | git-folder | folder | alias | unknown
    note: str = ""
    known: list[str] = field(default_factory=list)
    origin: str = ""  # where the folder came from (chat_scope): roots | workspace | CLAUDE_PROJECT_DIR | cwd
    folder: str = ""

    def to_dict(self) -> dict:
        d: dict = {"project": self.project or None, "all_projects": self.names is None, "project_source": self.source}
        if self.origin:
            d["project_from"] = self.origin
            d["project_folder"] = self.folder
        if self.note:
            d["project_note"] = self.note
        return d


def where_it_applies(scope: str, project: str) -> str:
    """``global``, ``unscoped`` or ``project NAME``: the words of docs/projects.md for a note."""
    key = note_scope_key(scope, project, fold_name)
    return "global" if key == "" else "unscoped" if key == UNSCOPED_KEY else f"project {project.strip()}"


def sees(names: list[str] | None, scope: str, project: str) -> bool:
    """Whether a query scoped to ``names`` (``Scope.names``; None = every project) sees a note:
    the global ones and its own project's, never an unscoped one (the rule of ``rank._scope_sql``)."""
    if names is None:
        return True
    key = note_scope_key(scope, project, fold_name)
    return key == "" or key in {fold_name(n) for n in names if n and n.strip()}


def known_projects(vault: Vault, cfg: dict | None = None) -> list[str]:
    """Projects this vault knows: config.yaml's ``projects:``, the projects of its notes (from the
    recall index) and those chats were registered in."""
    cfg = vault_config(vault) if cfg is None else cfg
    names: dict[str, str] = {}
    for n in aliases_from_config(cfg).known():
        names.setdefault(fold_name(n), n)
    with suppress(Exception):  # an index that cannot be opened names no projects
        from agentmem_vault.recall.index import open_index

        idx = open_index(vault)
        try:
            assert idx.conn is not None
            for (raw,) in idx.conn.execute("SELECT DISTINCT project_raw FROM notes WHERE project_raw != ''"):
                names.setdefault(fold_name(raw), raw)
        finally:
            idx.close()
    for proj in projects_of_sessions(vault).values():
        names.setdefault(fold_name(proj), proj)
    return sorted(names.values(), key=fold_name)


def resolve_scope(
    vault: Vault, *, project: str | None = None, all_projects: bool = False, cwd: str | os.PathLike | None = None
) -> Scope:
    if all_projects and project:
        raise UsageError("give --project NAME or --all-projects, not both")
    if all_projects:
        return Scope(None, "", "all")
    cfg = vault_config(vault)
    aliases = aliases_from_config(cfg)
    if project is not None:
        name = aliases.canonical(project)
        known = known_projects(vault, cfg)
        if fold_name(name) not in {fold_name(k) for k in known}:
            listed = ", ".join(known) if known else "none yet"
            raise UnknownProject(f"unknown project {project!r}; known projects: {listed} (or use --all-projects)")
        return Scope(aliases.names_for(name), name, "explicit", known=known)
    ident: ProjectIdentity = identify(Path(cwd) if cwd is not None else Path.cwd(), aliases)
    if not ident.name:
        return Scope([], "", "unknown", ident.note or "the current folder names no project: global memories only")
    return Scope(aliases.names_for(ident.name), ident.name, ident.source)


def chat_scope(
    vault: Vault,
    *,
    project: str | None = None,
    all_projects: bool = False,
    pinned: str | None = None,
    roots: list[str] | tuple[str, ...] = (),
    workspace: str | None = None,
    environ: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
) -> Scope:
    """The scope of one call from a chat, its sources asked in the order of docs/mcp.md, "Which
    project" (explicit, ``pinned``, ``roots``, ``workspace``, ``CLAUDE_PROJECT_DIR``, cwd, global)."""
    if project is not None or all_projects:
        return resolve_scope(vault, project=project, all_projects=all_projects)
    aliases = aliases_from_config(vault_config(vault))
    if pinned:
        name = aliases.canonical(pinned)
        return Scope(aliases.names_for(name), name, "pinned")
    env = os.environ if environ is None else environ
    candidates: list[tuple[str, str]] = [("roots", r) for r in roots]
    if workspace and not ("${" in workspace or workspace.startswith("$")):  # not a variable left unreplaced
        candidates.append(("workspace", workspace))
    if env.get("CLAUDE_PROJECT_DIR"):
        candidates.append(("CLAUDE_PROJECT_DIR", env["CLAUDE_PROJECT_DIR"]))
    candidates.append(("cwd", str(cwd if cwd is not None else Path.cwd())))
    for origin, folder in candidates:
        ident = identify(folder, aliases)
        if ident.name:
            return Scope(aliases.names_for(ident.name), ident.name, ident.source, origin=origin, folder=folder)
    return Scope([], "", "unknown", "no folder the client gave names a project: global memories only")
