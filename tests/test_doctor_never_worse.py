"""Reliability: doctor --fix never makes a board worse; tables inside code fences are not the board
(docs/reliability.md)."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.board import table as it

from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
HEADER = it.header_lines()


def row(sid: str, topic: str = "t", status: str = "active") -> str:
    return it.render_row(it.Row(sid, "a", topic, "s", "k", status, "-", "2026-06-01 09:00", "2026-06-01 09:00")) + "\n"


@pytest.mark.parametrize("fence", ["```", "~~~", "````markdown"])
def test_fenced_example_table_is_not_the_board(vault: Vault, fence: str) -> None:
    close = fence.rstrip("markdown")
    text = (
        "# Memory Index\n\nExample of a row:\n\n"
        + fence
        + "\n"
        + HEADER
        + row("2026-01-01-0000-example", "EXAMPLE")
        + close
        + "\n\n"
        + HEADER
        + row("2026-06-01-0900-a", "real one")
        + row("2026-06-01-0901-a", "real two")
    )
    vault.index_path.write_text(text, encoding="utf-8")
    listed = json.loads(run_cli("list", "--json", vault=vault).stdout)["rows"]
    assert [r["session_id"] for r in listed] == ["2026-06-01-0900-a", "2026-06-01-0901-a"]
    p = run_cli("register", "--json", vault=vault, env=NOW)
    assert p.returncode == 0, p.stderr
    sid = json.loads(p.stdout)["session_id"]
    after = vault.index_path.read_text(encoding="utf-8")
    assert after.startswith(text) and after[len(text) :].startswith(f"| {sid} |")  # appended to the real table
    fence_part = after.split(close + "\n\n", 1)[0]
    assert sid not in fence_part
    fix = run_cli("doctor", "--fix", vault=vault)
    assert "Traceback" not in fix.stderr
    assert vault.index_path.read_text(encoding="utf-8").split(close + "\n\n", 1)[0] == fence_part


def test_fenced_table_after_the_board_is_not_a_stray_row(vault: Vault) -> None:
    text = (
        "# Memory Index\n\n"
        + HEADER
        + row("2026-06-01-0900-a")
        + "\nExample:\n\n```\n"
        + HEADER
        + row("2026-01-01-0000-example")
        + "```\n"
    )
    vault.index_path.write_text(text, encoding="utf-8")
    doc = it.parse_index(text)
    assert not doc.bad and doc.ids() == ["2026-06-01-0900-a"]
    p = run_cli("register", "--json", vault=vault, env=NOW)
    assert p.returncode == 0, p.stderr
    sid = json.loads(p.stdout)["session_id"]
    after = vault.index_path.read_text(encoding="utf-8")
    assert after == text.replace(
        "\nExample:", f"| {sid} |" + after.split(f"| {sid} |", 1)[1].split("\n", 1)[0] + "\n\nExample:", 1
    )


def test_row_with_an_extra_cell_is_never_duplicated(vault: Vault) -> None:
    sid = json.loads(run_cli("register", "--manual", "--topic", "t", "--json", vault=vault, env=NOW, input=b"").stdout)[
        "session_id"
    ]
    text = vault.index_path.read_text(encoding="utf-8")
    damaged = text.replace(f"| {sid} |", f"| {sid} | extra |", 1)
    vault.index_path.write_text(damaged, encoding="utf-8")
    for _ in range(2):
        fix = run_cli("doctor", "--fix", vault=vault)
        assert "Traceback" not in fix.stderr
        assert vault.index_path.read_text(encoding="utf-8") == damaged  # nothing added, nothing lost
    report = json.loads(run_cli("doctor", "--json", vault=vault).stdout)
    msgs = " ".join(f["message"] for f in report["findings"])
    assert "10 cells" in msgs


def test_fix_that_cannot_prove_every_row_survives_changes_nothing(vault: Vault, monkeypatch) -> None:
    from agentmem_vault.ops.doctor import repairs as doctor

    text = "# Memory Index\n\n" + HEADER + row("2026-06-01-0900-a", status="Active") + row("2026-06-01-0901-a")
    vault.index_path.write_text(text, encoding="utf-8")
    real = doctor.plan_text

    def lossy(plan):  # a planning bug that drops a row it did not mean to touch
        out = real(plan)
        return out.replace(row("2026-06-01-0901-a"), "")

    monkeypatch.setattr(doctor, "plan_text", lossy)
    report = doctor.repair(vault)
    assert vault.index_path.read_text(encoding="utf-8") == text
    msgs = [f.message for f in report.findings]
    assert any("cannot prove" in m for m in msgs), msgs
