"""say: every trigger phrase of the product's phrase table, both Chinese scripts and English, to its command."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.errors import UsageError
from agentmem_vault.model.textnorm import fold
from agentmem_vault.model.triggers import load_phrases, phrase_groups, route

from lifecycle_helpers import NOW, index_rows, row, write_index

SID = "2026-05-25-1318-cursor-main-agent"
SID2 = "2026-05-26-0900-memory-agent"  # an agent name containing a phrase word

# Written out by hand from the product's phrase table (not read from the data file, so a wrong table fails).
SPEC = {
    "register": [
        ("註冊 memory session", "注册 memory session"),
        ("補註冊 memory", "补注册 memory"),
        ("手動註冊 memory", "手动注册 memory"),
    ],
    "update": [
        ("狀態更新", "状态更新"),
        ("memory session 狀態更新", "memory session 状态更新"),
        ("更新 memory session", "更新 memory session"),
        ("更新 memory 狀態", "更新 memory 状态"),
        ("整理這個 session", "整理这个 session"),
    ],
    "continue": [
        ("接續 memory", "接续 memory"),
        ("接續 memory session", "接续 memory session"),
        ("引用 memory", "引用 memory"),
        ("沿用 memory", "沿用 memory"),
    ],
    "release": [
        ("解除引用 memory", "解除引用 memory"),
        ("解除 memory 引用", "解除 memory 引用"),
    ],
    "organize": [("整理 memory", "整理 memory"), ("清理 memory", "清理 memory")],
    "archive": [("封存 memory session", "封存 memory session")],
}
ENGLISH = {
    "register memory session": "register",
    "update memory session": "update",
    "organize this session": "update",
    "continue memory": "continue",
    "release memory reference": "release",
    "unreference memory": "release",
    "organize memory": "organize",
    "clean memory": "organize",
    "archive memory session": "archive",
}

CASES = [
    (cmd, script, text)
    for cmd, pairs in SPEC.items()
    for pair in pairs
    for script, text in zip(("traditional", "simplified"), pair)
]


@pytest.mark.parametrize("command,script,text", CASES, ids=[f"{c}-{s}-{t}" for c, s, t in CASES])
def test_every_spec_phrase_routes(command, script, text):
    assert route(text).command == command
    # Spacing, case, width and surrounding words do not matter.
    assert route(text.replace(" ", "")).command == command
    assert route(f"請幫我{text.upper()}，謝謝").command == command
    r = route(f"{text} {SID}")
    assert r.command == command and r.ids == (SID,)


@pytest.mark.parametrize("text,command", sorted(ENGLISH.items()))
def test_english_forms(text, command):
    assert route(text).command == command
    assert route(f"Please {text.title()} {SID}.").command == command


def test_this_session_is_update_not_organize():
    assert route("整理這個 session").command == "update"
    assert route("整理这个session").command == "update"
    assert route("整理 memory").command == "organize"
    assert route("整理memory").command == "organize"
    assert route("organize this session").command == "update"
    assert route("organize memory").command == "organize"


def test_longest_phrase_wins():
    assert route("解除引用 memory").command == "release"  # contains 引用 memory (continue)
    assert route("unreference memory").command == "release"  # contains reference memory
    assert route("memory session 狀態更新").command == "update"


def test_full_width_and_ids_picked_out():
    r = route(f"ＡＲＣＨＩＶＥ　ＭＥＭＯＲＹ　ＳＥＳＳＩＯＮ {SID}")
    assert r.command == "archive" and r.ids == (SID,)
    r = route(f"接續 memory {SID} {SID2}")
    assert r.command == "continue" and r.ids == (SID, SID2)
    # An ID whose agent name contains 'memory' is not read as part of a phrase.
    with pytest.raises(UsageError):
        route(f"整理 {SID2}")


@pytest.mark.parametrize("text", ["", "hello", "memory", "整理", "整理 session", "記憶"])
def test_unknown_text_is_one_line_that_points_to_the_list(text):
    with pytest.raises(UsageError) as exc:
        route(text)
    assert exc.value.exit_code == 2
    assert "\n" not in exc.value.message and "agentmem say --help" in exc.value.message


def test_two_commands_in_one_text_are_ambiguous():
    with pytest.raises(UsageError, match="more than one command"):
        route("整理 memory 然後 封存 memory session")


def test_table_is_complete_and_consistent():
    phrases = load_phrases()
    by_cmd: dict[str, set[str]] = {}
    for p in phrases:
        by_cmd.setdefault(p.command, set()).add(p.text)
        assert route(p.text).command == p.command, p
    for cmd, pairs in SPEC.items():
        for trad, simp in pairs:
            assert {trad, simp} <= by_cmd[cmd]
            assert fold(trad) == fold(simp)
    assert set(ENGLISH) <= {p.text for p in phrases}
    assert any("封存 memory session" in forms for _, entries in phrase_groups() for forms in entries)


# -- CLI dispatch ---------------------------------------------------------------------------------


def test_cli_unknown_phrase_exits_2(cli, vault):
    proc = cli("say", "做點別的", vault=vault)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "agentmem say --help" in proc.stderr


def test_cli_say_organize_and_archive(cli, vault):
    write_index(
        vault,
        [row(SID, "idle"), row("2026-05-01-0900-cursor-main-agent", summary="有內容", updated="2026-05-02 09:00")],
    )
    proc = cli("say", "整理 memory", "--json", vault=vault, env={"AGENTMEM_NOW": NOW})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["command"] == "organize" and out["deleted"] == [SID]
    assert out["marked_stale"] == ["2026-05-01-0900-cursor-main-agent"]
    proc = cli("say", "封存 memory session 2026-05-01-0900-cursor-main-agent", vault=vault, env={"AGENTMEM_NOW": NOW})
    assert proc.returncode == 0, proc.stderr
    assert "→ archive)" in proc.stdout
    assert index_rows(vault) == {}
    assert vault.archive_path("2026-05-01-0900-cursor-main-agent").is_dir()


def test_cli_say_archive_needs_an_id(cli, vault):
    proc = cli("say", "封存 memory session", vault=vault)
    assert proc.returncode == 2 and "Session ID" in proc.stderr


def test_cli_say_update_without_session_explains_whoami(cli, vault):
    proc = cli("say", "狀態更新", vault=vault)
    assert proc.returncode == 2
    assert "agentmem whoami --conversation" in proc.stderr and "register --manual" in proc.stderr


def test_cli_say_register_refuses_known_id(cli, vault):
    proc = cli("say", f"註冊 memory session {SID}", vault=vault)
    assert proc.returncode == 2 and f"agentmem update {SID}" in proc.stderr


def test_cli_say_end_to_end_register_update_continue_release(cli, vault):
    env = {"AGENTMEM_NOW": NOW}
    snap = "## Current Context\n開始做 say 的端到端測試。\n\n## Decisions\n- 用繁體\n"
    proc = cli("say", "補註冊 memory", "--snapshot", "-", "--topic", "端到端", vault=vault, input=snap, env=env)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("Your Memory Session ID is: "))
    src = line.split(": ", 1)[1].strip()
    assert index_rows(vault)[src].status == "active" and vault.session_path(src).exists()

    proc = cli(
        "say", "整理這個 session", src, "--snapshot", "-", vault=vault, input="## Decisions\n- 加上 release\n", env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "加上 release" in vault.session_path(src).read_text(encoding="utf-8")
    assert "用繁體" in vault.session_path(src).read_text(encoding="utf-8")

    cur = "2026-06-01-0930-other-agent"
    write_index(vault, [index_rows(vault)[src], row(cur, "idle")])
    proc = cli("say", f"接续 memory {src}", "--session", cur, "--json", vault=vault, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["command"] == "continue"
    assert index_rows(vault)[src].referenced_by == cur

    proc = cli("say", f"解除引用 memory {src}", vault=vault, env={**env, "AGENTMEM_SESSION_ID": cur})
    assert proc.returncode == 0, proc.stderr
    assert index_rows(vault)[src].referenced_by == "-"
    assert src not in vault.session_path(cur).read_text(encoding="utf-8").split("## Continues From")[1]
