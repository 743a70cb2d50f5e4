"""``agentmem daemon install|uninstall``: the daemon as a per-user service that starts at login and
comes back after a crash: a systemd user unit, a launchd agent, or a Task Scheduler task (a
Startup-folder entry when Task Scheduler refuses); files and rules in docs/setup.md, "The daemon
as a service". ``<key>`` is the vault's key, so two vaults get two services.

The definitions are pure functions of (vault, command line); everything that runs a service
manager goes through an injected ``runner`` so tests never register a real service. A missing or
unreachable service manager (a container, CI, no login session) is not an error: the file is
written and the result says how to start it.
"""

from __future__ import annotations

import os
import plistlib
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from agentmem_vault.command import agentmem_argv
from agentmem_vault.vault import Vault, user_cache_dir, user_config_dir
from agentmem_vault.errors import AgentmemError, Refused, UnsafeValue
from agentmem_vault.integrations.file_edit import Check, FileEdit, apply_edit, plan_edit, read_current
from agentmem_vault.integrations.rules import template_text
from agentmem_vault.integrations import quoting

ENABLED_WORDS = {"enabled", "enabled-runtime", "disabled", "static", "linked", "masked", "indirect"}
ACTIVE_WORDS = {"active", "inactive", "failed", "activating", "deactivating", "reloading"}

# (exit status, combined output) of one service-manager command.
Runner = Callable[[list[str]], tuple[int, str]]


def run_command(argv: list[str]) -> tuple[int, str]:
    """The real runner: never raises, never waits long (a hung service manager must not hang setup)."""
    try:
        proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found"
    except (OSError, subprocess.SubprocessError) as exc:
        return 126, f"{argv[0]}: {exc}"
    return proc.returncode, " ".join(((proc.stdout or "") + " " + (proc.stderr or "")).split())


def platform_kind(platform: str = sys.platform) -> str:
    return {"win32": "schtasks", "darwin": "launchd"}.get(platform, "systemd")


@dataclass
class ServiceDef:
    kind: str  # systemd | launchd | schtasks | startup
    name: str  # unit name, launchd label or task name
    path: Path  # the definition file written on install
    text: str  # the definition as text (what --dry-run prints)
    check: Check | None = None  # the format's parser, run on the bytes before and after writing
    start: list[list[str]] = field(default_factory=list)  # run after writing the file
    stop: list[list[str]] = field(default_factory=list)  # run before removing it
    hint: str = ""  # how to start it by hand when the service manager could not be reached
    encoding: str = "utf-8"  # Task Scheduler reads its XML in UTF-16

    @property
    def content(self) -> bytes:
        return self.text.encode(self.encoding)


def daemon_argv(vault: Vault, argv: list[str] | None = None) -> list[str]:
    return list(argv or agentmem_argv()) + ["--vault", str(vault.root), "daemon", "run"]


# -- the three definitions (pure) -----------------------------------------------------------------


def systemd_unit(vault: Vault, argv: list[str]) -> str:
    description = quoting.systemd_text(f"agentmem daemon for {vault.root}")
    exec_start = " ".join(quoting.systemd_word(a) for a in argv)
    return template_text("daemon/systemd.service").format(description=description, exec_start=exec_start)


def launchd_plist(vault: Vault, argv: list[str], label: str, log_path: Path) -> bytes:
    # plistlib escapes XML's own characters; what XML cannot hold at all is refused.
    for word in (*argv, str(log_path)):
        quoting.check_safe(word, "a launchd plist")
    return plistlib.dumps(
        {
            "Label": label,
            "ProgramArguments": argv,
            "RunAtLoad": True,
            # Restart after a crash, but not after `agentmem daemon stop` (a clean exit).
            "KeepAlive": {"SuccessfulExit": False},
            "ThrottleInterval": 10,
            "ProcessType": "Background",
            "StandardOutPath": str(log_path),
            "StandardErrorPath": str(log_path),
            "EnvironmentVariables": {"PYTHONIOENCODING": "utf-8"},
        }
    )


def windows_command(argv: list[str]) -> tuple[str, list[str]]:
    """(program, arguments) for the task: pythonw.exe next to the interpreter when there is one,
    so no console window opens at logon."""
    pythonw = Path(sys.executable).with_name("pythonw.exe")
    if sys.platform == "win32" and pythonw.is_file() and argv[0].lower().endswith("agentmem.exe"):
        argv = [str(pythonw), "-m", "agentmem_vault", *argv[1:]]
    return argv[0], argv[1:]


def task_xml(vault: Vault, argv: list[str], user: str, workdir: Path) -> str:
    program, args = windows_command(argv)
    arguments = quoting.task_arguments(args)
    quoting.task_value(program)
    quoting.task_value(str(workdir))
    for word in (user, str(vault.root)):
        quoting.check_safe(word, "a Task Scheduler task")

    values = {
        "description": f"agentmem daemon for {vault.root} (agentmem daemon uninstall removes it)",
        "user": user,
        "program": program,
        "arguments": arguments,
        "workdir": str(workdir),
    }
    return template_text("daemon/task.xml").format(**{k: escape(v, {'"': "&quot;"}) for k, v in values.items()})


