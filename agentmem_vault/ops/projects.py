"""Project identity: which project a chat, a transcript or a folder belongs to; the naming rules
(config mapping, git remote, folder name, slugs decoded, never cut) are docs/projects.md.

Light on purpose: the sessionStart hook calls ``identify`` for a new chat (a few ``stat`` calls and
reading ``.git/config``); no YAML, no subprocess.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePath, PureWindowsPath

from agentmem_vault.fastimport import LazyRegex

_DRIVE_RE = re.compile(r"^[A-Za-z]:[\\/]")
_REMOTE_URL_RE = LazyRegex(r'^\s*\[remote\s+"origin"\]\s*$|^\s*url\s*=\s*(.+?)\s*$', re.MULTILINE)
MAX_NAME = 80


class ProjectIdentity:
    """``name`` ("" when unknown), how it was found, the folder it stands for, and a note saying why
    when it is unknown. A plain class: the hook cannot afford ``dataclasses`` (docs/performance.md),
    and a namedtuple's class costs more to make than this one."""

    __slots__ = ("name", "source", "root", "note")

    def __init__(self, name: str, source: str, root: str = "", note: str = ""):
        self.name = name
        self.source = source  # git-remote | git-folder | folder | alias | unknown
        self.root = root
        self.note = note

    def to_dict(self) -> dict:
        return {
            "project": self.name or None,
            "project_source": self.source,
            "project_root": self.root or None,
            **({"project_note": self.note} if self.note else {}),
        }


UNKNOWN = ProjectIdentity("", "unknown", "", "no workspace folder was given")


def fold_name(name: str) -> str:
    return (name or "").strip().casefold()


def _pure(path: str | os.PathLike) -> PurePath:
    s = os.fspath(path)
    if _DRIVE_RE.match(s) or (s.startswith("\\\\") and os.sep == "/"):
        return PureWindowsPath(s)
    return Path(s)


def _norm(path: str | os.PathLike) -> str:
    """A comparable form of a folder path (separators, case on Windows paths, no trailing slash)."""
    p = _pure(path)
    s = str(p).replace("\\", "/").rstrip("/")
    return s.casefold() if isinstance(p, PureWindowsPath) else s


class Aliases:
    """``projects:`` of config.yaml: ``{name: [folder or old name, ...]}``. An entry with a path
    separator (or ``~``, or a drive letter) is a folder (it and everything under it); any other
    entry is a name that means this project (a renamed repository, a clone under another name)."""

    def __init__(self, mapping: object = None):
        self.names: dict[str, str] = {}
        self.folders: list[tuple[str, str]] = []
        if not isinstance(mapping, dict):
            return
        for name, entries in mapping.items():
            proj = str(name).strip()[:MAX_NAME]
            if not proj:
                continue
            self.names[fold_name(proj)] = proj
            if isinstance(entries, str):
                entries = [entries]
            for e in entries if isinstance(entries, list) else []:
                v = str(e).strip()
                if not v:
                    continue
                if "/" in v or "\\" in v or v.startswith("~") or _DRIVE_RE.match(v):
                    self.folders.append((_norm(os.path.expanduser(v)), proj))
                else:
                    self.names[fold_name(v)] = proj
        self.folders.sort(key=lambda f: -len(f[0]))  # the most specific folder wins

    def canonical(self, name: str) -> str:
        return self.names.get(fold_name(name), name.strip())

    def names_for(self, project: str) -> list[str]:
        """Every name that means ``project`` (itself and its old names), folded."""
        canon = self.canonical(project)
        out = {fold_name(canon)} | {k for k, v in self.names.items() if fold_name(v) == fold_name(canon)}
        return sorted(out)

    def folder_project(self, path: str | os.PathLike) -> str | None:
        p = _norm(path)
        for folder, proj in self.folders:
            if p == folder or p.startswith(folder + "/"):
                return proj
        return None

    def known(self) -> list[str]:
        return sorted(set(self.names.values()), key=fold_name)


def aliases_from_config(cfg: dict | None) -> Aliases:
    return Aliases((cfg or {}).get("projects"))


