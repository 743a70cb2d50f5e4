"""No secret reaches the vault (docs/redaction.md): a snapshot, a transcript, a remembered note and
a row each carrying every kind of secret, then the whole of memory/ (tool state, journal and
archive included) is searched byte by byte; and redaction never breaks a write."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentmem_vault.board.table import parse_index
from tests.conftest import run_cli
from tests.redaction_helpers import SECRETS, all_secrets_text, secret_values


def _leaks(vault) -> list[tuple[str, str]]:
    found = []
    for dirpath, _dirs, files in os.walk(vault.memory):
        for name in files:
            data = (Path(dirpath) / name).read_bytes()
            for value in secret_values():
                if value.encode("utf-8") in data:
                    found.append((str(Path(dirpath, name).relative_to(vault.root)), value))
    return found


def test_no_secret_is_found_anywhere_under_memory(vault, tmp_path: Path, monkeypatch) -> None:
    env = {"AGENTMEM_NOW": "2026-06-01T09:30"}
    one_line = all_secrets_text(" ; ").replace("\n", " ")
    snap = (
        "## Current Context\nDeploying the API.\n\n"
        + all_secrets_text("\n\n")
        + "\n\n## Decisions\n"
        + "".join(f"- use {t.splitlines()[0]}\n" for t, _ in SECRETS.values())
    )
    reg = run_cli("--json", "register", "--manual", "--snapshot", "-", vault=vault, input=snap, env=env)
    assert reg.returncode == 0, reg.stdout + reg.stderr
    sid = json.loads(reg.stdout)["session_id"]
    # a row carrying every secret, through update's one-line fields
    env["AGENTMEM_NOW"] = "2026-06-01T10:00"
    up = run_cli("update", sid, "--summary", one_line, "--keywords", one_line[:400], vault=vault, env=env)
    assert up.returncode == 0, up.stderr
    # a second merge of the same secrets: compared redacted to redacted, nothing doubles
    again = run_cli("--json", "update", sid, "--snapshot", "-", vault=vault, input=snap, env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["marked"] == [], again.stdout
    # a transcript
    transcript = tmp_path / "chat.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": f"Remember: always deploy with {t}"}}
        for t, _ in SECRETS.values()
    ]
    transcript.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    ex = run_cli("extract", "--offline", "--file", str(transcript), vault=vault, env=env)
    assert ex.returncode == 0, ex.stderr
    # a remembered note
    from agentmem_vault.longterm.remember import remember

    monkeypatch.setenv("AGENTMEM_NOW", "2026-06-01T11:00")
    remember(vault, "Remember that the staging credentials are " + one_line, offline=True)
    # the archive and the journal copies
    assert run_cli("archive", sid, vault=vault).returncode == 0
    assert _leaks(vault) == []
    archived = (vault.archive_path(sid) / "session.md").read_text(encoding="utf-8")
    assert "[REDACTED:aws-key]" in archived and "[REDACTED:private-key]" in archived
    assert "Deploying the API." in archived  # the rest is untouched


def test_redaction_never_breaks_a_write_and_keeps_the_row_readable(vault) -> None:
    r = run_cli("--json", "register", "--manual", "--topic", "db password=Tr0ub4dor&3x | pipes", vault=vault)
    assert r.returncode == 0, r.stdout + r.stderr
    sid = json.loads(r.stdout)["session_id"]
    row = parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid)
    assert row.topic == "db password=[REDACTED:password] | pipes"
    snap = vault.session_path(sid).read_text(encoding="utf-8")
    assert "Tr0ub4dor" not in snap and "[REDACTED:password]" in snap
    assert json.loads(run_cli("--json", "doctor", vault=vault).stdout)["ok"] is True


def test_doctor_finds_secrets_already_stored_and_fix_redacts_them_with_a_backup_outside(vault) -> None:
    from agentmem_vault.ops.doctor.secrets import backup_root

    reg = run_cli("--json", "register", "--manual", "--topic", "plain", vault=vault)
    sid = json.loads(reg.stdout)["session_id"]
    # written before redaction existed (or by hand, or by a sync): a snapshot, the board, the journal
    snap = vault.session_path(sid)
    snap.write_text(snap.read_text(encoding="utf-8") + "\n" + all_secrets_text() + "\n", encoding="utf-8")
    idx = vault.index_path.read_text(encoding="utf-8")
    vault.index_path.write_text(idx.replace("| 手動補註冊", "| db password=Tr0ub4dor&3x 手動補註冊"), encoding="utf-8")
    with open(vault.journal_path, "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"time": "2026-01-01T00:00:00", "before_text": all_secrets_text()}, ensure_ascii=False) + "\n"
        )
    before_snap = snap.read_bytes()
    assert _leaks(vault)

    found = json.loads(run_cli("--json", "doctor", vault=vault).stdout)["findings"]
    paths = {f["path"] for f in found if f["kind"] == "secret_stored"}
    assert paths == {f"memory/sessions/{sid}.md", "memory/index.md", "memory/.agentmem/journal.jsonl"}, found

    fixed = run_cli("--json", "doctor", "--fix", vault=vault)
    out = json.loads(fixed.stdout)
    assert _leaks(vault) == [], out
    assert not [f for f in out["findings"] if f["kind"] == "secret_stored" and not f.get("fixed")]
    backup = Path(out["secret_backup"])
    assert backup.is_relative_to(backup_root(vault)) and not backup.is_relative_to(vault.root)
    assert (backup / "sessions" / f"{sid}.md").read_bytes() == before_snap  # the original, kept outside
    assert "| db password=[REDACTED:password] 手動補註冊" in vault.index_path.read_text(encoding="utf-8")
    for line in vault.journal_path.read_text(encoding="utf-8").splitlines():
        json.loads(line)  # the journal is still JSON lines
    assert json.loads(run_cli("--json", "doctor", vault=vault).stdout)["ok"] is True


def test_no_secret_typed_in_a_chat_reaches_its_conversation_pairs_queue_or_audit(vault, tmp_path: Path) -> None:
    """A Claude Code chat carrying secrets everywhere a chat reaches the vault (docs/redaction.md):
    its workspace folder and start source (the conversation pair the sessionStart hook records),
    every prompt (the prompt hook and its injection audit), its transcript (the session end hook's
    extraction queue line, then `extract --claude`'s notes). Each real hook process gets real JSON
    on stdin; afterwards nothing under memory/ holds a secret, and every record was made."""
    from tests.hooks_helpers import claude_start, run_hook

    key, token = SECRETS["aws-key"][1], SECRETS["github-token"][0].split()[-1]
    work = tmp_path / f"deploy-{key}"
    work.mkdir()
    conv = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
    transcript = Path.home() / ".claude" / "projects" / "-work-deploy" / f"{conv}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    turns = [
        {"type": "user", "cwd": str(work), "message": {"role": "user", "content": f"Remember: always deploy with {t}"}}
        for t, _ in SECRETS.values()
    ]
    transcript.write_text("\n".join(json.dumps(t, ensure_ascii=False) for t in turns) + "\n", encoding="utf-8")
    args = ["--vault", str(vault.root)]
    start = claude_start(work, sid=conv, source=f"startup {token}", transcript_path=str(transcript))
    assert run_hook("claude-session-start", start, cwd=work, args=args).returncode == 0
    for text, _ in SECRETS.values():
        prompt = {**start, "hook_event_name": "UserPromptSubmit", "prompt": f"deploy now, the key is {text}"}
        assert run_hook("claude-user-prompt", prompt, cwd=work, args=args).returncode == 0
    end = {**start, "hook_event_name": "SessionEnd", "reason": "exit"}
    assert run_hook("claude-session-end", end, cwd=work, args=args).returncode == 0
    assert run_cli("extract", "--offline", "--claude", vault=vault).returncode == 0

    pair = json.loads((vault.state_dir / "conversations.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert pair["conversation_id"] == conv and "[REDACTED:aws-key]" in pair["workspace"], pair
    assert "[REDACTED:" in pair["source"] and pair["project"] == "deploy-[REDACTED:aws-key]", pair
    queued = (vault.state_dir / "extract-queue.jsonl").read_text(encoding="utf-8")
    assert conv in queued and str(transcript) in queued
    assert any(vault.longterm_dir.glob("*.md"))
    assert _leaks(vault) == []
