"""``agentmem setup``: everything a new machine needs, in one idempotent run. The steps (vault,
config, hooks, mcp, rules, daemon, check) and what each does are in docs/setup.md; each is
reported as a ``Change`` (create / update / unchanged / skip / fail / ok). With ``dry_run``
nothing is written and every change is described (the merged hook commands, the service
definition). A second run changes nothing: the check reuses its conversation ID, so the hook
answers with the same idle row instead of adding one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentmem_vault.vault import Vault, user_config_dir
from agentmem_vault.config import resolve_vault
from agentmem_vault.errors import AgentmemError, Refused, UsageError, VaultNotFound
from agentmem_vault.integrations import hook_install, user_service
from agentmem_vault.integrations.file_edit import apply_edit, plan_text_edit, read_for_edit
from agentmem_vault.integrations.quoting import check_safe
from agentmem_vault.model import yamlload

AGENT_DIRS = {agent: folder for agent, (folder, _) in hook_install.FILES.items()}  # where each keeps its config
AGENT_NAMES = {"cursor": "Cursor", "claude": "Claude Code", "codex": "Codex"}
CHECK_CONVERSATION = "agentmem-setup-check"


@dataclass
class SetupOptions:
    vault: Path
    agents: tuple[str, ...] | None = None  # None: every agent found under home
    project: Path | None = None  # install the agent rules here
    agents_md: bool = False
    claude_md: bool = False
    hooks: bool = True
    mcp: bool = True
    daemon: bool = True
    check: bool = True
    home: Path | None = None


@dataclass
class Change:
    step: str
    target: str
    action: str  # create | update | unchanged | skip | fail | ok
    detail: str = ""
    preview: str = ""  # dry run: the content that would be written


@dataclass
class SetupResult:
    vault: str
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    session_id: str | None = None

    @property
    def ok(self) -> bool:
        return not any(c.action == "fail" for c in self.changes)

    @property
    def changed(self) -> bool:
        return any(c.action in ("create", "update") for c in self.changes)

    def to_dict(self) -> dict:
        return {
            "vault": self.vault,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "changed": self.changed,
            "session_id": self.session_id,
            "changes": [asdict(c) for c in self.changes],
        }


def home_dir(home: Path | None = None) -> Path:
    return home or Path.home()


def detect_agents(home: Path | None = None) -> list[str]:
    """The agents whose config folder exists in the home folder."""
    return [a for a, d in AGENT_DIRS.items() if (home_dir(home) / d).is_dir()]


def default_vault(home: Path | None = None) -> Path:
    """The vault already configured (or the one the current folder is in), else ~/AgentMemory."""
    try:
        return resolve_vault(None).root
    except (VaultNotFound, AgentmemError):
        return home_dir(home) / "AgentMemory"


# -- steps ----------------------------------------------------------------------------------------


def _vault_step(vault: Vault, dry_run: bool) -> Change:
    from agentmem_vault.ops.board import init_vault

    if vault.root.exists() and not vault.root.is_dir():
        raise UsageError(f"{vault.root} is a file, not a folder; choose another vault folder with --vault")
    if vault.index_path.is_file():
        if not dry_run:
            try:
                init_vault(vault)  # fills in anything missing; validates the table and config
            except AgentmemError as exc:
                see = f"see `agentmem doctor --vault {shlex.quote(str(vault.root))}`"
                return Change("vault", str(vault.root), "fail", f"{exc.message}; {see}")
        return Change("vault", str(vault.root), "unchanged", "existing vault adopted")
    what = "new folder" if not vault.root.exists() else "memory/ added to the existing folder"
    if not dry_run:
        init_vault(vault)
    return Change("vault", str(vault.root), "create", what)


def _config_text(old: str | None, vault_root: Path) -> str:
    """The user config with ``vault:`` set; other lines (and comments) kept. The value is written
    as a JSON string, which is a valid YAML double-quoted scalar for any path (CJK, backslashes)
    that holds no line break (refused: YAML folds U+0085 and U+2028 even there)."""
    line = "vault: " + json.dumps(check_safe(str(vault_root), "the user config"), ensure_ascii=False)
    if not old:
        return f"# agentmem user settings (written by `agentmem setup`)\n{line}\n"
    if re.search(r"(?m)^vault\s*:.*$", old):
        return re.sub(r"(?m)^vault\s*:.*$", lambda _: line, old, count=1)
    return old + ("" if old.endswith("\n") else "\n") + line + "\n"


def _config_step(vault: Vault, dry_run: bool) -> Change:
    path = user_config_dir() / "config.yaml"
    raw, old = read_for_edit(path, UsageError)
    new = _config_text(old, vault.root)
    env = os.environ.get("AGENTMEM_VAULT")
    note = ""
    if env and Path(env).expanduser().absolute() != vault.root:
        note = f"; AGENTMEM_VAULT={env} still overrides it in shells that set it"
    # read back by the one YAML loader, as config.py will read it
    edit = plan_text_edit(
        path, raw, new, what="YAML", check=lambda b: yamlload.load(b.decode("utf-8-sig"), ValueError, "it")
    )
    if not dry_run:
        apply_edit(edit)
    return Change("config", str(path), edit.action, f"vault: {vault.root}{note}", preview=new if edit.changed else "")


def _codex_toml_step(home: Path, dry_run: bool) -> Change:
    """Codex runs hooks only with ``[features] codex_hooks = true`` in ~/.codex/config.toml."""
    import tomllib

    path = home / ".codex" / "config.toml"

    def change(action: str, detail: str) -> Change:
        return Change("hooks", str(path), action, detail)

    by_hand = "add `[features]` / `codex_hooks = true` by hand"
    try:
        raw, text = read_for_edit(path)
        old = text or ""
        features = tomllib.loads(old).get("features", {}) if old else {}
    except Refused:
        return change("fail", f"not UTF-8 text; {by_hand}")
    except tomllib.TOMLDecodeError as exc:
        return change("fail", f"not valid TOML ({exc}); {by_hand}")
    if isinstance(features, dict) and features.get("codex_hooks") is True:
        return change("unchanged", "codex_hooks = true")
    if isinstance(features, dict) and "codex_hooks" in features:
        return change("skip", "codex_hooks is set to false there; set it to true to let Codex run hooks")
    if re.search(r"(?m)^\[features\]\s*$", old):
        new = re.sub(r"(?m)^\[features\]\s*$", "[features]\ncodex_hooks = true", old, count=1)
    else:
        sep = "\n" if old.endswith("\n") else "\n\n"
        new = (old + sep if old else "") + "[features]\ncodex_hooks = true\n"
    try:  # the edit is checked, not asserted: python -O would skip an assert
        ok = tomllib.loads(new)["features"]["codex_hooks"] is True
    except (tomllib.TOMLDecodeError, KeyError, TypeError):
        ok = False
    if not ok:
        return change("fail", f"could not add codex_hooks safely; {by_hand}")
    edit = plan_text_edit(path, raw, new, what="TOML", check=lambda b: tomllib.loads(b.decode("utf-8-sig")))
    if not dry_run:
        apply_edit(edit)
    return change(edit.action, "codex_hooks = true: Codex runs hooks only then")


def _hook_steps(vault: Vault, agents: list[str], home: Path, dry_run: bool) -> list[Change]:
    out: list[Change] = []
    for agent in agents:
        try:
            plan = hook_install.plan_install(agent, vault=str(vault.root), home=home)
        except AgentmemError as exc:
            out.append(Change("hooks", AGENT_NAMES[agent], "fail", exc.message))
            continue
        detail = "; ".join(f"{e['event']}: {e['action']}" for e in plan.actions)
        preview = "\n".join(f"{e['event']}: {e['command']}" for e in plan.actions)
        if not dry_run and plan.edit.changed:
            res = hook_install.apply_install(plan)
            if res.get("backup"):
                detail += f"; previous file backed up to {res['backup']}"
        out.append(
            Change("hooks", str(plan.path), plan.edit.action, f"{AGENT_NAMES[agent]}: {detail}", preview=preview)
        )
        if agent == "codex":
            out.append(_codex_toml_step(home, dry_run))
    return out


def _mcp_steps(vault: Vault, agents: list[str], home: Path, dry_run: bool) -> list[Change]:
    """The MCP server in each found agent's MCP config (integrations/mcp_install.py), when the MCP
    extra (the ``mcp`` package) is installed; otherwise one note, never a failure."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        why = "the MCP extra is not installed (pip install 'agentmem-vault[mcp]', then run setup again)"
        return [Change("mcp", "-", "skip", why)]
    if not agents:
        return [Change("mcp", "-", "skip", "no agent found to configure")]
    from agentmem_vault.integrations import mcp_install

    out: list[Change] = []
    for agent in agents:
        try:
            plan = mcp_install.plan_mcp_install(agent, vault=vault.root, home=home)
            if not dry_run and plan.edit.changed:
                mcp_install.apply_mcp_install(plan)
        except AgentmemError as exc:
            out.append(
                Change("mcp", AGENT_NAMES[agent], "fail", f"{exc.message}; or run `agentmem install-mcp {agent}` later")
            )
            continue
        detail = f"{AGENT_NAMES[agent]}: server '{mcp_install.SERVER_NAME}'"
        preview = f"{plan.entry['command']} {' '.join(plan.entry['args'])}"
        out.append(Change("mcp", str(plan.path), plan.edit.action, detail, preview=preview))
    return out