def _read(path: Path, limit: int = 65536) -> str:
    """The head of a file of the workspace (``.git/config``, ``HEAD``): the workspace comes from a
    hook payload, so a FIFO or a device there is refused, never waited on."""
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.fs import read_head

    try:
        return (read_head(path, limit) or b"").decode("utf-8", "replace")
    except AgentmemError:
        return ""


def _remote_name(git_dir: Path) -> str:
    """The repository name of the ``origin`` remote in ``git_dir/config`` ('' when none)."""
    text = _read(git_dir / "config")
    in_origin = False
    for m in _REMOTE_URL_RE.finditer(text):
        if m.group(1) is None:
            in_origin = True
        elif in_origin:
            url = m.group(1).strip().strip('"').rstrip("/")
            name = re.split(r"[/:\\]", url)[-1]
            return name[:-4] if name.endswith(".git") else name
    return ""


def _git_dirs(top: Path, dotgit: Path) -> tuple[Path, Path, str]:
    """(git dir, common git dir, kind) for a work tree whose ``.git`` is ``dotgit``."""
    if dotgit.is_dir():
        return dotgit, dotgit, "repository"
    m = re.match(r"gitdir:\s*(.+)", _read(dotgit, 4096).strip())
    if not m:
        return dotgit, dotgit, "repository"
    git_dir = Path(m.group(1).strip())
    if not git_dir.is_absolute():
        git_dir = (top / git_dir).resolve()
    common_file = _read(git_dir / "commondir", 4096).strip()
    if common_file:  # a linked worktree: .git/worktrees/<name> -> the main repository's .git
        common = Path(common_file)
        return git_dir, (common if common.is_absolute() else (git_dir / common).resolve()), "worktree"
    if "modules" in git_dir.parts:
        return git_dir, git_dir, "submodule"
    return git_dir, git_dir, "repository"


def identify(path: str | os.PathLike | None, aliases: Aliases | None = None) -> ProjectIdentity:
    """The project of a workspace folder (see the module docstring for the order)."""
    aliases = aliases or Aliases()
    if not path or not str(path).strip():
        return UNKNOWN
    raw = str(path).strip()
    by_folder = aliases.folder_project(raw)
    if by_folder:
        return ProjectIdentity(by_folder, "alias", raw)
    pure = _pure(raw)
    local = Path(raw).expanduser() if not isinstance(pure, PureWindowsPath) or os.name == "nt" else None
    if local is not None:
        try:
            local = local.absolute()
            cur: Path | None = local
            while cur is not None:
                dotgit = cur / ".git"
                if dotgit.exists():
                    git_dir, common, kind = _git_dirs(cur, dotgit)
                    # a submodule is its own project; a worktree is the one of its main repository
                    remote = _remote_name(git_dir if kind == "submodule" else common)
                    top = common.parent if kind != "submodule" and common.name == ".git" else cur
                    name, source = (remote, "git-remote") if remote else (top.name, "git-folder")
                    return ProjectIdentity(aliases.canonical(name)[:MAX_NAME], source, str(cur))
                cur = cur.parent if cur.parent != cur else None
        except OSError:
            pass
    name = pure.name or (pure.drive.rstrip(":\\/") if isinstance(pure, PureWindowsPath) else "")
    if not name:
        return ProjectIdentity("", "unknown", raw, f"{raw} names no folder")
    return ProjectIdentity(aliases.canonical(name)[:MAX_NAME], "folder", raw)


def identify_roots(roots: list[str] | tuple[str, ...], aliases: Aliases | None = None) -> ProjectIdentity:
    """The project of a chat from its workspace roots (the first root that names one)."""
    for r in roots:
        ident = identify(r, aliases)
        if ident.name:
            return ident
    return UNKNOWN


# -- transcripts ------------------------------------------------------------------------------------


