"""Row and snapshot in step (docs/board.md): after every operation the row's Topic, Status and
Updated At agree with the snapshot's Metadata; doctor reports a disagreement and --fix resolves
it toward the snapshot."""

from __future__ import annotations

import json

from agentmem_vault.board.table import parse_index
from agentmem_vault.model.snapshot import parse_snapshot
from tests.conftest import run_cli

CTX = "## Current Context\nWork.\n"


def _out_of_step(vault) -> list[tuple]:
    doc = parse_index(vault.index_path.read_text(encoding="utf-8"))
    out = []
    for r in doc.row_list():
        p = vault.session_path(r.session_id)
        if p.exists():
            m = parse_snapshot(p.read_text(encoding="utf-8")).metadata
            for field, attr in (("Topic", "topic"), ("Status", "status"), ("Updated At", "updated_at")):
                if getattr(r, attr) != m.get(field):
                    out.append((r.session_id, field, getattr(r, attr), m.get(field)))
    return out


def _run(vault, *args: str, now: str, input: str | None = None) -> dict:
    r = run_cli("--json", *args, vault=vault, env={"AGENTMEM_NOW": now}, input=input)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_every_operation_leaves_row_and_snapshot_in_step(vault) -> None:
    a = _run(vault, "register", "--manual", "--topic", "A", "--snapshot", "-", now="2026-06-01T09:30", input=CTX)
    b = _run(vault, "register", "--manual", "--topic", "B", "--snapshot", "-", now="2026-06-01T09:31", input=CTX)
    a, b = a["session_id"], b["session_id"]
    steps = [
        ("update", a, "--snapshot", "-"),
        ("continue", a, "--session", b),
        ("release", a, "--session", b),
        ("update", a, "--topic", "A renamed"),
    ]
    for n, step in enumerate(steps):
        _run(vault, *step, now=f"2026-06-01T1{n}:00", input="## Decisions\n- one more\n" if "-" in step else None)
        assert _out_of_step(vault) == [], step
    _run(vault, "organize", now="2026-07-01T10:00")  # both overdue: marked stale, snapshots too
    assert {r.status for r in parse_index(vault.index_path.read_text(encoding="utf-8")).row_list()} == {"stale"}
    assert _out_of_step(vault) == []


def test_doctor_reports_a_disagreement_and_fix_follows_the_snapshot(vault) -> None:
    sid = _run(vault, "register", "--manual", "--topic", "Old", "--snapshot", "-", now="2026-06-01T09:30", input=CTX)[
        "session_id"
    ]
    p = vault.session_path(sid)
    text = p.read_text(encoding="utf-8")
    p.write_text(
        text.replace("| Topic | Old |", "| Topic | New topic |").replace(
            "| Updated At | 2026-06-01 09:30 |", "| Updated At | 2026-06-01 08:00 |"
        ),
        encoding="utf-8",
    )
    found = [
        f for f in _run(vault, "doctor", now="2026-06-02T09:00")["findings"] if f["kind"] == "row_snapshot_mismatch"
    ]
    assert len(found) == 1 and "'Old' vs 'New topic'" in found[0]["message"], found
    fixed = run_cli("--json", "doctor", "--fix", vault=vault)
    assert fixed.returncode == 0, fixed.stdout
    assert _out_of_step(vault) == []
    row = parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid)
    assert (row.topic, row.updated_at) == ("New topic", "2026-06-01 08:00")
