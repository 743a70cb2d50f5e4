"""Board rows without the outer pipes (valid GFM) are rows: read, kept byte for byte, reported by
`doctor`, and never hidden from ID issuing (docs/board.md)."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault
from conftest import run_cli
from hooks_helpers import cursor_start

NOW = "2026-06-01T09:30"
SID = "2026-06-01-0930-cursor-main-agent"
CELLS = f"{SID} | cursor-main-agent | 手寫 | s | k | idle | - | 2026-06-01 09:30 | 2026-06-01 09:30"
FORMS = {
    "no outer pipes": CELLS,
    "trailing only": CELLS + " |",
}


def board_with(line: str, *, crlf: bool = False) -> str:
    nl = "\r\n" if crlf else "\n"
    return "# Memory Index" + nl + nl + it.header_lines(nl) + line + nl


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("crlf", [False, True])
def test_a_row_without_outer_pipes_is_a_row(form: str, crlf: bool) -> None:
    text = board_with(FORMS[form], crlf=crlf)
    doc = it.parse_index(text)
    assert not doc.bad and doc.ids() == [SID] and doc.get(SID).topic == "手寫"
    assert doc.render() == text


def test_a_header_and_separator_without_outer_pipes_are_the_table() -> None:
    text = "# Memory Index\n\n" + " | ".join(it.COLUMNS) + "\n" + "|".join(["---"] * 9) + "\n" + CELLS + "\n"
    doc = it.parse_index(text)
    assert not doc.bad and doc.ids() == [SID]
    new = it.edit_table(doc, {}, [doc.get(SID).with_(session_id=SID + "-2")])
    assert it.parse_index(new).ids() == [SID, SID + "-2"] and new.startswith(text)


def test_prose_with_a_pipe_after_the_table_is_not_a_row() -> None:
    text = board_with("| " + CELLS + " |") + "see a | b for details\n"
    doc = it.parse_index(text)
    assert not doc.bad and doc.ids() == [SID]
    doc.check_writable()


@pytest.mark.parametrize("form", sorted(FORMS))
def test_list_shows_it_and_register_never_reissues_its_id(vault: Vault, form: str) -> None:
    vault.index_path.write_text(board_with(FORMS[form]), encoding="utf-8")
    env = {"AGENTMEM_NOW": NOW}
    out = json.loads(run_cli("list", "--json", vault=vault, env=env).stdout)
    assert [r["session_id"] for r in out["rows"]] == [SID]
    reg = json.loads(run_cli("register", "--json", vault=vault, env=env).stdout)
    assert reg["session_id"] == SID + "-2"
    text = vault.index_path.read_text(encoding="utf-8")
    assert FORMS[form] + "\n" in text  # the hand-written row kept byte for byte


def _chat_starts(vault: Vault, folder, conversation: str) -> str:
    """The sessionStart hook for a new chat; its additional_context."""
    proc = run_cli(
        "hook",
        "cursor-session-start",
        "--vault",
        str(vault.root),
        input=json.dumps(cursor_start(folder, conversation)),
        env={"AGENTMEM_NOW": NOW},
    )
    return str(json.loads(proc.stdout)["additional_context"])


def test_the_hook_with_a_cached_summary_never_reissues_its_id(vault: Vault, tmp_path) -> None:
    assert SID in _chat_starts(vault, tmp_path, "c-1")  # the board summary is cached now
    # A person (or Obsidian) adds a row in the same minute, without the outer pipes.
    with vault.index_path.open("a", encoding="utf-8") as fh:
        fh.write(CELLS.replace(SID, SID + "-2") + "\n")
    ctx = _chat_starts(vault, tmp_path, "c-2")
    assert f"Your Memory Session ID is: {SID}-3" in ctx, ctx
    ids = it.parse_index(vault.index_path.read_text(encoding="utf-8")).ids()
    assert ids == [SID, SID + "-2", SID + "-3"]


def test_doctor_reports_it_and_fix_writes_the_pipes(vault: Vault) -> None:
    vault.index_path.write_text(board_with(CELLS), encoding="utf-8")
    rep = json.loads(run_cli("doctor", "--json", vault=vault).stdout)
    kinds = [f["kind"] for f in rep["findings"]]
    assert "row_without_outer_pipes" in kinds, rep
    assert run_cli("doctor", "--fix", vault=vault).returncode in (0, 1)
    doc = it.parse_index(vault.index_path.read_text(encoding="utf-8"))
    assert doc.ids() == [SID] and doc.lines[doc.row_ids[0][0]].startswith("| " + SID)
    rep = json.loads(run_cli("doctor", "--json", vault=vault).stdout)
    assert "row_without_outer_pipes" not in [f["kind"] for f in rep["findings"]]
