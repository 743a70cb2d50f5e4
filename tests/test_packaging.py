"""Every package of the source tree is in the installed distribution: pyproject.toml lists the
packages by hand, and a package left out installs fine and fails at the first import (a
non-editable install: pipx, uv tool, the benchmarks' venv)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_every_package_directory_is_listed() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "agentmem_vault").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found <= listed, sorted(found - listed)
