"""Reliability: the journal survives damage; restore validates what it brings back (docs/reliability.md)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from agentmem_vault.vault import Vault
from agentmem_vault.errors import AgentmemError
from agentmem_vault.board import table as it

WHEN = datetime(2026, 6, 1, 9, 30)


def _organized(vault: Vault, n: int = 2) -> list[str]:
    from agentmem_vault.ops.lifecycle import organize
    from agentmem_vault.board.register import register_idle

    ids = [register_idle(vault, "a", when=WHEN).session_id for _ in range(n)]
    organize(vault, now=WHEN)
    return ids


def test_cut_off_last_line_does_not_swallow_the_next_entry(vault: Vault) -> None:
    from agentmem_vault.journal import read_journal
    from agentmem_vault.board.register import register_idle

    with vault.journal_path.open("ab") as fh:
        fh.write(b'{"action": "remove_row", "session_id": "2026-01-01-0000-a", "bef')  # torn by a crash
    sid = register_idle(vault, "a", when=WHEN).session_id
    j = read_journal(vault)
    assert j.broken_lines == 1
    assert any(e.get("session_id") == sid and e.get("action") == "append_row" for e in j.entries)


def test_fresh_line_for_every_append_only_state_file(vault: Vault) -> None:
    from agentmem_vault import fs

    p = vault.state_dir / "x.jsonl"
    p.write_bytes(b'{"a": 1')
    fs.append_line(p, b'{"b": 2}\n')
    assert p.read_bytes() == b'{"a": 1\n{"b": 2}\n'
    fs.append_line(p, b'{"c": 3}\n')
    assert p.read_bytes().endswith(b'\n{"c": 3}\n') and b"\n\n" not in p.read_bytes()


def test_undecodable_line_is_skipped_and_reported(vault: Vault) -> None:
    a, _b = _organized(vault)
    with vault.journal_path.open("ab") as fh:
        fh.write(b'{"action": "note", "x": "\xff\xfe broken"}\n')
    p = run_cli("journal", "--json", vault=vault)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["broken_lines"] == 1
    r = run_cli("restore", a, vault=vault)
    assert r.returncode == 0, r.stderr
    assert a in it.parse_index(vault.index_path.read_text(encoding="utf-8")).ids()


def _journal_removed_row(vault: Vault, row: dict) -> None:
    entry = {
        "time": "2026-06-01T09:31:00",
        "command": "test",
        "action": "remove_row",
        "session_id": row.get("session_id"),
        "before": row,
        "after": None,
    }
    with vault.journal_path.open("ab") as fh:
        fh.write((json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8"))


GOOD = {
    "session_id": "2026-06-01-0930-z",
    "agent_name": "a",
    "topic": "t",
    "summary": "s",
    "keywords": "k",
    "status": "idle",
    "referenced_by": "-",
    "started_at": "2026-06-01 09:30",
    "updated_at": "2026-06-01 09:30",
}


@pytest.mark.parametrize(
    "change,why",
    [
        ({"status": "exploded"}, "status"),
        ({"status": None}, "status"),
        ({"session_id": "2026-13-45-9999-z"}, "Session ID"),
        ({"agent_name": "../../x"}, "agent"),
        ({"topic": ["not", "text"]}, "topic"),
        ({"summary": 12}, "summary"),
        ({"keywords": None}, "keywords"),
        ({"referenced_by": "../etc"}, "Referenced By"),
    ],
)
def test_restore_validates_the_journaled_row(vault: Vault, change: dict, why: str) -> None:
    from agentmem_vault.journal import restore_row

    row = {**GOOD, **change}
    _journal_removed_row(vault, row)
    before = vault.index_path.read_bytes()
    with pytest.raises(AgentmemError) as ei:
        restore_row(vault, row["session_id"])
    assert why.lower() in str(ei.value).lower()
    assert vault.index_path.read_bytes() == before


def test_restore_missing_field_refused_and_good_row_restored(vault: Vault) -> None:
    from agentmem_vault.journal import restore_row

    row = dict(GOOD)
    del row["updated_at"]
    _journal_removed_row(vault, row)
    with pytest.raises(AgentmemError, match="updated_at"):
        restore_row(vault, GOOD["session_id"])
    _journal_removed_row(vault, dict(GOOD))
    assert restore_row(vault, GOOD["session_id"]).status == "idle"
