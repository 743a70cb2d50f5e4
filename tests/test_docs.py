"""Documentation that a test re-reads cannot drift (as sqlite-utils' tests/test_docs.py): every
test the fault table of docs/reliability.md names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


def _fault_table_refs(text: str) -> list[tuple[str, str, str]]:
    """(fault number, test file stem, test name or name prefix ending in …) for every row."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^\|\s*(\d+)\s*\|.*\|\s*([^|]+?)\s*\|\s*$", line)
        if not m:
            continue
        stem = ""
        for ref in m.group(2).split(","):
            ref = re.sub(r"\s*\([^)]*\)$", "", ref.strip())  # a note: "(59 cases)"
            if "::" in ref:
                stem, ref = ref.split("::", 1)
            elif (TESTS / f"{ref}.py").is_file():  # a whole test file
                stem, ref = ref, ""
            out.append((m.group(1), stem, re.sub(r"\[[^\]]*\]$", "", ref)))
    return out


def _test_names(stem: str) -> set[str]:
    path = TESTS / f"{stem}.py"
    if not path.is_file():
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _missing(refs: list[tuple[str, str, str]]) -> list[str]:
    bad = []
    for num, stem, name in refs:
        names = _test_names(stem)
        if not name:
            found = (TESTS / f"{stem}.py").is_file()
        else:
            found = any(n.startswith(name[:-1]) for n in names) if name.endswith("…") else name in names
        if not found:
            bad.append(f"fault {num}: tests/{stem}.py::{name}")
    return bad


def test_every_test_the_fault_table_names_exists() -> None:
    refs = _fault_table_refs((ROOT / "docs" / "reliability.md").read_text(encoding="utf-8"))
    assert len(refs) > 50
    missing = _missing(refs)
    assert not missing, "docs/reliability.md names tests that do not exist:\n" + "\n".join(missing)


def test_the_reference_reader_sees_a_wrong_name() -> None:
    rows = (
        "| 1 | f | d | test_docs::test_every_test_the_fault_table_names_exists |\n"
        "| 2 | f | d | test_docs::test_the_reference_…, test_no_such_test |\n"
        "| 3 | f | d | test_no_such_file::test_x[param] |\n"
        "| 4 | f | d | test_docs (3 cases) |\n"
    )
    refs = _fault_table_refs(rows)
    assert [r[1:] for r in refs] == [
        ("test_docs", "test_every_test_the_fault_table_names_exists"),
        ("test_docs", "test_the_reference_…"),
        ("test_docs", "test_no_such_test"),
        ("test_no_such_file", "test_x"),
        ("test_docs", ""),
    ]
    assert _missing(refs) == [
        "fault 2: tests/test_docs.py::test_no_such_test",
        "fault 3: tests/test_no_such_file.py::test_x",
    ]


# -- the README's tour, replayed -------------------------------------------------------------------
#
# Every ```console block of README.md is run in order, as one session, on a copy of sample_vault/
# in a folder standing for /tmp/agentmem-vault (a folder of that name: the project of the sample notes), with the home folder standing for /home/me: `$ ` lines are
# commands (bash; a heredoc's lines are part of its command), the lines after one are its output.
# In the expected output a line that is only `…` stands for any number of lines, and `…` inside a
# line for any text. A command whose output is not shown is an illustration and is not run, except
# the shell steps the next commands need (SHELL_STEPS). `export` lines set the session's variables.
# The tour's clock is AGENTMEM_NOW, set in the README itself.

import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

SHELL_STEPS = ("mkdir ", "cp ", "export ", "cat > ", "rm ")
# Shown but not replayed, each with why: they act on the machine, not on the tour's folder.
NOT_REPLAYED = {
    "agentmem daemon start": "a background process; tests/test_daemon_process.py runs the daemon",
    "agentmem daemon status": "the running daemon's pid, uptime and counters",
    "agentmem daemon stop": "stops the daemon started above",
    "agentmem daemon install": "asks systemd / launchd / Task Scheduler of this machine",
    "agentmem install-merge-driver": "in a git clone of the vault (tests/test_sync_merge.py runs it)",
}
TOUR_ROOT, TOUR_HOME, TOUR_BIN = "/tmp/agentmem-vault", "/home/me", "/home/me/.venv/bin"


class Step:
    def __init__(self, line: int, command: str, stdin: str | None) -> None:
        self.line, self.command, self.stdin = line, command, stdin
        self.expected: list[str] = []


