"""References after a forced archive (docs/lifecycle.md): `archive --force` names the references it
leaves with the release command; `doctor` reports a Continues From or Referenced By that points at
an archived or missing session."""

from __future__ import annotations

import json

from tests.conftest import run_cli

SNAP = "## Current Context\n{}\n\n## Decisions\n- keep it\n"


def _register(vault, topic: str, now: str) -> str:
    r = run_cli(
        "--json",
        "register",
        "--manual",
        "--topic",
        topic,
        "--snapshot",
        "-",
        vault=vault,
        input=SNAP.format(topic),
        env={"AGENTMEM_NOW": now},
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["session_id"]


def _doctor(vault) -> list[dict]:
    r = run_cli("--json", "doctor", vault=vault)
    return json.loads(r.stdout)["findings"]


def test_forced_archive_names_what_it_leaves_and_doctor_reports_it(vault) -> None:
    src = _register(vault, "source work", "2026-06-01T09:30")
    cur = _register(vault, "follow-up work", "2026-06-01T09:31")
    assert run_cli("continue", src, "--session", cur, vault=vault).returncode == 0
    assert not [f for f in _doctor(vault) if f["kind"] in ("archived_reference", "unknown_reference")]

    r = run_cli("archive", src, "--force", vault=vault)
    assert r.returncode == 0, r.stderr
    assert f"{cur} continues from {src}: release it with `agentmem release {src} --session {cur}`" in r.stdout
    js = run_cli("--json", "archive", cur, "--force", "--dry-run", vault=vault)
    assert json.loads(js.stdout)["left_references"] == []

    found = [f for f in _doctor(vault) if f["kind"] == "archived_reference"]
    assert [(f["session_id"], f["message"]) for f in found] == [
        (cur, f"memory/sessions/{cur}.md continues from {src}, which is archived")
    ]
    assert f"agentmem release {src} --session {cur}" in found[0]["hint"]
    # the offered release clears it
    assert run_cli("release", src, "--session", cur, vault=vault).returncode == 0
    assert not [f for f in _doctor(vault) if f["kind"] == "archived_reference"]


def test_doctor_reports_references_to_missing_and_archived_sessions(vault) -> None:
    src = _register(vault, "source work", "2026-06-01T09:30")
    cur = _register(vault, "follow-up work", "2026-06-01T09:31")
    assert run_cli("continue", src, "--session", cur, vault=vault).returncode == 0
    ghost = "2026-05-01-0900-cursor-main-agent"
    text = vault.session_path(cur).read_text(encoding="utf-8")
    vault.session_path(cur).write_text(text.replace(f"[[{src}]]", f"[[{src}]]\n- [[{ghost}]]"), encoding="utf-8")
    kinds = {(f["kind"], f["session_id"]) for f in _doctor(vault)}
    assert ("unknown_reference", cur) in kinds  # Continues From a session that exists nowhere
    assert run_cli("archive", cur, "--force", vault=vault).returncode == 0  # the referencing one
    assert not [f for f in _doctor(vault) if f["kind"] == "archived_reference"]
