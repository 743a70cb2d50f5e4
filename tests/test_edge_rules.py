"""Edge rules no other test reached (docs/reliability.md): a bad AGENTMEM_NOW, settings that are not
UTF-8, an issued-IDs ledger that cannot be written, an unusable board summary, a write that does
not read back, a lone surrogate in the journal. The user sees one clear line and the tool's exit
code (1 refused or failed, 2 usage); nothing is lost or half-written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from hooks_helpers import answer, cursor_start, failure_note, hooks_log, id_from, rows, run_hook
from test_journal_damage import GOOD

from agentmem_vault.board import summary
from agentmem_vault.vault import Vault

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
SID = "2026-06-01-0930-cursor-main-agent"


def _one_line_error(p, code: int = 1) -> str:  # noqa: ANN001 - a CompletedProcess
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    return lines[0]


def _files(vault: Vault) -> dict[str, bytes]:
    """Every file of the vault's board and snapshots (what a refused command must leave alone)."""
    mem = vault.root / "memory"
    return {
        str(p.relative_to(mem)): p.read_bytes()
        for p in sorted(mem.rglob("*"))
        if p.is_file() and ".agentmem" not in p.parts
    }


# 1. AGENTMEM_NOW: not a time, an impossible date, a time an offset carries out of range.
BAD_NOW = ["yesterday", "2026-02-30T10:00", "9999-12-31T23:59-12:00", "0001-01-01T00:00+14:00"]


@pytest.mark.parametrize("bad", BAD_NOW)
@pytest.mark.parametrize("command", ["register", "update", "context"])
def test_bad_agentmem_now_is_a_clear_error(vault: Vault, bad: str, command: str) -> None:
    assert run_cli("register", "--manual", "--summary", "first", vault=vault, env=NOW).returncode == 0
    before = _files(vault)
    args = {
        "register": ["register", "--manual", "--summary", "s"],
        "update": ["update", SID, "--summary", "changed"],
        "context": ["context", "anything"],
    }[command]
    line = _one_line_error(run_cli(*args, vault=vault, env={"AGENTMEM_NOW": bad}))
    assert "AGENTMEM_NOW" in line and bad in line
    assert _files(vault) == before


@pytest.mark.parametrize("bad", BAD_NOW)
def test_bad_agentmem_now_hook_answers_with_its_fallback(vault: Vault, tmp_path: Path, bad: str) -> None:
    proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=tmp_path, env={"AGENTMEM_NOW": bad})
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert failure_note(answer(proc)) and b"Session ID" not in proc.stdout
    assert "config_error" in hooks_log(vault)[0] and rows(vault) == []


# 3. Settings files that are not UTF-8 (latin-1 bytes; UTF-16 as Windows Notepad saves "Unicode").
NOT_UTF8 = {"latin-1": "stale_days: 30  # café\n".encode("latin-1"), "utf-16": "stale_days: 30\n".encode("utf-16")}


@pytest.mark.parametrize("enc", sorted(NOT_UTF8))
@pytest.mark.parametrize("which", ["vault", "user"])
def test_settings_not_utf8_register_refuses_and_names_the_file(vault: Vault, enc: str, which: str) -> None:
    import os

    path = vault.config_path if which == "vault" else Path(os.environ["AGENTMEM_CONFIG_DIR"]) / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(NOT_UTF8[enc])
    before = _files(vault)
    line = _one_line_error(run_cli("register", "--manual", "--summary", "s", vault=vault, env=NOW))
    assert str(path) in line and "not UTF-8" in line
    assert _files(vault) == before and path.read_bytes() == NOT_UTF8[enc]


