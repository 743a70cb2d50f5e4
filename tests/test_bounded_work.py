"""Bounded work (docs/reliability.md, "Limits"): size and depth limits checked before the work,
and linear algorithms where the input is a list. Deadlines here are the agent's own (Cursor kills
a hook after 10 s), generous for a loaded machine and far below what the old quadratic code took."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from agentmem_vault.board import table as it
from agentmem_vault.board.rules import fold_rows
from agentmem_vault.vault import Vault
from agentmem_vault.hooks.payloads import MAX_ROOTS, decode_stdin, parse_event
from agentmem_vault.longterm.sources import MAX_TURN_CHARS, read_source, source_for_transcript
from hooks_helpers import hook_env

HOOK_TIMEOUT = 10  # seconds Cursor waits for a hook


def test_fifty_thousand_workspace_roots_are_read_in_linear_time(tmp_path: Path) -> None:
    payload = {"conversation_id": "c-roots", "workspace_roots": [f"/w/r{i % 40000}" for i in range(50_000)]}
    start = time.monotonic()
    ev = parse_event(payload, "cursor", "session-start")
    assert time.monotonic() - start < 2
    assert len(ev.roots) == MAX_ROOTS and len(set(ev.roots)) == MAX_ROOTS
    assert ev.roots[0] == "/w/r0"


def test_the_hook_answers_fifty_thousand_roots_within_the_agents_timeout(vault: Vault, tmp_path: Path) -> None:
    roots = [str(vault.root)] + [str(tmp_path / f"r{i}") for i in range(50_000)]
    data = json.dumps({"conversation_id": "c-many", "workspace_roots": roots}).encode()
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "hook", "cursor-session-start"],
        input=data,
        capture_output=True,
        env=hook_env(),
        cwd=tmp_path,
        timeout=60,
    )
    took = time.monotonic() - start
    assert "Your Memory Session ID is:" in json.loads(proc.stdout)["additional_context"], proc.stderr
    assert took < HOOK_TIMEOUT, took


def test_json_nested_a_hundred_thousand_deep_is_a_payload_error() -> None:
    from agentmem_vault.errors import PayloadError

    for text in ("[" * 100_000, '{"a":' * 100_000):
        try:
            decode_stdin(text.encode())
        except PayloadError as exc:
            assert "nested" in exc.message or "not valid JSON" in exc.message
        else:
            raise AssertionError("accepted")


def test_a_transcript_line_nested_too_deep_is_skipped(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    ok = {"role": "user", "message": {"content": "Remember: always run pytest with -x."}}
    f.write_text("[" * 100_000 + "\n" + json.dumps(ok) + "\n", encoding="utf-8")
    res = read_source(source_for_transcript(f))
    assert [t.text for t in res.turns] == ["Remember: always run pytest with -x."] and res.skipped == 1


def test_a_ten_megabyte_transcript_line_is_cut_before_extraction(vault: Vault, tmp_path: Path, cli) -> None:
    words = "we always use pnpm instead of npm because the lockfile 我們 決定 使用 ".split()
    big = " ".join(words[i % len(words)] for i in range(1_000_000))  # about 10 MB of words
    f = tmp_path / "t.jsonl"
    lines = [
        {"role": "user", "message": {"content": [{"type": "text", "text": "Remember: always run pytest with -x."}]}},
        {"role": "user", "message": {"content": [{"type": "text", "text": big}]}},
    ]
    f.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    res = read_source(source_for_transcript(f))
    assert res.cut == 1 and max(len(t.text) for t in res.turns) == MAX_TURN_CHARS
    start = time.monotonic()
    proc = cli("extract", "--offline", "--file", str(f), "--json", vault=vault)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert took < 30, took  # it took 97-208 s before the cut


def _row(i: int, upd: str = "2026-06-01 09:30", topic: str = "t") -> it.Row:
    sid = f"2026-06-{1 + i // 1440:02d}-{(i // 60) % 24:02d}{i % 60:02d}-cursor-main-agent"
    return it.Row(sid, "cursor-main-agent", topic, "s", "k", "active", "-", "2026-06-01 09:30", upd)


def test_folding_a_conflict_copy_of_a_3000_row_board_is_linear() -> None:
    n = 3000
    index = it.new_index_text() + "".join(it.render_row(_row(i)) + "\n" for i in range(n))
    copy = [_row(i, "2026-06-09 10:00", "newer") if i % 2 else _row(i) for i in range(n)]
    copy += [_row(i) for i in range(n, n + 500)]
    start = time.monotonic()
    text, added, updated = fold_rows(index, copy)
    took = time.monotonic() - start
    assert took < 5, took  # a parse per row took 66 s
    doc = it.parse_index(text)
    assert not doc.bad and len(doc.ids()) == n + 500
    assert len(added) == 500 and len(updated) == n // 2
    assert doc.get(_row(1).session_id).topic == "newer" and doc.get(_row(0).session_id).topic == "t"
    assert text.startswith(index.split(it.render_row(_row(0)))[0])  # text above the table kept


def test_an_endless_stdin_is_refused_at_the_payload_limit_not_read_for_seconds(vault: Vault, tmp_path: Path) -> None:
    start = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "agentmem_vault", "hook", "cursor-session-start", "--vault", str(vault.root)],
            stdin=zero,
            capture_output=True,
            env=hook_env({"AGENTMEM_HOOK_STDIN_TIMEOUT": "20"}),
            cwd=tmp_path,
            timeout=60,
        )
    took = time.monotonic() - start
    answer = json.loads(proc.stdout)
    assert "over 8,000,000 bytes" in answer["additional_context"], answer
    assert took < 10, took  # read until the 20 s stdin timeout before


def test_a_source_over_the_size_limit_is_refused_before_it_is_read(vault: Vault, tmp_path: Path, cli) -> None:
    from agentmem_vault.longterm.sources import MAX_SOURCE_BYTES

    big = tmp_path / "huge.jsonl"
    with big.open("wb") as fh:
        fh.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no disk used, but read_bytes would read it all
    start = time.monotonic()
    proc = cli("extract", "--offline", "--file", str(big), vault=vault)
    took = time.monotonic() - start
    assert proc.returncode != 0 and "over the 256,000,000-byte limit" in proc.stderr + proc.stdout, proc.stderr
    assert "Traceback" not in proc.stderr and took < 10, took


def test_a_five_megabyte_task_is_read_only_as_far_as_recall_looks(vault: Vault, cli) -> None:
    for args in (["context", "pnpm lint " * 500_000], ["memories", "search", "我們決定" * 1_000_000]):
        start = time.monotonic()
        proc = cli(*args, vault=vault)
        took = time.monotonic() - start
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert took < 5, (args[0], took)  # 13-23 s before: the whole text tokenized three times
