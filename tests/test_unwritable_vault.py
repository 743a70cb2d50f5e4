"""A vault the tool cannot write to (docs/reliability.md): a read-only folder or vault, also as
root, and memory/sessions/ that is a file, not a folder. Nothing is half-written, no traceback."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from agentmem_vault.vault import Vault

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@posix
def test_init_in_a_read_only_folder_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o555)
    try:
        p = run_cli("init", vault=Vault(root))
        assert p.returncode != 0 and "read-only" in p.stderr and "Traceback" not in p.stderr
        assert _tree(root) == []
    finally:
        root.chmod(0o755)


def _chmod_tree(root: Path, writable: bool) -> None:
    for p in [root, *root.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755 if writable else 0o555)
        else:
            p.chmod(0o644 if writable else 0o444)


@posix
@pytest.mark.parametrize("how", ["whole_vault", "memory_without_state"])
def test_register_in_a_read_only_vault_creates_nothing(vault: Vault, how: str) -> None:
    if how == "memory_without_state":
        shutil.rmtree(vault.state_dir)
        vault.memory.chmod(0o555)  # .agentmem/ would have to be created inside it
    else:
        _chmod_tree(vault.memory, writable=False)
    before = _tree(vault.root)
    index = vault.index_path.read_bytes()
    try:
        for args in (("register",), ("register", "--manual", "--topic", "t")):
            p = run_cli(*args, vault=vault, env=NOW, input=b"")
            assert p.returncode != 0 and "read-only" in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert _tree(vault.root) == before
        assert vault.index_path.read_bytes() == index
    finally:
        _chmod_tree(vault.memory, writable=True)


def test_sessions_as_a_file_is_reported_and_refused(vault: Vault) -> None:
    shutil.rmtree(vault.sessions_dir)
    vault.sessions_dir.write_text("not a folder", encoding="utf-8")
    d = run_cli("doctor", "--json", vault=vault)
    assert "Traceback" not in d.stderr
    kinds = [f["message"] for f in json.loads(d.stdout)["findings"]]
    assert any("memory/sessions is a file" in m for m in kinds), kinds
    p = run_cli("register", "--manual", "--topic", "t", vault=vault, env=NOW, input=b"")
    assert p.returncode != 0 and "Traceback" not in p.stderr and "sessions" in p.stderr
    assert vault.sessions_dir.read_text(encoding="utf-8") == "not a folder"
    fix = run_cli("doctor", "--fix", vault=vault)
    assert "Traceback" not in fix.stderr and vault.sessions_dir.is_file()