@pytest.mark.parametrize(
    "data,why",
    [(NOT_UTF8["latin-1"], "not UTF-8"), (NOT_UTF8["utf-16"], "not UTF-8"), (b'stale_days: "x"\n', "stale_days")],
)
def test_settings_not_utf8_doctor_reports_it(vault: Vault, data: bytes, why: str) -> None:
    """A config.yaml that makes every command refuse the vault is a problem doctor names."""
    vault.config_path.write_bytes(data)
    p = run_cli("doctor", vault=vault, env=NOW)
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert "config.yaml" in p.stdout and why in p.stdout and "healthy" not in p.stdout
    assert vault.config_path.read_bytes() == data


@pytest.mark.parametrize("enc", sorted(NOT_UTF8))
def test_settings_not_utf8_hook_still_registers(vault: Vault, tmp_path: Path, enc: str) -> None:
    """The hook falls back to the defaults (SPEC: it never breaks the chat) and logs why."""
    vault.config_path.write_bytes(NOT_UTF8[enc])
    sid = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root), cwd=tmp_path)))
    assert [r.session_id for r in rows(vault)] == [sid]
    assert "not UTF-8" in hooks_log(vault)[0] and "defaults used" in hooks_log(vault)[0]
    assert vault.config_path.read_bytes() == NOT_UTF8[enc]


@pytest.mark.parametrize("enc", sorted(NOT_UTF8))
def test_user_settings_not_utf8_doctor_and_hook_name_the_file(vault: Vault, tmp_path: Path, enc: str) -> None:
    """The user config is read before any vault is known: doctor refuses in one line, the hook
    answers with its one-line failure note; both name the file, neither changes it."""
    import os

    path = Path(os.environ["AGENTMEM_CONFIG_DIR"]) / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(NOT_UTF8[enc])
    line = _one_line_error(run_cli("doctor", vault=vault, env=NOW))
    assert str(path) in line and "not UTF-8" in line
    proc = run_hook("cursor-session-start", cursor_start(vault.root), cwd=tmp_path)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    note = failure_note(answer(proc))
    assert note and str(path) in note and "not UTF-8" in note
    assert rows(vault) == [] and path.read_bytes() == NOT_UTF8[enc]


# 4. The issued-IDs ledger cannot be written: refused, and no ID is ever issued twice.
def _ledger_read_only(vault: Vault) -> None:
    vault.issued_ids_path.chmod(0o444)


def _ledger_is_a_folder(vault: Vault) -> None:
    vault.issued_ids_path.unlink()
    vault.issued_ids_path.mkdir()
    (vault.issued_ids_path / "x").write_text("x", encoding="utf-8")


def _state_folder_read_only(vault: Vault) -> None:
    vault.state_dir.chmod(0o555)  # the ledger file itself stays writable: appending to it is allowed


@pytest.mark.parametrize("damage", [_ledger_read_only, _ledger_is_a_folder, _state_folder_read_only])
def test_unwritable_ledger_refuses_or_issues_a_safe_id(vault: Vault, damage) -> None:  # noqa: ANN001
    """A removed row's ID stays burned: the next ID is refused clearly or is a fresh one, recorded."""
    assert id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root), cwd=vault.root))) == SID
    assert run_cli("organize", vault=vault, env=NOW).returncode == 0
    assert rows(vault) == [] and not vault.session_path(SID).exists()  # only the ledger (and journal) name it
    ledger = vault.issued_ids_path.read_bytes()
    damage(vault)
    before = _files(vault)
    p = run_cli("register", "--manual", "--summary", "b", vault=vault, env=NOW)
    vault.state_dir.chmod(0o755)
    if damage is _state_folder_read_only and p.returncode == 0:  # as root; a user may be refused below
        assert p.stdout and p.stdout.split()[-1] == f"{SID}-2", p.stdout + p.stderr
        assert vault.issued_ids_path.read_bytes() == ledger + f"{SID}-2\n".encode()
        return
    line = _one_line_error(p)
    assert "issued-ids" in line or damage is _state_folder_read_only
    assert _files(vault) == before
    if vault.issued_ids_path.is_dir():
        shutil.rmtree(vault.issued_ids_path)
        vault.issued_ids_path.write_bytes(ledger)
    vault.issued_ids_path.chmod(0o644)
    again = run_cli("register", "--manual", "--summary", "c", vault=vault, env=NOW)
    assert again.returncode == 0 and again.stdout.split()[-1] == f"{SID}-2", again.stdout


