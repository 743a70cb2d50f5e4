"""Reliability: symlinks never move data in or out of the vault (docs/reliability.md).

The rule: a path the tool reads or writes may be a symlink only if it resolves inside the vault;
writes go to the link's target and the link stays a link (never replaced by a copy)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from agentmem_vault.vault import Vault

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}


def _manual(vault: Vault, topic: str = "t") -> str:
    p = run_cli("register", "--manual", "--topic", topic, "--json", vault=vault, env=NOW, input=b"")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["session_id"]


def _refused_outside(p) -> None:
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode != 0, (p.stdout, p.stderr)
    assert "outside the vault" in p.stderr, p.stderr


def test_index_linked_outside_is_refused_everywhere(vault: Vault, tmp_path: Path) -> None:
    sid = _manual(vault)
    outside = tmp_path / "outside-index.md"
    outside.write_bytes(vault.index_path.read_bytes())
    before = outside.read_bytes()
    vault.index_path.unlink()
    vault.index_path.symlink_to(outside)
    for args in (("register",), ("list",), ("show", sid), ("organize",), ("archive", sid, "--force")):
        _refused_outside(run_cli(*args, vault=vault, env=NOW))
    _refused_outside(run_cli("update", sid, "--topic", "new", vault=vault, env=NOW, input=b""))
    assert outside.read_bytes() == before
    assert vault.index_path.is_symlink()  # never replaced by a copy


def test_index_linked_inside_is_written_through_and_stays_a_link(vault: Vault) -> None:
    sid = _manual(vault)
    real = vault.root / "boards" / "real-index.md"
    real.parent.mkdir()
    real.write_bytes(vault.index_path.read_bytes())
    vault.index_path.unlink()
    vault.index_path.symlink_to(Path("..") / "boards" / "real-index.md")
    p = run_cli("register", "--json", vault=vault, env=NOW)
    assert p.returncode == 0, p.stderr
    new = json.loads(p.stdout)["session_id"]
    assert new in real.read_text(encoding="utf-8")
    u = run_cli("update", sid, "--topic", "新主題", vault=vault, env=NOW, input=b"")
    assert u.returncode == 0, u.stderr
    assert vault.index_path.is_symlink() and "新主題" in real.read_text(encoding="utf-8")


def test_snapshot_linked_outside_is_never_copied_in(vault: Vault, tmp_path: Path) -> None:
    sid = _manual(vault)
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    snap = vault.session_path(sid)
    snap.unlink()
    snap.symlink_to(secret)
    for args in (("archive", sid), ("archive", sid, "--force"), ("show", sid)):
        _refused_outside(run_cli(*args, vault=vault, env=NOW))
    _refused_outside(run_cli("update", sid, "--topic", "x", vault=vault, env=NOW, input=b""))
    assert not vault.archive_path(sid).exists()
    for f in vault.memory.rglob("*"):
        if f.is_file() and not f.is_symlink():
            assert "root:x:0:0" not in f.read_text(encoding="utf-8", errors="replace"), f
    assert snap.is_symlink() and secret.read_text(encoding="utf-8").startswith("root:x")


def test_snapshot_linked_inside_update_keeps_the_link(vault: Vault) -> None:
    sid = _manual(vault)
    snap = vault.session_path(sid)
    real = vault.root / "drafts" / "snap.md"
    real.parent.mkdir()
    real.write_bytes(snap.read_bytes())
    snap.unlink()
    snap.symlink_to(real)
    u = run_cli("update", sid, "--topic", "新主題", vault=vault, env=NOW, input=b"")
    assert u.returncode == 0, u.stderr
    assert snap.is_symlink() and "新主題" in real.read_text(encoding="utf-8")
    # archive moves regular files only: a linked snapshot is refused with a clear reason
    a = run_cli("archive", sid, "--force", vault=vault, env=NOW)
    assert a.returncode != 0 and "symbolic link" in a.stderr and "Traceback" not in a.stderr
    assert snap.is_symlink() and real.exists()


@pytest.mark.parametrize("folder", ["sessions", "archive", ".agentmem"])
def test_state_folders_linked_outside_are_refused(vault: Vault, tmp_path: Path, folder: str) -> None:
    sid = _manual(vault)
    target = vault.memory / folder
    out = tmp_path / f"out-{folder.strip('.')}"
    os.replace(target, out)
    target.symlink_to(out, target_is_directory=True)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cmds = {
        "sessions": [("register", "--manual", "--topic", "x"), ("show", sid)],
        "archive": [("archive", sid, "--force")],
        ".agentmem": [("register",)],
    }[folder]
    for args in cmds:
        _refused_outside(run_cli(*args, vault=vault, env=NOW, input=b""))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_long_term_note_linked_outside_is_not_read(vault: Vault, tmp_path: Path) -> None:
    note = "---\nid: mem-{n}\ntitle: {t}\ncategory: project_environment_configuration\nimportance: 0.9\n---\n{t} body\n"
    secret = tmp_path / "secret.md"
    secret.write_text(note.format(n="x", t="SECRET-TOKEN-VALUE"), encoding="utf-8")
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "linked.md").symlink_to(secret)
    (vault.longterm_dir / "real.md").write_text(note.format(n="y", t="VISIBLE-TOKEN"), encoding="utf-8")
    for args in (("context", "VISIBLE-TOKEN"), ("memories", "list"), ("memories", "search", "SECRET-TOKEN-VALUE")):
        p = run_cli(*args, vault=vault, env=NOW)
        assert "Traceback" not in p.stderr, p.stderr
        assert "SECRET-TOKEN-VALUE" not in p.stdout, (args, p.stdout)
    assert "VISIBLE-TOKEN" in run_cli("context", "VISIBLE-TOKEN", vault=vault, env=NOW).stdout