def _rules_step(opts: SetupOptions, dry_run: bool) -> list[Change]:
    from agentmem_vault.integrations.rules import install_rules

    assert opts.project is not None
    res = install_rules(opts.project, agents_md=opts.agents_md, claude_md=opts.claude_md, dry_run=dry_run)
    words = {"installed": "create", "would install": "create", "updated": "update", "would update": "update"}
    return [
        Change(
            "rules", f["path"], words.get(f["status"], "unchanged"), f"backup: {f['backup']}" if f.get("backup") else ""
        )
        for f in res["files"]
    ]


def _daemon_step(vault: Vault, dry_run: bool, runner: user_service.Runner, home: Path) -> Change:
    res = user_service.install(vault, dry_run=dry_run, runner=runner, home=home)
    action = res["action"]
    detail = f"{res['kind']} {res['name']}"
    if not dry_run and res["started"]:
        detail += ": enabled and started (starts at every login, restarts after a crash)"
    if res.get("note"):
        detail += f"; note: {res['note']}"
    return Change("daemon", res["file"], action, detail, preview=res["definition"] if dry_run else "")


def hook_check(vault: Vault, command: str | None, home: Path) -> tuple[str | None, str]:
    """Run a sessionStart the way an agent would: the installed command (through the shell, as the
    agent runs it), from the home folder, without AGENTMEM_* in the environment. Returns
    (Session ID or None, what happened)."""
    payload = {
        "conversation_id": CHECK_CONVERSATION,
        "workspace_roots": [],
        "hook_event_name": "sessionStart",
        "is_background_agent": False,
    }
    # The cache and config folders stay: they say where this user's locks and settings are.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENTMEM_") or k in ("AGENTMEM_CACHE_DIR", "AGENTMEM_CONFIG_DIR")
    }
    if command is None or sys.platform == "win32":
        argv = hook_install.agentmem_argv() + ["hook", "cursor-session-start", "--vault", str(vault.root)]
        run_args: dict = {"args": argv}
        shown = shlex.join(argv)
    else:
        run_args = {"args": command, "shell": True}
        shown = command
    try:
        proc = subprocess.run(
            **run_args,
            input=json.dumps(payload).encode(),
            capture_output=True,
            cwd=str(home),
            env=env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"could not run `{shown}`: {exc}"
    try:
        answer = json.loads(proc.stdout.decode("utf-8", "replace") or "{}")
    except ValueError:
        return None, f"`{shown}` printed no JSON: {proc.stdout[:200]!r} {proc.stderr[-300:]!r}"
    context = answer.get("additional_context") or ""
    m = re.search(r"Your Memory Session ID is: (\S+)", context)
    if not m:
        why = context or proc.stderr.decode("utf-8", "replace")[-300:] or "empty answer"
        return None, f"no Session ID from `{shown}`: {why}"
    return m.group(1), shown


def _check_steps(vault: Vault, home: Path, hook_command: str | None) -> tuple[list[Change], str | None]:
    from agentmem_vault.ops.board import load_index
    from agentmem_vault.ops.doctor import diagnose

    errors = diagnose(vault).unresolved_errors()
    detail = f"{len(errors)} error(s); run `agentmem doctor` for details" if errors else "memory/ is healthy"
    out = [Change("check", "doctor", "fail" if errors else "ok", detail)]
    sid, how = hook_check(vault, hook_command, home)
    row = load_index(vault).find(sid) if sid is not None else None
    if sid is None or row is None:
        how = how if sid is None else f"the hook answered {sid} but memory/index.md has no such row"
        return [*out, Change("check", "sessionStart", "fail", how)], None
    how = f"the hook registered {sid} ({row.status}) on memory/index.md; a test chat, `agentmem organize` clears it"
    return [*out, Change("check", "sessionStart", "ok", how)], sid


def run_setup(
    opts: SetupOptions, *, dry_run: bool = False, runner: user_service.Runner = user_service.run_command
) -> SetupResult:
    home = home_dir(opts.home)
    vault = Vault(Path(opts.vault).expanduser().absolute())
    result = SetupResult(str(vault.root), dry_run)
    ch = result.changes
    ch.append(_vault_step(vault, dry_run))
    ch.append(_config_step(vault, dry_run))
    agents = list(opts.agents) if opts.agents is not None else detect_agents(home)
    if not opts.hooks:
        ch.append(Change("hooks", "-", "skip", "--no-hooks"))
    elif not agents:
        why = "no ~/.cursor, ~/.claude or ~/.codex found; after installing an agent run `agentmem setup` again"
        ch.append(Change("hooks", "-", "skip", why + " (or `agentmem install-hook cursor`)"))
    else:
        ch.extend(_hook_steps(vault, agents, home, dry_run))
    if opts.mcp:
        ch.extend(_mcp_steps(vault, agents if opts.hooks else [], home, dry_run))
    if opts.project is not None:
        ch.extend(_rules_step(opts, dry_run))
    if opts.daemon:
        ch.append(_daemon_step(vault, dry_run, runner, home))
    if opts.check and not dry_run:
        command = None
        if "cursor" in agents and opts.hooks:
            command = hook_install.hook_command("cursor", "cursor-session-start", vault=str(vault.root))
        checks, result.session_id = _check_steps(vault, home, command)
        ch.extend(checks)
    return result


def render(result: SetupResult, *, footer: bool = True) -> str:
    """The human report: one line per change, what would be written (dry run) indented under it."""
    verbs = {"unchanged": "ok (unchanged)", "skip": "skipped", "fail": "FAILED"}  # the others say themselves
    if result.dry_run:
        verbs.update(create="would create", update="would update")
    lines = [f"agentmem setup{' (dry run, nothing written)' if result.dry_run else ''}: vault {result.vault}"]
    for c in result.changes:
        lines.append(
            f"  {c.step:<7} {verbs.get(c.action, c.action):<15} {c.target}" + (f"  ({c.detail})" if c.detail else "")
        )
        if result.dry_run and c.preview and c.action in ("create", "update"):
            lines += ["            | " + ln for ln in c.preview.rstrip().splitlines()]
    if footer and result.dry_run:
        lines.append("Run without --dry-run to apply.")
    elif footer and result.ok:
        lines.append('Ready: open a new chat in your agent; it starts with "Your Memory Session ID is: …".')
    elif footer:
        lines.append("Some steps failed (marked FAILED above); fix what they say and run `agentmem setup` again.")
    return "\n".join(lines)