# 5. start_chat falls back to a full parse when the board summary is unusable. The summaries
# below lie (no row in the newest minute): trusted, they would register the known chat again.
@pytest.mark.parametrize("kind", ["junk", "version", "other board"])
def test_unusable_board_summary_hook_registers_correctly(vault: Vault, tmp_path: Path, kind: str) -> None:
    known = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="A"), cwd=tmp_path)))
    snap = "## Current Context\nWork.\n"
    assert run_cli("update", known, "--snapshot", "-", vault=vault, input=snap, env=NOW).returncode == 0  # a rewrite
    cache = summary.cache_path(vault)
    body = json.loads(cache.read_text(encoding="utf-8"))
    assert body["data"]["stamp_ids"] == [known]
    body["data"]["stamp_ids"] = []
    if kind == "version":
        body["v"] = summary.VERSION + 1
    elif kind == "other board":
        body["data"]["crc"] ^= 1  # the summary of a board of the same size with other bytes
    cache.write_text(json.dumps(body), encoding="utf-8")
    if kind == "junk":
        cache.write_bytes(b'{"v": %d, "of": 12, "data": {"rows": [' % summary.VERSION)
    again = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="A"), cwd=tmp_path)))
    assert again == known  # the known chat is found again, not registered twice
    new = id_from(answer(run_hook("cursor-session-start", cursor_start(vault.root, conv="B"), cwd=tmp_path)))
    assert new != known
    assert [r.session_id for r in rows(vault)] == [known, new]


# 6. A board write that does not read back: the error, and the old board intact.
def test_append_that_does_not_verify_leaves_the_board(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmem_vault.board import store

    assert run_cli("register", "--manual", "--summary", "a", vault=vault, env=NOW).returncode == 0
    before = _files(vault)
    monkeypatch.setattr(store, "read_from", lambda path, start: b"| not what was written |\n")
    line = _one_line_error(run_cli("register", "--manual", "--summary", "b", vault=vault, env=NOW))
    assert "did not verify" in line
    assert _files(vault) == before


def test_rewrite_that_does_not_verify_leaves_the_board(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmem_vault.board import store

    assert run_cli("register", "--manual", "--summary", "a", vault=vault, env=NOW).returncode == 0
    before = _files(vault)
    written: list[Path] = []
    real_write, real_read = store.atomic_write_text, store.read_text

    def write(path: Path, text: str, *a, **kw):  # noqa: ANN002, ANN003, ANN202
        written.append(path)
        return real_write(path, text, *a, **kw)

    def read(path: Path, *a, **kw):  # noqa: ANN002, ANN003, ANN202
        text = real_read(path, *a, **kw)
        return text + "| torn |\n" if written and path == vault.index_path else text

    monkeypatch.setattr(store, "atomic_write_text", write)
    monkeypatch.setattr(store, "read_text", read)
    line = _one_line_error(run_cli("update", SID, "--summary", "changed", vault=vault, env=NOW))
    assert "did not verify" in line
    assert written and _files(vault) == before


# 7. The journal's row holds a lone surrogate (valid JSON, not encodable text).
def test_restore_refuses_a_lone_surrogate(vault: Vault) -> None:
    row = {**GOOD, "topic": "t\ud800x"}
    entry = {"time": "2026-06-01T09:31:00", "command": "t", "action": "remove_row", "session_id": row["session_id"]}
    with vault.journal_path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({**entry, "before": row, "after": None}) + "\n")  # ASCII: \ud800 escaped
    before = _files(vault)
    line = _one_line_error(run_cli("restore", row["session_id"], vault=vault, env=NOW))
    assert "2026-06-01-0930-z" in line and "UTF-8" in line
    assert _files(vault) == before