def decode_slug(slug: str, *, listdir=None, max_candidates: int = 4) -> list[str]:  # type: ignore[no-untyped-def]
    """The existing folders an agent's project-folder slug can stand for (docs/projects.md): each
    ``-`` is tried as a separator or as a literal character (Claude Code also turns ``.``, ``_`` and
    spaces into ``-``), following only names that exist, each folder listed once. More than one
    candidate means the slug is ambiguous."""
    listing: dict[str, list[str]] = {}

    def names(folder: str) -> list[str]:
        if folder not in listing:
            try:
                listing[folder] = (listdir or os.listdir)(folder)
            except OSError:
                listing[folder] = []
        return listing[folder]

    def canon(name: str) -> str:
        return re.sub(r"[-_. ]", "-", name)

    tokens = canon(slug).split("-")  # a slug may keep '_' or '.' (Cursor): compare in one form
    if not any(tokens):
        return []
    plans: list[tuple[str, list[str]]] = []
    if slug.startswith("-"):
        plans.append(("/", tokens[1:]))
    else:
        if len(tokens[0]) == 1 and tokens[0].isalpha():  # c-Users-... may be C:/Users/... (Windows)
            plans.append((tokens[0] + ":/", tokens[1:]))
        plans.append(("/", tokens))
    found: list[str] = []

    def walk(folder: str, toks: list[str]) -> None:
        # the next folder name is made of toks[0..k] joined by '-', '_', '.' or ' ' (all written '-')
        for entry in names(folder):
            parts = canon(entry).split("-")
            k = len(parts)
            if k > len(toks) or [t.casefold() for t in parts] != [t.casefold() for t in toks[:k]]:
                continue
            full = os.path.join(folder, entry)
            if k == len(toks):
                if os.path.isdir(full) and full not in found:
                    found.append(full)
            elif os.path.isdir(full):
                walk(full, toks[k:])
            if len(found) > max_candidates:
                return

    for start, toks in plans:
        if toks and any(toks):
            walk(start, [t for t in toks])
    return found


def _transcript_cwd(path: Path, max_lines: int = 50) -> str:
    """The working folder a Claude Code / Codex transcript recorded (its ``cwd`` field)."""
    from agentmem_vault.errors import AgentmemError
    from agentmem_vault.fs import open_for_read

    try:
        with open_for_read(path) as fh:
            for _ in range(max_lines):
                line = fh.readline(1 << 20)  # a line of megabytes is no header line
                if not line:
                    break
                if b'"cwd"' not in line:
                    continue
                try:
                    obj = json.loads(line.decode("utf-8", "replace"))
                except ValueError:
                    continue
                cwd = obj.get("cwd") if isinstance(obj, dict) else None
                if isinstance(cwd, str) and cwd.strip():
                    return cwd.strip()
    except (OSError, AgentmemError):
        pass
    return ""


def for_transcript(path: str | os.PathLike, aliases: Aliases | None = None, *, listdir=None) -> ProjectIdentity:  # type: ignore[no-untyped-def]
    """The project of an agent transcript: its recorded ``cwd`` when it has one, else its
    project-folder slug decoded against existing folders; unknown when neither decides."""
    p = Path(path)
    cwd = _transcript_cwd(p)
    if cwd:
        return identify(cwd, aliases)
    parts = p.parts
    slug = ""
    if "agent-transcripts" in parts:  # ~/.cursor/projects/<slug>/agent-transcripts/...
        i = parts.index("agent-transcripts")
        slug = parts[i - 1] if i > 0 else ""
    elif len(parts) >= 3 and parts[-3] == "projects":  # ~/.claude/projects/<slug>/<id>.jsonl
        slug = parts[-2]
    if not slug:
        return ProjectIdentity("", "unknown", "", "the transcript names no workspace folder")
    cands = decode_slug(slug, listdir=listdir)
    if len(cands) == 1:
        return identify(cands[0], aliases)
    why = (
        "matches no folder on this machine" if not cands else f"could be {len(cands)} folders ({', '.join(cands[:3])})"
    )
    return ProjectIdentity(
        "",
        "unknown",
        "",
        f"project folder slug {slug!r} {why}; left global (set `projects:` in config.yaml or pass --project)",
    )
