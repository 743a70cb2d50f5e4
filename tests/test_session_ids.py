"""Reliability: a Session ID once issued is never handed out again (docs/reliability.md)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime

import pytest
from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


from agentmem_vault.vault import Vault
from agentmem_vault.board import table as it
from agentmem_vault.model.ids import is_valid_session_id

NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}
WHEN = datetime(2026, 6, 1, 9, 30)


def board(v: Vault) -> list[str]:
    return it.parse_index(v.index_path.read_text(encoding="utf-8")).ids()


def organize_now(v: Vault) -> None:
    from agentmem_vault.ops.lifecycle import organize

    organize(v, now=WHEN)


def test_register_organize_register_never_repeats_an_id(vault: Vault) -> None:
    first = json.loads(run_cli("register", "--json", vault=vault, env=NOW).stdout)["session_id"]
    assert run_cli("organize", vault=vault, env=NOW).returncode == 0
    assert first not in board(vault)  # organize deleted the idle row
    second = json.loads(run_cli("register", "--json", vault=vault, env=NOW).stdout)["session_id"]
    assert second != first


def test_hooks_register_and_manual_mixed_never_repeat(vault: Vault) -> None:
    from agentmem_vault.board.register import register_idle
    from agentmem_vault.ops.sessions import register_manual

    issued: list[str] = []
    for round_ in range(4):
        issued.append(register_idle(vault, "cursor-main-agent", when=WHEN).session_id)
        issued.append(
            register_idle(vault, "cursor-main-agent", when=WHEN, command="hook cursor-session-start").session_id
        )
        organize_now(vault)
        if round_ % 2:
            issued.append(register_manual(vault, "cursor-main-agent").session_id)
    # register_manual uses the real clock: only same-agent IDs of the fixed minute can collide
    assert len(issued) == len(set(issued)), issued


def test_restore_and_archive_do_not_free_an_id(vault: Vault) -> None:
    from agentmem_vault.journal import restore_row
    from agentmem_vault.board.register import register_idle

    a = register_idle(vault, "a", when=WHEN).session_id
    organize_now(vault)
    restore_row(vault, a)
    organize_now(vault)
    b = register_idle(vault, "a", when=WHEN).session_id
    assert b != a


@pytest.mark.parametrize("lost", ["ledger", "state_dir"])
def test_lost_ledger_still_counts_journal_sessions_and_archive(vault: Vault, lost: str) -> None:
    from agentmem_vault.board.register import register_idle

    a = register_idle(vault, "a", when=WHEN).session_id
    organize_now(vault)  # row gone; only the journal (and ledger) remember a
    # a snapshot and an archive folder of the same minute also hold IDs
    (vault.sessions_dir / "2026-06-01-0930-a-7.md").write_text("x", encoding="utf-8")
    (vault.archive_dir / "2026-06-01-0930-a-8").mkdir(parents=True)
    if lost == "ledger":
        vault.issued_ids_path.unlink()
    else:
        shutil.rmtree(vault.state_dir)
    got = {register_idle(vault, "a", when=WHEN).session_id for _ in range(8)}
    assert "2026-06-01-0930-a-7" not in got and "2026-06-01-0930-a-8" not in got
    if lost == "ledger":  # the journal survived and still counts
        assert a not in got
    assert vault.issued_ids_path.is_file()


def test_ledger_is_append_only_and_survives_doctor(vault: Vault) -> None:
    from agentmem_vault.board.register import register_idle

    ids = [register_idle(vault, "a", when=WHEN).session_id for _ in range(3)]
    lines = vault.issued_ids_path.read_text(encoding="utf-8").split()
    assert lines[-3:] == ids
    assert run_cli("doctor", "--fix", vault=vault).returncode in (0, 1)
    assert vault.issued_ids_path.read_text(encoding="utf-8").split()[-3:] == ids


@pytest.mark.parametrize("bad", ["2026-13-45-9999-x", "2026-02-30-0930-x", "2026-06-01-2460-x", "0000-01-01-0000-x"])
def test_impossible_id_dates_are_not_session_ids(bad: str) -> None:
    assert not is_valid_session_id(bad)


def test_possible_dates_still_valid() -> None:
    assert is_valid_session_id("2024-02-29-2359-x")
    assert is_valid_session_id("2026-06-01-0930-cursor-main-agent-2")


def test_agent_names_are_checked_whole() -> None:
    """A trailing newline once passed the agent-name rule (a regex ``$`` matches before it) and
    would have broken the row it named; the rule now checks every character (docs/board.md)."""
    from agentmem_vault.errors import UsageError
    from agentmem_vault.model.ids import validate_agent_name

    assert validate_agent_name("cursor-main-agent") == "cursor-main-agent"
    assert validate_agent_name("a" * 64) == "a" * 64
    for bad in ("cursor\n", "", "-x", "Cursor", "a" * 65, "x y", "é", "a/b", "a_b"):
        with pytest.raises(UsageError):
            validate_agent_name(bad)


def test_a_session_id_with_a_final_newline_is_not_one() -> None:
    from agentmem_vault.model.ids import is_valid_session_id

    assert is_valid_session_id("2026-05-01-0930-cursor-main-agent")
    assert not is_valid_session_id("2026-05-01-0930-cursor-main-agent\n")


@pytest.mark.parametrize("how", ["organize", "remove_row"])
def test_a_removed_row_burns_its_id_even_if_its_ledger_line_was_lost(vault: Vault, how: str) -> None:
    """The registration's ledger line is not fsynced (docs/reliability.md): a power cut may lose
    it while the fsynced row survives. Whoever removes that row later writes the ID to the
    ledger, fsynced, before the table, so it is never handed out again."""
    from agentmem_vault.board.register import register_idle
    from agentmem_vault.board.store import BoardWriter

    a = register_idle(vault, "a", when=WHEN).session_id
    ledger = vault.issued_ids_path
    ledger.write_bytes(ledger.read_bytes().replace((a + "\n").encode(), b""))  # the lost line
    (vault.state_dir / "conversations.jsonl").unlink(missing_ok=True)
    if how == "organize":
        organize_now(vault)
    else:
        with BoardWriter(vault, "test") as w:
            w.remove_row(a)
    assert a in ledger.read_text(encoding="utf-8").split()
    for jf in vault.state_dir.glob("journal*.jsonl"):  # not even the journal is needed
        jf.unlink()
    assert register_idle(vault, "a", when=WHEN).session_id != a


def test_session_ids_with_prefix_reads_the_field_as_json_does(vault: Vault) -> None:
    """The byte search of ``PairScan`` for this minute's IDs finds what parsing every line would."""
    from agentmem_vault.ops.conversations import PairScan

    base = "2026-06-01-0930-a"
    lines = [
        {"conversation_id": "c1", "session_id": base},
        {"conversation_id": "c2", "session_id": base + "-2", "note": base + "-9"},
        {"conversation_id": base + "-5", "session_id": "2026-06-01-0931-a"},  # the prefix elsewhere only
        {"conversation_id": "c4", "session_id": "2026-06-01-0930-ab"},  # same characters, other agent
    ]
    text = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in lines)
    text += json.dumps({"conversation_id": "c5", "session_id": base + "-3"}, separators=(",", ":")) + "\n"
    text += "{broken line " + base + "-7\n"
    want = {
        o["session_id"]
        for o in (json.loads(ln) for ln in text.splitlines() if ln.startswith("{") and ln.endswith("}"))
        if o["session_id"].startswith(base)
    }
    assert PairScan(vault, text.encode("utf-8"), prefix=base).read().ids == want
    assert want == {base, base + "-2", base + "-3", "2026-06-01-0930-ab"}


