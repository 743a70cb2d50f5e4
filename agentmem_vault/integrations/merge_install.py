"""``agentmem install-merge-driver``: register our git merge drivers for a vault kept in git; what
goes into ``.gitattributes`` (committed) and the repository's own git config (per clone):
docs/sync.md, "git". Plan first, apply second; running it twice changes nothing; files are backed
up before a change.
"""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agentmem_vault.vault import Vault
from agentmem_vault.command import agentmem_argv
from agentmem_vault.config import machine_id, set_user_setting
from agentmem_vault.errors import AgentmemError, Refused, UsageError
from agentmem_vault.integrations.file_edit import FileEdit, apply_edit, plan_edit, plan_text_edit, read_for_edit
from agentmem_vault.integrations.quoting import git_driver_command, gitattributes_pattern
from agentmem_vault.integrations.rules import merge_block
from agentmem_vault.backups import backup_file
from agentmem_vault.fs import read_text

BEGIN = "# >>> agentmem merge drivers (agentmem install-merge-driver) >>>"
END = "# <<< agentmem merge drivers <<<"
DRIVERS = {
    "index": "agentmem: the board, merged row by row by Session ID",
    "snapshot": "agentmem: session snapshots, merged section by section",
    "note": "agentmem: long-term notes, merged property by property",
}


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, encoding="utf-8", timeout=60, check=False
        )
    except FileNotFoundError as exc:
        raise AgentmemError("git is not installed (or not on PATH); install git first", code="git_missing") from exc
    except subprocess.TimeoutExpired as exc:
        raise AgentmemError(f"git {' '.join(args)} did not answer within 60 s", code="git_failed") from exc
    if check and proc.returncode != 0:
        raise AgentmemError(f"git {' '.join(args)} failed: {proc.stderr.strip()}", code="git_failed")
    return proc


def repo_top(vault: Vault) -> Path | None:
    """The top folder of the git work tree holding the vault, or None when it is not in one."""
    try:
        proc = _git(vault.root, "rev-parse", "--show-toplevel", check=False)
    except AgentmemError:
        return None
    out = proc.stdout.strip()
    return Path(out) if proc.returncode == 0 and out else None


def attributes_block(memory_rel: str) -> str:
    """Our lines of ``.gitattributes``: the folder's own name is text (its ``*`` or ``[`` match
    only themselves), the part after it is our pattern."""
    m = memory_rel.rstrip("/")

    def pattern(glob: str) -> str:
        return gitattributes_pattern(m, glob)

    lines = [
        f"{pattern('/index.md')} merge=agentmem-index",
        f"{pattern('/sessions/*.md')} merge=agentmem-snapshot",
        f"{pattern('/archive/*/session.md')} merge=agentmem-snapshot",
        f"{pattern('/long-term/*.md')} merge=agentmem-note",
        # Append-only logs (journal, conversation pairs, the issued-IDs ledger): keep both sides' lines.
        f"{pattern('/.agentmem/*.jsonl')} merge=union",
        f"{pattern('/.agentmem/issued-ids.txt')} merge=union",
    ]
    return "\n".join(lines) + "\n"


# Inside memory/.agentmem/: what is machine-local (caches, the recall index, daemon pid and log,
# locks' leftovers, backups) stays out of git; settings, prompts and the append-only logs are shared.
STATE_GITIGNORE = """# agentmem: machine-local tool state stays out of git (agentmem install-merge-driver)
*
!.gitignore
!config.yaml
!*.jsonl
!issued-ids.txt
!prompts/
!prompts/**
"""


def driver_command(kind: str, argv: list[str] | None = None) -> str:
    # %P is quoted by git itself; %O %A %B are temporary file names without spaces.
    return git_driver_command([*(argv or agentmem_argv()), "merge-driver", kind]) + " %O %A %B %P"


def default_machine_id() -> str:
    host = socket.gethostname().split(".")[0].lower()
    slug = "".join(c for c in host if c.isascii() and c.isalnum())[:12]
    return slug or "m1"


@dataclass
class MergeDriverPlan:
    repo: Path
    attributes: FileEdit
    config: dict[str, str]  # git config key -> value that must be set
    config_before: dict[str, str]
    machine_id_before: str
    machine_id_after: str
    notes: list[str]
    state_ignore: FileEdit | None  # memory/.agentmem/.gitignore, written only when absent

    @property
    def config_changes(self) -> dict[str, str]:
        return {k: v for k, v in self.config.items() if self.config_before.get(k) != v}

    def to_dict(self) -> dict:
        return {
            "repository": str(self.repo),
            "gitattributes": str(self.attributes.path),
            "gitattributes_changed": self.attributes.changed,
            "git_config": self.config,
            "git_config_changed": sorted(self.config_changes),
            "machine_id": self.machine_id_after,
            "machine_id_changed": self.machine_id_before != self.machine_id_after,
            "state_gitignore": str(self.state_ignore.path) if self.state_ignore else None,
            "notes": list(self.notes),
        }