def console_steps(text: str) -> list[Step]:
    steps: list[Step] = []
    lines = text.splitlines()
    i, inside, indent = 0, False, 0
    while i < len(lines):
        ln = lines[i]
        if not inside:
            inside = ln.strip() == "```console"
            indent = len(ln) - len(ln.lstrip())  # a block inside a list item is indented
        elif ln.strip() == "```":
            inside = False
        elif (ln := ln[indent:]).startswith("$ "):
            cmd, stdin = ln[2:], None
            here = re.search(r"<<\s*'?(\w+)'?", cmd)
            if here:
                end = [x[indent:] for x in lines].index(here.group(1), i + 1)
                stdin = "\n".join(x[indent:] for x in lines[i + 1 : end]) + "\n"
                cmd = cmd[: here.start()].rstrip()
                i = end
            steps.append(Step(i + 1, cmd, stdin))
        elif steps and (steps[-1].expected or ln.strip()):
            steps[-1].expected.append(ln.rstrip())
        i += 1
    for s in steps:
        while s.expected and not s.expected[-1].strip():
            s.expected.pop()
    return steps


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """``…`` alone on a line: any lines (none too); ``…`` in a line: any text."""
    pats = [None if e.strip() == "…" else re.compile(".*".join(map(re.escape, e.split("…")))) for e in expected]
    memo: dict[tuple[int, int], bool] = {}

    def m(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(pats):
                memo[i, j] = j == len(actual)
            elif pats[i] is None:
                memo[i, j] = m(i + 1, j) or (j < len(actual) and m(i, j + 1))
            else:
                p = pats[i]
                memo[i, j] = j < len(actual) and p.fullmatch(actual[j]) is not None and m(i + 1, j + 1)
        return memo[i, j]

    return m(0, 0)


def test_the_output_matcher() -> None:
    assert output_matches(["a", "…", "d"], ["a", "b", "c", "d"]) and output_matches(["a", "…"], ["a"])
    assert output_matches(["x … y"], ["x 12 y"]) and not output_matches(["x … y"], ["x 12 z"])
    assert not output_matches(["a", "d"], ["a", "b", "d"]) and not output_matches(["a"], ["a", "b"])
    assert output_matches(["(pid …)"], ["(pid 42)"]) and not output_matches(["a.b"], ["axb"])


def test_console_blocks_are_read_with_heredocs_and_outputs() -> None:
    text = "```console\n$ agentmem x <<'EOF'\nline\nEOF\nout 1\n\n$ agentmem y\n```\n$ not a command\n"
    steps = console_steps(text)
    assert [(s.command, s.stdin, s.expected) for s in steps] == [
        ("agentmem x", "line\n", ["out 1"]),
        ("agentmem y", None, []),
    ]


def _normalized(out: str, tour: Path, home: Path) -> list[str]:
    bindir = str(Path(sys.executable).parent)  # where this environment's `agentmem` is
    for real, shown in ((bindir, TOUR_BIN), (str(tour), TOUR_ROOT), (str(home), TOUR_HOME)):
        out = out.replace(real, shown)
    return [ln.rstrip() for ln in out.rstrip("\n").splitlines()]


@pytest.mark.skipif(sys.platform == "win32", reason="the tour is a POSIX shell session")
def test_the_readme_tour_replays(tmp_path: Path) -> None:
    tour, home = tmp_path / "agentmem-vault", Path(os.environ["HOME"])
    tour.mkdir()
    shutil.copytree(ROOT / "sample_vault", tour / "sample_vault")
    for f in (ROOT / "docs" / "tour").iterdir():
        if f.name != "README.md":
            shutil.copy(f, tour / f.name)
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["AGENTMEM_VAULT"] = str(tour / "sample_vault")
    env["LC_ALL"] = env["LANG"] = "C.UTF-8"
    failures: list[str] = []
    rc = 0
    for step in console_steps((ROOT / "README.md").read_text(encoding="utf-8")):
        cmd = step.command.replace("~/", f"{home}/").replace(TOUR_ROOT, str(tour))
        if not step.expected and not cmd.startswith(SHELL_STEPS):
            continue  # an illustration: its output is not shown
        if step.command.split("#")[0].strip() in NOT_REPLAYED:
            continue
        if cmd.startswith("export "):
            for name, value in re.findall(r"(\w+)=(\S+)", cmd):
                env[name] = value.replace("$PWD", str(tour))
            continue
        if cmd.strip() == "echo $?":
            got = [str(rc)]
        else:
            proc = subprocess.run(
                ["bash", "-c", cmd],
                input=step.stdin,
                cwd=tour,
                env=env,
                capture_output=True,
                text=True,
                encoding="utf-8",
                timeout=300,
            )
            rc = proc.returncode
            got = _normalized(proc.stdout + proc.stderr, tour, home)
        if not output_matches(step.expected, got):
            failures.append(
                f"README.md line {step.line}: $ {step.command}\n  expected:\n"
                + "\n".join(f"    {e}" for e in step.expected)
                + "\n  got:\n"
                + "\n".join(f"    {g}" for g in got)
            )
    assert not failures, f"{len(failures)} README example(s) drifted:\n\n" + "\n\n".join(failures)


# -- the README's project layout -------------------------------------------------------------------


def layout_entries(text: str) -> list[tuple[str, str]]:
    """(path, description) for every entry of the README's "Project layout" block; a nested entry's
    path includes its folder's, and a description's continuation lines are joined to it."""
    block = text[text.index("### Project layout") :]
    block = block[block.index("```\n") + 4 :]
    block = block[: block.index("```")]
    out: list[tuple[str, str]] = []
    parents: dict[int, str] = {}
    for ln in block.splitlines():
        m = re.match(r"^( *)(\S+)(?: +(.*))?$", ln)
        if not m:
            continue
        indent, name, desc = len(m.group(1)), m.group(2), m.group(3) or ""
        if indent >= 16 and out:  # the description goes on
            out[-1] = (out[-1][0], f"{out[-1][1]} {ln.strip()}")
            continue
        path = parents.get(indent - 2, "") + name
        parents[indent] = path if name.endswith("/") else parents.get(indent - 2, "")
        out.append((path, desc))
    return out


def _layout_problems(entries: list[tuple[str, str]], root: Path) -> list[str]:
    bad = [f"{p}: no such file or folder" for p, _ in entries if not (root / p).exists()]
    listed = {p for p, _ in entries}
    pkg = "agentmem_vault/"
    for f in sorted((root / pkg).iterdir()):
        if f.name.startswith(("_", ".")) or (f.is_file() and f.suffix != ".py"):
            continue
        if f"{pkg}{f.name}{'/' if f.is_dir() else ''}" not in listed:
            bad.append(f"{pkg}{f.name}: not in the layout")
    for path, desc in entries:
        folder = root / path
        if path.startswith(pkg) and path.endswith("/") and folder.is_dir():
            children = [p for p in listed if p.startswith(path) and p != path]
            if children:  # a folder that lists its modules lists all of them
                for f in sorted(folder.iterdir()):
                    if f.suffix == ".py" and not f.name.startswith("_") and f"{path}{f.name}" not in listed:
                        bad.append(f"{path}{f.name}: not in the layout")
            for named in re.findall(r"\b([a-z_0-9]+\.py)\b", desc):
                if not (folder / named).exists():
                    bad.append(f"{path}: names {named}, which is not there")
    return sorted(set(bad))


def test_the_readme_layout_matches_the_tree() -> None:
    entries = layout_entries((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(entries) > 30
    problems = _layout_problems(entries, ROOT)
    assert not problems, (
        "README.md's Project layout drifted from the tree (give a new module its line there):\n" + "\n".join(problems)
    )


def test_the_layout_reader_sees_a_missing_module(tmp_path: Path) -> None:
    (tmp_path / "agentmem_vault" / "ops").mkdir(parents=True)
    for f in ("agentmem_vault/a.py", "agentmem_vault/ops/x.py", "agentmem_vault/ops/y.py"):
        (tmp_path / f).write_text("", encoding="utf-8")
    text = (
        "### Project layout\n\n```\nagentmem_vault/\n  a.py   one\n  ops/   ops: z.py\n    x.py   x\n"
        "  gone.py   old\n```\n"
    )
    entries = layout_entries(text)
    assert entries[:3] == [
        ("agentmem_vault/", ""),
        ("agentmem_vault/a.py", "one"),
        ("agentmem_vault/ops/", "ops: z.py"),
    ]
    assert sorted(_layout_problems(entries, tmp_path)) == [
        "agentmem_vault/gone.py: no such file or folder",
        "agentmem_vault/ops/: names z.py, which is not there",
        "agentmem_vault/ops/y.py: not in the layout",
    ]
