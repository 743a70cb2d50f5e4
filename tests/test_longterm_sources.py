"""Sources -> turns (broken lines skipped and counted), noise stripping, chunking."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.errors import InvalidSessionId, SessionNotFound, UsageError
from agentmem_vault.longterm.chunking import chunk_turns
from agentmem_vault.longterm.noise import strip_noise
from agentmem_vault.longterm.sources import (
    MAX_TURN_CHARS,
    Turn,
    discover_claude,
    discover_cursor,
    read_source,
    source_for_session,
    source_for_transcript,
)


def _jsonl(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def test_cursor_jsonl(tmp_path):
    p = _jsonl(
        tmp_path / ".cursor/projects/Users-me-code-shop/agent-transcripts/abc/abc.jsonl",
        [
            {
                "role": "user",
                "message": {
                    "content": [
                        {
                            "type": "text",
                            "text": "<user_info>OS: linux</user_info>\n<user_query>\n記住：用 pnpm\n</user_query>",
                        }
                    ]
                },
            },
            {
                "role": "assistant",
                "message": {
                    "content": [{"type": "text", "text": "好的"}, {"type": "tool_use", "name": "x", "input": {}}]
                },
            },
            "{not json",
            {"role": "system", "message": {"content": "x"}},
            [1, 2],
        ],
    )
    src = source_for_transcript(p)
    # the slug is never cut into a name: no folder on this machine matches it, so no project
    assert (src.kind, src.ref, src.project) == ("cursor", "cursor:abc", "")
    assert "Users-me-code-shop" in src.project_note
    rr = read_source(src)
    assert rr.turns == [Turn("user", "記住：用 pnpm"), Turn("assistant", "好的")]
    assert rr.skipped == 3
    assert [s.ref for s in discover_cursor(tmp_path)] == ["cursor:abc"]


def test_cursor_legacy_txt(tmp_path):
    p = tmp_path / ".cursor/projects/p/agent-transcripts/old.txt"
    p.parent.mkdir(parents=True)
    p.write_text("user:\n<user_query>\nAlways use ruff.\n</user_query>\n\nassistant:\nSure.\nMore.\n", encoding="utf-8")
    rr = read_source(source_for_transcript(p))
    assert rr.turns == [Turn("user", "Always use ruff."), Turn("assistant", "Sure.\nMore.")]


def test_claude_code_jsonl(tmp_path):
    p = _jsonl(
        tmp_path / ".claude/projects/-home-me-shop/1234-uuid.jsonl",
        [
            {"type": "summary", "summary": "Pnpm switch"},
            {"type": "user", "message": {"role": "user", "content": "From now on use pnpm."}},
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "OK."},
                        {"type": "tool_use", "id": "t", "name": "Bash", "input": {}},
                    ],
                },
            },
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "done"}],
                },
            },
            {
                "type": "user",
                "isMeta": True,
                "message": {"role": "user", "content": "<command-name>/clear</command-name>"},
            },
            {"type": "user", "message": "not a dict"},
            {"type": "file-history-snapshot"},
            "garbage",
        ],
    )
    src = source_for_transcript(p)
    assert src.kind == "claude" and src.ref == "claude:1234-uuid"
    rr = read_source(src)
    assert rr.turns == [Turn("user", "From now on use pnpm."), Turn("assistant", "OK.")]
    assert rr.skipped == 2 and rr.title == "Pnpm switch"
    assert [s.ref for s in discover_claude(tmp_path)] == ["claude:1234-uuid"]


def test_plain_text_and_markdown_roles(tmp_path):
    p = tmp_path / "chat.md"
    p.write_bytes(
        "\ufeff# Title\r\n\r\n**User:** 以後都用繁體中文\r\n\r\n**Assistant:** 好\r\n用戶：第二個問題\r\n".encode(
            "utf-8"
        )
    )
    rr = read_source(source_for_transcript(p))
    assert rr.title == "Title"
    assert rr.turns == [Turn("user", "以後都用繁體中文"), Turn("assistant", "好"), Turn("user", "第二個問題")]


def test_session_snapshot_source(vault):
    sid = "2026-05-25-1318-cursor-main-agent"
    vault.sessions_dir.mkdir(parents=True, exist_ok=True)
    vault.session_path(sid).write_text(
        f"# Session: {sid}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Topic | billing |\n\n## Current Context\n- 帳單模組重構\n\n"
        "## Decisions\n- 決定採用 event sourcing\n- [superseded] 用 CRUD\n\n## Next Actions\n- 寫測試\n\n## Continues From\nNone\n",
        encoding="utf-8",
    )
    src = source_for_session(vault, sid)
    assert src.ref == f"[[{sid}]]" and src.kind == "session"
    # every Decisions item is read, marked as such; a superseded one retires the note it produced
    assert read_source(src).turns == [
        Turn("user", "帳單模組重構"),
        Turn("user", "決定採用 event sourcing", section="decision"),
        Turn("user", "[superseded] 用 CRUD", section="superseded"),
    ]
    with pytest.raises(InvalidSessionId):
        source_for_session(vault, "../../etc")
    with pytest.raises(SessionNotFound):
        source_for_session(vault, "2026-05-25-1319-cursor-main-agent")
    with pytest.raises(UsageError):
        source_for_transcript(vault.root / "missing.jsonl")


def test_a_decision_cut_to_the_turn_limit_is_still_a_decision(vault):
    sid = "2026-05-25-1318-cursor-main-agent"
    vault.sessions_dir.mkdir(parents=True, exist_ok=True)
    long = "決定採用 event sourcing，" + "因為帳單要能重播" * 3000  # over MAX_TURN_CHARS
    vault.session_path(sid).write_text(
        f"# Session: {sid}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Topic | billing |\n| Updated At | 2026-05-25 13:18 |\n\n"
        f"## Decisions\n- {long}\n- [superseded] {long}\n\n## Continues From\nNone\n",
        encoding="utf-8",
    )
    rr = read_source(source_for_session(vault, sid))
    assert rr.cut == 2 and all(len(t.text) == MAX_TURN_CHARS for t in rr.turns)
    # the cut keeps what the turn is and when it was said (docs/reliability.md, "Limits")
    assert [(t.section, t.at) for t in rr.turns] == [
        ("decision", "2026-05-25T13:18"),
        ("superseded", "2026-05-25T13:18"),
    ]


def test_strip_noise():
    long_line = "log: " + "z" * 895
    text = (
        '<tool_call>{"cmd": "ls"}</tool_call> keep me\n'
        f"commit {'a1b2c3d4' * 5}\n"
        "img data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk\n"
        "blob QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3\n"
        "path src/components/settings/profile/AvatarUploader.tsx stays\n"
        f"{long_line}\n"
    )
    out = strip_noise(text)
    assert "[tool call] keep me" in out and "[hash]" in out and "[data uri]" in out and "blob [base64]" in out
    assert "src/components/settings/profile/AvatarUploader.tsx" in out
    assert "[truncated 900 chars]" in out and long_line not in out
    assert len(out) < len(text) * 0.5


def test_chunking_cuts_at_turn_boundaries_with_overlap():
    turns = [Turn("user" if i % 2 == 0 else "assistant", f"turn {i}\n" + ("x" * 99 + "\n") * 15) for i in range(40)]
    chunks = chunk_turns(turns, size=20_000, overlap=2_000)
    assert len(chunks) > 2
    for c in chunks:
        assert len(c.text) <= 20_000
        assert c.text.startswith(("User: turn", "Assistant: turn"))
    for a, b in zip(chunks, chunks[1:]):
        assert b.first_turn <= a.last_turn  # overlap: the next chunk repeats the last turn(s)
        assert b.first_turn > a.first_turn
        overlap = sum(len(t.text) for t in turns[b.first_turn : a.last_turn + 1])
        assert overlap <= 2_000
    assert chunks[0].first_turn == 0 and chunks[-1].last_turn == 39


def test_chunking_splits_an_oversized_turn():
    chunks = chunk_turns([Turn("user", ("line " * 30 + "\n") * 400)], size=5_000, overlap=500)
    assert len(chunks) >= 7 and all(len(c.text) <= 5_000 for c in chunks)
    assert chunk_turns([]) == []


def test_snapshot_decisions_never_become_always_on_rules(tmp_path) -> None:
    """A snapshot is the agent's record: '一律' in a Decision is a decision, not the user's rule."""
    from agentmem_vault.longterm.offline import RECORDED_MAX_IMPORTANCE, extract_offline
    from agentmem_vault.longterm.sources import snapshot_turns

    text = (
        "# Session: 2026-05-25-1318-cursor-main-agent\n\n## Current Context\n- hook 流程\n\n"
        "## Decisions\n- sessionStart 一律寫 idle，不建立 session 檔案。\n"
    )
    turns = snapshot_turns(text).turns
    assert turns[0].text == "hook 流程"
    as_record = extract_offline(turns, recorded=True)
    # the same words asked for in a chat are the user's rule (the field rules' importance)
    as_chat = extract_offline([Turn("user", f"記住：{turns[-1].text}")])
    assert as_record and as_chat
    assert max(m.importance for m in as_record) <= RECORDED_MAX_IMPORTANCE < 0.9 <= max(m.importance for m in as_chat)
    assert snapshot_turns("\x00 garbage").skipped == 1
