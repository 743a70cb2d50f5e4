"""Quoting for every file written for other programs; the rule of each format, and why what no
format can carry (a line break in any spelling, another control character, bytes that are not
UTF-8) is refused before anything is written: docs/setup.md, "Quoting".

A path or argument arrives from the user's disk and may hold anything a file name can; each quoter
turns it into one word of its format that the program reads back as exactly that text.
"""

from __future__ import annotations

import re
import shlex
import subprocess

from agentmem_vault.errors import UnsafeValue

# C0 and C1 controls (NEL among them), DEL, the Unicode line and paragraph separators (line breaks
# for YAML and JavaScript), and lone surrogates (a non-UTF-8 file name read with surrogateescape).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _describe(ch: str) -> str:
    if "\ud800" <= ch <= "\udfff":
        return "bytes that are not UTF-8"
    if ch in "\n\r\x85\u2028\u2029\x0b\x0c":
        return f"a line break (U+{ord(ch):04X})"
    return f"a control character (U+{ord(ch):04X})"


def check_safe(value: str, target: str) -> str:
    """``value`` unchanged, or UnsafeValue naming what it holds and where it was to be written."""
    m = _UNSAFE.search(value)
    if m:
        shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise UnsafeValue(
            f"cannot write {shown!r} into {target}: it holds {_describe(m.group())}, which that file cannot "
            "hold safely; nothing was written (move or rename the folder so its path has none)",
            details={"target": target},
        )
    return value


# -- systemd --------------------------------------------------------------------------------------


def systemd_word(arg: str) -> str:
    """One ExecStart= word. systemd expands ``%`` specifiers and ``$`` variables and splits on
    whitespace; inside double quotes it reads C escapes, so ``\\`` and ``"`` are escaped too."""
    check_safe(arg, "a systemd unit")
    arg = arg.replace("%", "%%").replace("$", "$$")
    if arg and not any(c in arg for c in " \t\"'\\;"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_text(text: str) -> str:
    """A free-text value (Description=): specifiers escaped; it must not end in a backslash,
    which would continue the line into the next one."""
    check_safe(text, "a systemd unit")
    text = text.replace("%", "%%")
    return text + "." if text.endswith("\\") else text


# -- shells ---------------------------------------------------------------------------------------


def posix_join(parts: list[str], target: str = "a shell command") -> str:
    """A POSIX ``sh`` command line: every word single-quoted where needed (shlex)."""
    return shlex.join(check_safe(p, target) for p in parts)


# PowerShell treats each of these as a single quote; inside a single-quoted string a quote
# character is written twice to stand for itself.
_PS_QUOTES = re.compile("['\u2018\u2019\u201a\u201b]")


def powershell_command(parts: list[str], target: str = "a PowerShell command") -> str:
    """``& 'program' 'arg' …``: the call operator runs a quoted program path."""
    return "& " + " ".join("'" + _PS_QUOTES.sub(lambda m: m.group() * 2, check_safe(p, target)) + "'" for p in parts)


def windows_arg(arg: str) -> str:
    """One argument as the Microsoft C runtime splits a command line, always in double quotes
    (cmd.exe then takes ``& | < > ^`` inside as text); backslashes doubled where they precede a
    quote."""
    out: list[str] = []
    backslashes = 0
    for ch in arg:
        if ch == "\\":
            backslashes += 1
            continue
        if ch == '"':
            out.append("\\" * (2 * backslashes + 1) + '"')
        else:
            out.append("\\" * backslashes + ch)
        backslashes = 0
    return '"' + "".join(out) + "\\" * (2 * backslashes) + '"'


_TASK_VARIABLE = re.compile(r"%[^%]+%")


def task_value(value: str) -> str:
    """A value of a Task Scheduler action (program, arguments, folder): Task Scheduler expands
    ``%NAME%`` there and has no escape for ``%``, so text that reads as a variable (a lone ``%``
    does not) is refused, as is anything unsafe."""
    check_safe(value, "a Task Scheduler task")
    if _TASK_VARIABLE.search(value):
        raise UnsafeValue(
            f"cannot write {value!r} into a Task Scheduler task: Task Scheduler expands %NAME% in its "
            "actions and has no escape for '%'; nothing was written (rename the folder)",
            details={"target": "a Task Scheduler task"},
        )
    return value


def task_arguments(argv: list[str]) -> str:
    """<Arguments>: quoted as the Microsoft C runtime splits a command line (subprocess's rule)."""
    return subprocess.list2cmdline([task_value(a) for a in argv])


_CMD_PLAIN = re.compile(r"[A-Za-z0-9_./:\\-]+")  # nothing cmd.exe or the C runtime would read specially


def cmd_word(arg: str) -> str:
    """One word of a ``.cmd`` batch line. Inside double quotes cmd.exe takes ``& | < > ^`` as text;
    ``%`` is expanded even there, so it is doubled. A ``"`` would end cmd's quoting (Windows file
    names cannot hold one), so it is refused."""
    check_safe(arg, "a startup .cmd file")
    if '"' in arg:
        raise UnsafeValue(
            f"cannot write {arg!r} into a startup .cmd file: cmd.exe cannot quote a double quote",
            details={"target": "a startup .cmd file"},
        )
    if _CMD_PLAIN.fullmatch(arg):
        return arg
    return windows_arg(arg).replace("%", "%%")


# -- git ------------------------------------------------------------------------------------------

_GLOB = re.compile(r"([\\*?\[\]!#])")


def gitattributes_pattern(literal: str, glob: str = "") -> str:
    """A ``.gitattributes`` pattern: ``literal`` (a folder path, whose ``*`` ``?`` ``[`` are text,
    not wildcards) followed by our own ``glob``. Glob characters of the folder are escaped with
    ``\\`` (the pattern's own escape); git reads a pattern that starts with ``"`` as a C-quoted
    string, which is how a pattern holds spaces and keeps its backslashes."""
    check_safe(literal, ".gitattributes")
    pattern = _GLOB.sub(r"\\\1", literal) + glob
    if not any(c in pattern for c in ' "\\\t'):
        return pattern
    return '"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"'


def git_driver_command(argv: list[str]) -> str:
    """A merge-driver command for git config: git expands ``%O %A %B %P %L`` (and ``%%``) before
    running it through ``sh``, so every ``%`` of ours is doubled after shell quoting."""
    return posix_join(argv, "git config").replace("%", "%%")


# -- TOML -----------------------------------------------------------------------------------------


def toml_string(s: str) -> str:
    """A TOML string: literal (``'…'``) when it can be, else a basic string with escapes."""
    check_safe(s, "a TOML file")
    if "'" not in s:
        return f"'{s}'"
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
