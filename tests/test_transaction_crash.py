"""Crash safety is a property of the transaction (docs/reliability.md, "Crash safety"): ``update``,
``continue``, ``release``, ``organize`` and ``register --manual`` killed after any number of their
files were written leave old-or-new files, and the next writer puts the vault back as it was
before the killed command, byte for byte. Real subprocesses: the crash hook
(``AGENTMEM_CRASH_AT=txn:N``) exits the process as a SIGKILL would once N files were written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.writer import undo_folder
from conftest import run_cli as _run_cli
from lifecycle_helpers import picture as _state  # every file and folder under memory/ but tool state

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
SNAP = "# Session: {sid}\n\n## Current Context\n- {text}\n\n## Decisions\n- use pnpm\n"


def run_cli(*args: str, **kw):  # noqa: ANN201 - real processes: the crash hook exits the interpreter
    kw.setdefault("process", True)
    kw.setdefault("env", NOW)
    return _run_cli(*args, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A vault with a source session S (snapshot), a current one C continuing from S, and an old
    active row that organize marks stale; the incoming snapshot for update and continue."""
    root = tmp_path_factory.mktemp("txn") / "v"
    v = Vault(root)
    assert run_cli("init", vault=v).returncode == 0
    s = json.loads(run_cli("register", "--manual", "--topic", "source", "--json", vault=v, input="").stdout)
    c = json.loads(run_cli("register", "--manual", "--topic", "current", "--json", vault=v, input="").stdout)
    old = json.loads(
        run_cli(
            "register",
            "--manual",
            "--topic",
            "old",
            "--json",
            vault=v,
            input="",
            env={"AGENTMEM_NOW": "2026-01-01T09:00"},
        ).stdout
    )
    assert run_cli("continue", s["session_id"], "--session", c["session_id"], vault=v).returncode == 0
    incoming = root.parent / "incoming.md"
    incoming.write_text(SNAP.format(sid=c["session_id"], text="a new context after the crash test"), encoding="utf-8")
    return {"v": v, "s": s["session_id"], "c": c["session_id"], "old": old["session_id"], "incoming": incoming}


def _commands(b: dict) -> dict[str, list[str]]:
    return {
        "update": ["update", b["c"], "--snapshot", str(b["incoming"]), "--topic", "updated topic"],
        "continue": ["continue", b["old"], "--session", b["c"], "--snapshot", str(b["incoming"])],
        "release": ["release", b["s"], "--session", b["c"]],
        "organize": ["organize"],
        "register --manual": ["register", "--manual", "--topic", "manual", "--summary", "a manual registration"],
    }


@pytest.mark.parametrize("op", ["update", "continue", "release", "organize", "register --manual"])
def test_killed_after_any_write_the_next_writer_puts_everything_back(built: dict, tmp_path: Path, op: str) -> None:
    import shutil

    argv = _commands(built)[op]
    crashed = 0
    for n in range(1, 12):
        v = Vault(tmp_path / f"v{n}")
        shutil.copytree(built["v"].root, v.root)
        before = _state(v)
        env = {**NOW, "AGENTMEM_CRASH_AT": f"txn:{n}"}
        p = run_cli(*argv, vault=v, env=env, input="")
        if p.returncode == 0:  # fewer than n files: it finished, nothing to undo
            assert crashed >= 1 or op == "organize", f"{op} never reached its first write: {p.stderr}"
            after = _state(v)
            assert after != before
            break
        assert p.returncode == 137, p.stderr
        crashed += 1
        assert any(undo_folder(v).iterdir())  # the killed transaction left its record
        # the next writer (any command that takes the vault lock; a dry run writes nothing) undoes
        # it before anything else
        q = run_cli("doctor", "--fix", vault=v)
        assert q.returncode in (0, 1) and "killed halfway" in q.stdout, q.stdout + q.stderr
        assert _state(v) == before, f"{op} killed after {n} file(s): not put back"
        assert not undo_folder(v).exists() or not any(undo_folder(v).iterdir())
        journal = [json.loads(x) for x in v.journal_path.read_text(encoding="utf-8").splitlines()]
        assert journal[-1]["action"] == "recover" and journal[-1]["failed"] == []
    else:
        pytest.fail(f"{op} wrote more than 11 files")
    assert crashed >= (1 if op == "organize" else 2), f"{op}: only {crashed} crash point(s)"


def test_a_finished_transaction_leaves_no_record_and_costs_no_recovery(built: dict, tmp_path: Path) -> None:
    import shutil

    v = Vault(tmp_path / "v")
    shutil.copytree(built["v"].root, v.root)
    assert run_cli(*_commands(built)["update"], vault=v, input="").returncode == 0
    after = _state(v)
    assert not undo_folder(v).exists() or not any(undo_folder(v).iterdir())
    run_cli("doctor", "--fix", vault=v)
    assert _state(v) == after
    assert "recover" not in v.journal_path.read_text(encoding="utf-8")


# -- the undo record follows the fs rule (docs/reliability.md, "Links") -------------------------


def _planted_record(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The record folder the next transaction of this process writes, ``<pid>-<n>``, with ``n``
    pinned so that a test can plant files in it before the first write (the writer's recovery,
    when it takes the lock, removes anything left there earlier)."""
    import os
    from types import SimpleNamespace

    from agentmem_vault import writer

    monkeypatch.setattr(writer, "time", SimpleNamespace(monotonic_ns=lambda: 123))
    folder = undo_folder(vault) / f"{os.getpid()}-123"
    folder.mkdir(parents=True)
    return folder


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "manifest"])
def test_an_undo_copy_is_never_written_through_a_link(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    import os

    from agentmem_vault.errors import OutsideVault
    from agentmem_vault.writer import VaultWriter

    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"a file outside the vault and the cache\n")
    note = vault.memory / "note.md"
    note.write_text("old text\n", encoding="utf-8")
    with VaultWriter(vault, "test") as w:  # recovery has run: what is planted now stays
        # the manifest's first line is the command, so the first file's copy is 1.old
        record = _planted_record(vault, monkeypatch)
        planted = record / ("manifest.jsonl" if kind == "manifest" else "1.old")
        if kind == "symlink":
            planted.symlink_to(outside)
            with pytest.raises(OutsideVault), w.transaction():
                w.write_file(note, "new text\n")
            assert note.read_text(encoding="utf-8") == "old text\n"  # refused before the write
        else:
            os.link(outside, planted)
            with w.transaction():
                w.write_file(note, "new text\n")
            assert note.read_text(encoding="utf-8") == "new text\n"  # the link was replaced
    assert outside.read_bytes() == b"a file outside the vault and the cache\n"


def test_recovery_never_reads_an_undo_copy_through_a_link(vault: Vault, tmp_path: Path) -> None:
    from agentmem_vault.writer import VaultWriter

    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"a file outside the vault and the cache\n")
    note = vault.memory / "note.md"
    note.write_text("mine\n", encoding="utf-8")
    record = undo_folder(vault) / "999-1"
    record.mkdir(parents=True)
    lines = [{"command": "update"}, {"path": str(note), "copy": "1.old"}]
    (record / "manifest.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    (record / "1.old").symlink_to(secret)
    with VaultWriter(vault, "next"):  # the next writer recovers what killed writers left
        pass
    assert note.read_text(encoding="utf-8") == "mine\n"  # nothing from outside came into the vault
    assert not record.exists()