def test_a_rolled_back_removal_keeps_its_ledger_line(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger is append-only: a rollback restores the board but never takes back the removed
    rows' IDs. Had it (the ledger is restored before the board), a board restore that fails (a
    full disk) or a power cut between the two would leave the ID neither on the board nor in the
    ledger when its registration line was lost (docs/reliability.md)."""
    from agentmem_vault import writer
    from agentmem_vault.errors import WriteFailed
    from agentmem_vault.board.register import register_idle
    from agentmem_vault.board.store import BoardWriter

    a = register_idle(vault, "a", when=WHEN).session_id
    ledger = vault.issued_ids_path
    ledger.write_bytes(ledger.read_bytes().replace((a + "\n").encode(), b""))  # the lost line
    (vault.state_dir / "conversations.jsonl").unlink(missing_ok=True)
    real = writer.atomic_write_bytes
    disk_full = False

    def board_restore_fails(path, data):  # noqa: ANN001, ANN202
        if disk_full and path == vault.index_path:
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(writer, "atomic_write_bytes", board_restore_fails)
    with pytest.raises(WriteFailed), BoardWriter(vault, "test") as w, w.transaction():
        w.remove_row(a)
        disk_full = True
        raise OSError(28, "No space left on device")  # a later step of the operation fails
    monkeypatch.undo()
    assert a not in board(vault)  # the board could not be restored
    assert a in ledger.read_text(encoding="utf-8").split()
    assert register_idle(vault, "a", when=WHEN).session_id != a