def startup_cmd(argv: list[str]) -> str:
    """A batch file for the Startup folder: every word double-quoted with ``%`` doubled (cmd_word);
    delayed expansion off so that a ``!`` in a path stays a ``!``."""
    program, args = windows_command(argv)
    line = " ".join(quoting.cmd_word(a) for a in [program, *args])
    return template_text("daemon/startup.cmd").format(line=line).replace("\n", "\r\n")


def service_definition(
    vault: Vault,
    *,
    platform: str = sys.platform,
    argv: list[str] | None = None,
    home: Path | None = None,
    kind: str | None = None,
) -> ServiceDef:
    """What ``daemon install`` writes for this vault on this platform (pure apart from reading the
    environment for folders and the user name)."""
    cmd = daemon_argv(vault, argv)
    key = vault.key[:8]  # in every name: two vaults get two services
    home = home or Path.home()
    kind = kind or platform_kind(platform)
    if kind == "systemd":
        name = f"agentmem-daemon-{key}.service"
        base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        return ServiceDef(
            kind,
            name,
            base / "systemd" / "user" / name,
            systemd_unit(vault, cmd),
            start=[["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", name]],
            stop=[["systemctl", "--user", "disable", "--now", name]],
            hint=f"systemctl --user daemon-reload && systemctl --user enable --now {name}",
        )
    if kind == "launchd":
        label = f"com.agentmem.daemon.{key}"
        uid = os.getuid() if hasattr(os, "getuid") else 0
        log = home / "Library" / "Logs" / "agentmem" / f"daemon-{key}.log"
        path = home / "Library" / "LaunchAgents" / f"{label}.plist"
        return ServiceDef(
            kind,
            label,
            path,
            launchd_plist(vault, cmd, label, log).decode("utf-8"),
            plistlib.loads,
            start=[["launchctl", "bootstrap", f"gui/{uid}", str(path)]],
            stop=[["launchctl", "bootout", f"gui/{uid}/{label}"]],
            hint=f"launchctl bootstrap gui/{uid} {path}",
        )
    if kind == "startup":
        appdata = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
        path = appdata / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Startup" / f"agentmem-daemon-{key}.cmd"
        return ServiceDef(kind, path.name, path, startup_cmd(cmd), hint=f"log off and on, or run {path}")
    name = f"\\agentmem\\daemon-{key}"
    user = os.environ.get("USERNAME") or os.environ.get("USER") or "user"
    if os.environ.get("USERDOMAIN"):
        user = f"{os.environ['USERDOMAIN']}\\{user}"
    path = user_config_dir() / "services" / f"daemon-{key}.xml"
    return ServiceDef(
        "schtasks",
        name,
        path,
        task_xml(vault, cmd, user, user_cache_dir()),
        lambda b: ElementTree.fromstring(b.decode("utf-16").split("?>", 1)[1]),
        start=[["schtasks", "/Create", "/TN", name, "/XML", str(path), "/F"], ["schtasks", "/Run", "/TN", name]],
        stop=[["schtasks", "/End", "/TN", name], ["schtasks", "/Delete", "/TN", name, "/F"]],
        hint=f'schtasks /Create /TN "{name}" /XML "{path}" /F',
        encoding="utf-16",
    )


# -- install / uninstall / status -----------------------------------------------------------------


def _edit(sd: ServiceDef) -> FileEdit:
    # The definition is entirely ours: no backup (a copy in the Startup folder or LaunchAgents
    # would itself be started at logon).
    return plan_edit(sd.path, read_current(sd.path), sd.content, what=sd.kind, check=sd.check, backup=False)


def _write(edit: FileEdit) -> None:
    try:
        apply_edit(edit)
    except OSError as exc:
        raise Refused(f"cannot write {edit.path} ({exc.strerror or exc}); check that folder's permissions") from exc


def _described(sd: ServiceDef, **then: object) -> dict:  # ``then``: the keys between file and definition
    return {"kind": sd.kind, "name": sd.name, "file": str(sd.path), **then, "definition": sd.text}


def _run_all(cmds: list[list[str]], runner: Runner) -> tuple[bool, list[dict]]:
    ran = []
    for argv in cmds:
        code, out = runner(argv)
        ran.append({"command": argv, "exit": code, "output": out[:500]})
        if code != 0:
            return False, ran
    return True, ran


