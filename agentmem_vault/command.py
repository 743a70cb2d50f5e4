"""The ``agentmem`` command as the chat must type it (docs/setup.md): the absolute path of the
installed executable, quoted for the platform's shell, because a venv install is not on the
chat's PATH. Used by the text given to the chat (hook answers, the agent rule, MCP instructions)
and by the hook installers. Light on purpose: the sessionStart hook calls it (no shutil, no
subprocess, no shlex: docs/performance.md)."""

from __future__ import annotations

import os
import sys

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
# PowerShell ends a single-quoted string at any of these, and doubles them to escape
_PS_QUOTES = "'\u2018\u2019\u201a\u201b"


def agentmem_argv() -> list[str]:
    """How to start agentmem: the console script this process runs as, else the one next to this
    interpreter, else the one on PATH, else ``python -m agentmem_vault`` with this interpreter."""
    exe_name = "agentmem.exe" if sys.platform == "win32" else "agentmem"
    a0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(a0).lower() in (exe_name, "agentmem") and os.path.isfile(a0):
        return [os.path.abspath(a0)]
    here = os.path.dirname(sys.executable)
    for cand in (os.path.join(here, exe_name), os.path.join(here, "Scripts", exe_name)):
        if os.path.isfile(cand):
            return [cand]
    import shutil

    found = shutil.which("agentmem")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "agentmem_vault"]


def _posix(arg: str) -> str:
    if arg and all(c in _SAFE for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _powershell(arg: str) -> str:
    out = "".join(c + c if c in _PS_QUOTES else c for c in arg)
    return f"'{out}'"


def chat_command(platform: str = sys.platform) -> str:
    """``agentmem`` for the chat's shell: ``'/home/me/.venv/bin/agentmem'`` (POSIX), or PowerShell's
    ``& 'C:\\…\\agentmem.exe'`` on Windows, where Cursor's terminal is PowerShell."""
    argv = agentmem_argv()
    if platform == "win32":
        return "& " + " ".join(_powershell(a) for a in argv)
    return " ".join(_posix(a) for a in argv)


def command_note(platform: str = sys.platform) -> str:
    """The line that tells the chat how to run ``agentmem`` on this machine."""
    return (
        f"On this machine run agentmem as: {chat_command(platform)} "
        "(it may not be on the shell's PATH; use this wherever `agentmem` is written)"
    )
