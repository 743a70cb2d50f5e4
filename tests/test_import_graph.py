"""The package's import graph (read from the source with ast, nothing imported): no cycles between
modules, and the core (model/, ops/, the top-level modules, longterm/, recall/, integrations/)
never imports a front end (cli/, daemon/, hooks/, mcp/). model/ and the board's table and rules
(board/table.py, board/rules.py) are pure: they import only each other, errors, clock and
textnorm-level helpers, never I/O modules."""

from __future__ import annotations

import ast
from pathlib import Path

import agentmem_vault

PKG = Path(agentmem_vault.__file__).parent
FRONT_ENDS = ("cli", "daemon", "hooks", "mcp")
# fastimport: standard-library imports made cheaper for the hook (pure stdlib, imports none of ours).
MODEL_MAY_IMPORT = (
    "agentmem_vault.model",
    "agentmem_vault.errors",
    "agentmem_vault.clock",
    "agentmem_vault.fastimport",
    "agentmem_vault.board.table",
    "agentmem_vault.board.rules",
)
PURE_BOARD = ("agentmem_vault.board.table", "agentmem_vault.board.rules")
# Known exceptions, each with its reason (none today); remove an entry when its reason goes.
MODEL_EXCEPTIONS: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(PKG).with_suffix("")
        parts = ["agentmem_vault", *rel.parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Package modules imported by ``name``: every import statement, at module level, inside
    functions and under ``TYPE_CHECKING`` alike (a deferred import is still a dependency: it only
    moves the cycle from import time to the first call)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    nodes = list(ast.walk(tree))
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Import):
            targets = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (n.level - 1)]
                mod = ".".join(base + ([n.module] if n.module else []))
            else:
                mod = n.module or ""
            targets = [mod] + [f"{mod}.{a.name}" for a in n.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def _area(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and mod in _PACKAGES) else "top"


_PACKAGES = {f"agentmem_vault.{d.name}" for d in PKG.iterdir() if (d / "__init__.py").exists()}


def test_core_never_imports_front_ends() -> None:
    mods = _modules()
    known = set(mods)
    bad = []
    for name, path in mods.items():
        if _area(name) in FRONT_ENDS or name == "agentmem_vault.entry":
            continue
        for dep in _imports(name, path, known):
            if _area(dep) in FRONT_ENDS:
                bad.append(f"{name} -> {dep}")
    assert not bad, "core modules import front ends:\n" + "\n".join(sorted(bad))


def test_model_is_pure() -> None:
    mods = _modules()
    known = set(mods)
    bad = []
    for name, path in mods.items():
        if _area(name) != "model" and name not in PURE_BOARD:
            continue
        for dep in _imports(name, path, known):
            if (
                not dep.startswith(MODEL_MAY_IMPORT)
                and dep not in ("agentmem_vault", "agentmem_vault.board")
                and (name, dep) not in MODEL_EXCEPTIONS
            ):
                bad.append(f"{name} -> {dep}")
    assert not bad, (
        "pure modules import beyond model/, the board's table and rules, errors, clock and fastimport:\n"
        + "\n".join(sorted(bad))
    )


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    # A package's __init__ importing its own submodules is not a cycle of modules; skip parent links.
    graph = {n: {d for d in deps if not n.startswith(d + ".")} for n, deps in graph.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        path.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                cycles.append(path[path.index(d) :] + [d])
            elif d not in state:
                visit(d)
        path.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return cycles


def test_no_import_cycles() -> None:
    mods = _modules()
    known = set(mods)
    cycles = _cycles({n: _imports(n, p, known) for n, p in mods.items()})
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_graph_reader_sees_real_edges() -> None:
    # Guard against a test that cannot fail: known edges must be found.
    mods = _modules()
    known = set(mods)
    deps = _imports("agentmem_vault.ops.doctor.checks", mods["agentmem_vault.ops.doctor.checks"], known)
    assert "agentmem_vault.board.rules" in deps and "agentmem_vault.ops.lifecycle" in deps
    cli_deps = _imports("agentmem_vault.cli.say_dispatch", mods["agentmem_vault.cli.say_dispatch"], known)
    assert "agentmem_vault.ops.sessions" in cli_deps


def test_deferred_and_type_checking_imports_make_cycles(tmp_path: Path) -> None:
    """A cycle closed by an import inside a function, or under TYPE_CHECKING, is a cycle."""
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("import pkg.b\n", encoding="utf-8")
    b.write_text("def f():\n    from pkg import c\n", encoding="utf-8")
    c.write_text("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from pkg.a import X\n", encoding="utf-8")
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    graph = {f"pkg.{p.stem}": _imports(f"pkg.{p.stem}", p, known) for p in (a, b, c)}
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg", "pkg.c"}, "pkg.c": {"pkg.a"}}
    assert _cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