def install(
    vault: Vault,
    *,
    dry_run: bool = False,
    runner: Runner = run_command,
    platform: str = sys.platform,
    argv: list[str] | None = None,
    home: Path | None = None,
) -> dict:
    """Write the service definition and register it with the service manager; idempotent (an
    unchanged definition is not rewritten, only made sure to be enabled)."""
    if not dry_run and not vault.index_path.is_file():
        raise AgentmemError(
            f"{vault.root} has no memory/index.md; run `agentmem init --vault {vault.root}` first", code="not_a_vault"
        )
    sd = service_definition(vault, platform=platform, argv=argv, home=home)
    edit = _edit(sd)
    action = edit.action
    out: dict = {**_described(sd, action=action, dry_run=dry_run), "commands": [], "started": False, "note": None}
    if dry_run:
        out["commands"] = [{"command": c} for c in sd.start]
        return out
    _write(edit)
    start = list(sd.start)
    if sd.kind == "systemd" and action == "update":
        start.append(["systemctl", "--user", "restart", sd.name])  # pick up the new definition
    if sd.kind == "launchd" and action != "create":
        runner(["launchctl", "bootout", sd.start[0][2] + "/" + sd.name])  # reload; fails harmlessly when not loaded
    ok, ran = _run_all(start, runner)
    out["commands"] = ran
    out["started"] = ok
    if not ok and sd.kind == "schtasks":
        # Task Scheduler refused (policy, no permission): a Startup-folder entry still starts it at logon.
        fb = service_definition(vault, platform=platform, argv=argv, home=home, kind="startup")
        _write(_edit(fb))
        sd.path.unlink(missing_ok=True)  # no task was registered: status and uninstall see the Startup entry
        out.update(
            _described(fb),
            note=f"Task Scheduler refused ({ran[-1]['output'] or ran[-1]['exit']}); added a Startup-folder "
            "entry instead: it starts the daemon at logon but does not restart it after a crash",
        )
        return out
    if not ok:
        last = ran[-1]
        out["note"] = (
            f"the service file is written, but `{' '.join(last['command'])}` failed "
            f"({last['output'] or 'exit ' + str(last['exit'])}); start it from your login session with: {sd.hint}"
        )
    return out


def _installed(vault: Vault, platform: str, home: Path | None) -> ServiceDef | None:
    kinds = ["schtasks", "startup"] if platform_kind(platform) == "schtasks" else [platform_kind(platform)]
    for kind in kinds:
        try:
            sd = service_definition(vault, platform=platform, home=home, kind=kind, argv=["agentmem"])
        except UnsafeValue:
            return None  # no definition can name this vault, so none was installed for it
        if sd.path.exists():
            return sd
    return None


def uninstall(
    vault: Vault,
    *,
    dry_run: bool = False,
    runner: Runner = run_command,
    platform: str = sys.platform,
    home: Path | None = None,
) -> dict:
    sd = _installed(vault, platform, home)
    if sd is None:
        return {"removed": False, "dry_run": dry_run, "message": "no daemon service is installed for this vault"}
    out: dict = {
        "removed": not dry_run,
        "dry_run": dry_run,
        "kind": sd.kind,
        "name": sd.name,
        "file": str(sd.path),
        "commands": [{"command": c} for c in sd.stop],
    }
    if dry_run:
        return out
    # Stopping may fail (already stopped, no session bus): the file goes anyway, so it cannot come back.
    out["commands"] = [
        {"command": c, "exit": code, "output": text[:500]} for c in sd.stop for code, text in [runner(c)]
    ]
    try:
        sd.path.unlink(missing_ok=True)
    except OSError as exc:
        raise Refused(f"cannot remove {sd.path} ({exc.strerror or exc}); remove it by hand") from exc
    if sd.kind == "systemd":
        runner(["systemctl", "--user", "daemon-reload"])
    return out


def service_status(
    vault: Vault, *, runner: Runner = run_command, platform: str = sys.platform, home: Path | None = None
) -> dict:
    """Whether a service is installed for this vault and what the service manager says about it."""
    sd = _installed(vault, platform, home)
    if sd is None:
        return {"installed": False, "kind": platform_kind(platform), "state": "not installed"}
    out: dict = {"installed": True, "kind": sd.kind, "name": sd.name, "file": str(sd.path)}
    if sd.kind == "systemd":
        enabled = (runner(["systemctl", "--user", "is-enabled", sd.name])[1].split() or [""])[0]
        active = (runner(["systemctl", "--user", "is-active", sd.name])[1].split() or [""])[0]
        if enabled in ENABLED_WORDS and active in ACTIVE_WORDS:
            out["state"] = f"{enabled}, {active}"
        else:
            out["state"] = "state unknown: no user service manager reachable"
    elif sd.kind == "launchd":
        code, text = runner(["launchctl", "print", sd.stop[0][2]])
        m = re.search(r"\bstate = (\S+)", text)
        out["state"] = ("loaded, " + m.group(1)) if code == 0 and m else ("loaded" if code == 0 else "not loaded")
    elif sd.kind == "schtasks":
        code, text = runner(["schtasks", "/Query", "/TN", sd.name, "/FO", "LIST"])
        state = text.split("Status:", 1)[1].split()[0] if "Status:" in text else "registered"
        out["state"] = state if code == 0 else "not registered"
    else:
        out["state"] = "starts at logon (Startup folder)"
    return out
