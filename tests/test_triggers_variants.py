"""say: the phrases people type without the word "memory", and that no phrase routes to two commands."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem_vault.errors import UsageError
from agentmem_vault.model.triggers import (
    COMMANDS,
    Phrase,
    load_phrases,
    match_key,
    phrase_groups,
    phrases_from_table,
    route,
)

SID = "2026-05-25-1318-cursor-main-agent"
PHRASES = load_phrases()

# Written by hand (not read from the table): what people actually typed in the first hour.
EVERYDAY = {
    "整理記憶": "organize",
    "整理记忆": "organize",
    "清理記憶": "organize",
    "organize": "organize",
    f"歸檔 {SID}": "archive",
    f"归档 {SID}": "archive",
    f"封存 {SID}": "archive",
    f"archive {SID}": "archive",
    f"繼續 {SID}": "continue",
    f"继续 {SID}": "continue",
    f"接續 {SID}": "continue",
    f"continue {SID}": "continue",
    f"釋放 {SID}": "release",
    f"释放 {SID}": "release",
    f"解除引用 {SID}": "release",
    f"release {SID}": "release",
    "更新狀態": "update",
    "更新状态": "update",
    "update session": "update",
    "補註冊": "register",
    "补注册": "register",
    "register session": "register",
    # The procedure's phrases keep their meaning next to the variants.
    "整理這個 session": "update",
    "整理这个session": "update",
    "整理 memory": "organize",
    "解除引用 memory": "release",
    "引用 memory": "continue",
    "取消引用 memory": "release",
    "organize this session": "update",
}


@pytest.mark.parametrize("text,command", sorted(EVERYDAY.items()))
def test_everyday_phrases_route(text: str, command: str) -> None:
    r = route(text)
    assert r.command == command, (text, r)
    if SID in text:
        assert r.ids == (SID,)


def test_no_phrase_is_listed_under_two_commands() -> None:
    owner: dict[str, str] = {}
    for p in PHRASES:
        assert owner.setdefault(p.key, p.command) == p.command, p


def test_a_phrase_under_two_commands_is_refused() -> None:
    table = {"organize": [{"traditional": "整理記憶"}], "update": [{"simplified": "整理记忆", "variant": True}]}
    with pytest.raises(UsageError, match="both organize and update"):
        phrases_from_table(table)


def test_procedure_phrases_are_not_taken_over_by_variants() -> None:
    """Every phrase of the board procedure, typed alone, routes as it did before the variants."""
    procedure = [p for p in PHRASES if not p.variant]
    only_procedure = tuple(procedure)
    for p in procedure:
        assert route(p.text).command == route(p.text, only_procedure).command == p.command, p


phrase = st.sampled_from(PHRASES)


def _spell(p: Phrase, upper: bool, spaces: int) -> str:
    text = p.text.upper() if upper else p.text
    return text.replace(" ", " " * spaces) if spaces else text.replace(" ", "")


@settings(max_examples=300, deadline=None)
@given(p=phrase, upper=st.booleans(), spaces=st.integers(0, 3), id_before=st.booleans(), with_id=st.booleans())
def test_every_phrase_routes_to_exactly_its_command(
    p: Phrase, upper: bool, spaces: int, id_before: bool, with_id: bool
) -> None:
    """Any spelling of a phrase (case, spaces, script, a Session ID before or after) routes to one
    command - its own - and never fails as ambiguous."""
    text = _spell(p, upper, spaces)
    if with_id:
        text = f"{SID} {text}" if id_before else f"{text} {SID}"
    r = route(text)
    assert r.command == p.command
    assert r.ids == ((SID,) if with_id else ())


@settings(max_examples=400, deadline=None)
@given(a=phrase, b=phrase)
def test_two_phrases_of_different_commands_never_silently_pick_one(a: Phrase, b: Phrase) -> None:
    """Two phrases side by side: the same command, or a clear ambiguity error - unless one phrase is
    part of a longer one (then the longer one wins, which is the documented rule)."""
    text = f"{a.text} {b.text}"
    try:
        r = route(text)
    except UsageError as exc:
        assert exc.code == "ambiguous_phrase" and a.command != b.command
        return
    assert r.command in (a.command, b.command)
    if a.command != b.command:
        # Only possible when the winning phrase spans the join and so swallows part of both.
        joined, k = a.key + b.key, match_key(r.phrase)
        starts = [i for i in range(len(joined)) if joined.startswith(k, i)]
        assert any(i < len(a.key) < i + len(k) for i in starts), (text, r)


def test_help_lists_every_phrase_grouped_by_command(cli) -> None:
    proc = cli("say", "--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    groups = phrase_groups()
    assert [g[0] for g in groups] == [g[0] for g in groups if g[0] in out] and len(groups) == len(COMMANDS)
    positions = [out.index(line) for line, _ in groups]
    assert positions == sorted(positions)
    for p in PHRASES:
        assert p.text in out, p
    # The phrases sit under their own command's heading.
    for i, (_, entries) in enumerate(groups):
        end = positions[i + 1] if i + 1 < len(positions) else len(out)
        for forms in entries:
            assert " · ".join(forms) in out[positions[i] : end]


def test_unknown_phrase_is_one_short_line(cli, vault) -> None:
    proc = cli("say", "幫我煮咖啡", vault=vault)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and len(proc.stderr) < 200
    assert "agentmem say --help" in proc.stderr