def plan_merge_driver(vault: Vault, *, argv: list[str] | None = None, machine: str | None = None) -> MergeDriverPlan:
    top = repo_top(vault)
    if top is None:
        raise Refused(
            f"{vault.root} is not inside a git repository; the merge drivers are for vaults synced with git "
            "(run `git init` there first, or use a cloud drive: see the README's 'Several machines')"
        )
    try:
        rel = vault.memory.resolve().relative_to(top.resolve()).as_posix()
    except ValueError as exc:
        raise Refused(f"memory/ of {vault.root} is outside the repository at {top}") from exc
    attr_path = top / ".gitattributes"
    if attr_path.is_symlink():
        raise Refused(f"{attr_path} is a symbolic link; refusing to change it (edit it by hand: see docs/sync.md)")
    raw, before = read_for_edit(attr_path)
    after = merge_block(before, attributes_block(rel), BEGIN, END)
    attributes = plan_text_edit(attr_path, raw, after)
    config: dict[str, str] = {}
    for kind, name in DRIVERS.items():
        config[f"merge.agentmem-{kind}.name"] = name
        config[f"merge.agentmem-{kind}.driver"] = driver_command(kind, argv)
    current: dict[str, str] = {}
    for key in config:
        proc = _git(top, "config", "--local", "--get", key, check=False)
        if proc.returncode == 0:
            current[key] = proc.stdout.rstrip("\n")
    mid_before = machine_id()
    if machine is None:
        mid_after = mid_before or default_machine_id()
    else:
        mid_after = machine.strip().lower()
        if mid_after and not (mid_after.isascii() and mid_after.isalnum() and len(mid_after) <= 12):
            raise UsageError(f"--machine-id {machine!r}: use 1-12 letters a-z or digits (or '' for none)")
    ignore_path = vault.state_dir / ".gitignore"
    missing = not ignore_path.is_symlink() and read_text(ignore_path) is None
    notes = [
        "every clone needs this once (git config is not committed): run `agentmem install-merge-driver` on each machine",
    ]
    if mid_after and mid_after != mid_before:
        notes.append(
            f"new Session IDs made on this machine end in -{mid_after} (e.g. 2026-06-01-0930-cursor-main-agent-{mid_after}) "
            "so that two machines never give out the same ID; `--machine-id ''` turns it off"
        )
    ignore = plan_edit(ignore_path, None, STATE_GITIGNORE.encode()) if missing else None
    return MergeDriverPlan(top, attributes, config, current, mid_before, mid_after, notes, ignore)


def apply_merge_driver(plan: MergeDriverPlan) -> dict:
    saved = [apply_edit(plan.attributes)]
    changes = plan.config_changes
    if changes:
        git_config = plan.repo / _git(plan.repo, "rev-parse", "--git-path", "config").stdout.strip()
        saved.append(backup_file(git_config))
        for key, value in changes.items():
            _git(plan.repo, "config", "--local", key, value)
    if plan.state_ignore is not None:
        apply_edit(plan.state_ignore)
    if plan.machine_id_after != plan.machine_id_before:
        set_user_setting("machine_id", plan.machine_id_after)
    return {**plan.to_dict(), "backups": [str(p) for p in saved if p is not None]}


def install_merge_driver(
    vault: Vault, *, dry_run: bool = False, argv: list[str] | None = None, machine: str | None = None
) -> dict:
    plan = plan_merge_driver(vault, argv=argv, machine=machine)
    if dry_run:
        return {**plan.to_dict(), "dry_run": True, "gitattributes_text": plan.attributes.after.decode("utf-8")}
    return apply_merge_driver(plan)


def missing_driver(vault: Vault) -> str | None:
    """A one-line problem when the vault is in a git repository without our drivers, else None
    (for ``doctor``)."""
    top = repo_top(vault)
    if top is None:
        return None
    attrs = read_text(top / ".gitattributes") or ""
    proc = _git(top, "config", "--local", "--get", "merge.agentmem-index.driver", check=False)
    if BEGIN in attrs and proc.returncode == 0 and proc.stdout.strip():
        return None
    return (
        f"the vault is in the git repository {top} but the agentmem merge drivers are not installed there: "
        "a pull can conflict inside the board; run `agentmem install-merge-driver`"
    )
