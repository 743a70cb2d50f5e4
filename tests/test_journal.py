"""The journal makes every removed row recoverable: organize deletes idle rows, restore brings one back."""

from __future__ import annotations

import json

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault

from conftest import run_cli

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}


def ids(v: Vault) -> list[str]:
    return it.parse_index(v.index_path.read_text(encoding="utf-8")).ids()


def test_organize_then_restore(vault: Vault) -> None:
    sid = json.loads(run_cli("register", "--json", vault=vault, env=NOW).stdout)["session_id"]
    assert run_cli("organize", vault=vault, env=NOW).returncode == 0
    assert sid not in ids(vault)
    hist = json.loads(run_cli("journal", "--session", sid, "--json", vault=vault).stdout)["entries"]
    assert [e["action"] for e in hist] == ["append_row", "organize"]
    p = run_cli("restore", sid, vault=vault)
    assert p.returncode == 0, p.stderr
    row = it.parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid)
    assert (row.status, row.summary) == ("idle", "sessionStart 自動註冊，尚未整理主題。")
    again = run_cli("restore", sid, "--json", vault=vault)
    assert again.returncode == 1 and json.loads(again.stdout)["error"]["code"] == "refused"


def test_restore_unknown_and_bad_ids_and_torn_journal(vault: Vault) -> None:
    with vault.journal_path.open("a", encoding="utf-8") as fh:
        fh.write('{"action": "remove_row", "session_id": "2026-01-01-0000-a", "bef')  # torn by a crash
    p = run_cli("restore", "2026-01-01-0000-a", vault=vault)
    assert p.returncode == 1 and "no removed row" in p.stderr
    assert run_cli("restore", "../../x", vault=vault).returncode == 1
    out = json.loads(run_cli("journal", "--json", vault=vault).stdout)
    assert out["broken_lines"] == 1


def test_refused_commands_leave_the_journal_alone(vault: Vault) -> None:
    run_cli("register", vault=vault, env=NOW)
    journal = vault.state_dir / "journal.jsonl"
    before = journal.read_bytes()
    for args in (
        ("update", "2026-01-01-0000-zz"),
        ("continue", "2026-01-01-0000-zz", "--session", "2026-06-01-0930-x"),
        ("release", "2026-01-01-0000-zz", "--session", "2026-06-01-0930-x"),
    ):
        assert run_cli(*args, vault=vault, env=NOW).returncode == 1
    assert journal.read_bytes() == before  # no empty "rollback" entries for writes that never happened


def test_journal_rotates_without_losing_rows(vault: Vault, monkeypatch) -> None:
    from agentmem_vault import writer
    from agentmem_vault.journal import last_removed_row
    from agentmem_vault.board.register import register_idle
    from agentmem_vault.board.store import BoardWriter

    monkeypatch.setattr(writer, "JOURNAL_ROTATE_BYTES", 400)
    ids_ = [register_idle(vault, "cursor-main-agent").session_id for _ in range(6)]
    with BoardWriter(vault, "t") as w:
        w.remove_row(ids_[0])
    rotated = sorted(vault.state_dir.glob("journal-*.jsonl"))
    assert rotated, "the journal should have rotated"
    assert last_removed_row(vault, ids_[0]) is not None
    out = json.loads(run_cli("journal", "--limit", "0", "--json", vault=vault).stdout)
    assert [e["session_id"] for e in out["entries"] if e["action"] == "append_row"][-6:] == ids_


def test_restore_brings_the_row_in_step_with_the_snapshot(vault: Vault) -> None:
    # the snapshot moved on after its row was removed: restore gives the row the snapshot's Topic,
    # Status and Updated At (docs/board.md "Row and snapshot in step"), so doctor has nothing to say
    from daemon_helpers import snapshot_text

    sid = json.loads(run_cli("register", "--json", vault=vault, env=NOW).stdout)["session_id"]
    assert run_cli("organize", vault=vault, env=NOW).returncode == 0
    vault.session_path(sid).write_text(
        snapshot_text(sid, topic="Login fix", status="active", updated="2026-06-01 10:15"), encoding="utf-8"
    )
    p = run_cli("restore", sid, vault=vault)
    assert p.returncode == 0, p.stderr
    row = it.parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid)
    assert (row.topic, row.status, row.updated_at) == ("Login fix", "active", "2026-06-01 10:15")
    doctor = json.loads(run_cli("doctor", "--json", vault=vault).stdout)
    assert "row_snapshot_mismatch" not in json.dumps(doctor)
