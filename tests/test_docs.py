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
            ref = ref.strip()
            if "::" in ref:
                stem, ref = ref.split("::", 1)
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
    )
    refs = _fault_table_refs(rows)
    assert [r[1:] for r in refs] == [
        ("test_docs", "test_every_test_the_fault_table_names_exists"),
        ("test_docs", "test_the_reference_…"),
        ("test_docs", "test_no_such_test"),
        ("test_no_such_file", "test_x"),
    ]
    assert _missing(refs) == [
        "fault 2: tests/test_docs.py::test_no_such_test",
        "fault 3: tests/test_no_such_file.py::test_x",
    ]
