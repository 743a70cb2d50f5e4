"""Curation that follows the user (docs/extraction.md, "Curation"): a reversal that names an
earlier rule retires it, a supplement updates the note it names and keeps its core rule, and an
older statement never overwrites a newer one whatever the file times say (equal file times, a
grown transcript run again with --force, a restored old file). Real files, real extraction runs."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from agentmem_vault.longterm.extract import extract_sources
from agentmem_vault.longterm.notes import load_notes
from agentmem_vault.longterm.sources import source_for_transcript


def _touch(path: Path, when: str) -> Path:
    t = datetime.fromisoformat(when).timestamp()
    os.utime(path, (t, t))
    return path


def chat(path: Path, *user: str, when: str = "2026-11-05T08:00") -> Path:
    path.write_text("".join(f"User: {u}\n\nAssistant: OK.\n\n" for u in user), encoding="utf-8")
    return _touch(path, when)


def claude(path: Path, *said: tuple[str, str], mtime: str = "2026-11-30T12:00") -> Path:
    """A Claude Code transcript whose turns record when they were said."""
    lines = []
    for when, text in said:
        lines.append({"type": "user", "timestamp": when, "message": {"role": "user", "content": text}})
        lines.append({"type": "assistant", "timestamp": when, "message": {"role": "assistant", "content": "OK."}})
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    return _touch(path, mtime)


def run(vault, *paths: Path, force: bool = False) -> None:
    for p in paths:
        rep = extract_sources(vault, [source_for_transcript(p)], offline=True, force=force)
        assert not rep.errors, rep.errors


def active(vault) -> list:
    return [n for n in load_notes(vault) if n.active]


def test_a_reversal_that_names_the_earlier_rule_retires_it(vault, tmp_path: Path) -> None:
    run(vault, chat(tmp_path / "a.md", "以後完成前都要跑 yarn lint。"))
    run(
        vault,
        chat(
            tmp_path / "b.md",
            "之前那條「完成前要跑 yarn lint」作廢，以後改成跑 `npm run verify`。",
            when="2026-11-06T08:00",
        ),
    )
    notes = active(vault)
    assert [n for n in notes if "npm run verify" in n.content], [n.content for n in notes]
    assert not [n for n in notes if "yarn lint" in n.content and "npm run verify" not in n.content]
    (gone,) = [n for n in load_notes(vault) if not n.active]
    assert "yarn lint" in gone.content and "npm run verify" in gone.deprecated_reason


def test_a_reply_language_reversal_leaves_no_contradicting_rule(vault, tmp_path: Path) -> None:
    run(vault, chat(tmp_path / "a.md", "Always answer me in English."))
    run(
        vault, chat(tmp_path / "b.md", "Change of plan: reply in Traditional Chinese from now on, not English anymore.")
    )
    notes = active(vault)
    assert len(notes) == 1 and "Traditional Chinese" in notes[0].content, [n.content for n in notes]


def test_a_pure_retraction_only_deprecates(vault, tmp_path: Path) -> None:
    run(vault, chat(tmp_path / "a.md", "Always run `make lint-docs` before you finish."))
    run(vault, chat(tmp_path / "b.md", "Forget the make lint-docs rule."))
    assert active(vault) == []


def test_a_supplement_updates_the_named_note_and_keeps_its_core_rule(vault, tmp_path: Path) -> None:
    run(vault, chat(tmp_path / "a.md", "資料抓取一律用包裝過的 apiFetch，不要直接呼叫 fetch。"))
    run(vault, chat(tmp_path / "b.md", "補充 apiFetch 那條規則：Server Component 也一樣。", when="2026-11-06T08:00"))
    (n,) = active(vault)
    assert "一律用包裝過的 apiFetch" in n.content and "Server Component" in n.content, n.content
    assert n.history and "Server Component" not in n.history[0].text


def test_equal_file_times_the_statement_said_later_wins(vault, tmp_path: Path) -> None:
    older = claude(tmp_path / "a.jsonl", ("2026-11-10T09:00:00Z", "From now on use pnpm instead of npm in this repo."))
    newer = claude(
        tmp_path / "b.jsonl",
        (
            "2026-11-20T09:00:00Z",
            "From now on use pnpm instead of npm in this repo, with pnpm install --frozen-lockfile in CI.",
        ),
    )
    run(vault, newer, older)  # the newer chat is read first; both files have the same time
    (n,) = active(vault)
    assert "frozen-lockfile" in n.content, n.content
    assert n.history and "frozen" not in n.history[0].text


def test_a_grown_transcript_run_again_with_force_keeps_the_newer_text(vault, tmp_path: Path) -> None:
    first = (
        "From now on use pnpm instead of npm in this repo, with pnpm install --frozen-lockfile in CI "
        "and on every developer machine."
    )
    later = "From now on use pnpm instead of npm in this repo, without --frozen-lockfile."
    p = chat(tmp_path / "t.md", first)
    run(vault, p)
    chat(p, first, "Thanks.", later, when="2026-11-05T08:00")  # grew; the same file time
    run(vault, p)
    run(vault, p, force=True)  # the earlier, longer statement is read again
    (n,) = active(vault)
    assert "without --frozen-lockfile" in n.content, n.content


def test_a_restored_old_file_never_brings_back_the_replaced_text(vault, tmp_path: Path) -> None:
    old = chat(
        tmp_path / "old.md",
        "From now on use pnpm instead of npm in this repo, with pnpm install --frozen-lockfile in CI.",
        when="2026-11-05T08:00",
    )
    new = chat(
        tmp_path / "new.md",
        "From now on use pnpm instead of npm in this repo; CI runs pnpm install without --frozen-lockfile now.",
        when="2026-11-20T09:00",
    )
    run(vault, old, new)
    assert "without" in active(vault)[0].content
    _touch(old, "2026-11-29T10:00")  # restored from a backup: the newest file time of all
    run(vault, old, force=True)
    (n,) = active(vault)
    assert "without --frozen-lockfile" in n.content, n.content


def test_a_superseded_snapshot_decision_retires_the_note_it_produced(vault) -> None:
    from agentmem_vault.longterm.sources import source_for_session

    sid = "2026-05-25-1318-cursor-main-agent"
    vault.sessions_dir.mkdir(parents=True, exist_ok=True)

    def snapshot(decisions: str, updated: str) -> None:
        vault.session_path(sid).write_text(
            f"# Session: {sid}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Topic | queue |\n"
            f"| Updated At | {updated} |\n\n## Current Context\n- 佇列選型\n\n## Decisions\n{decisions}\n",
            encoding="utf-8",
        )

    snapshot(
        "- 不用 Kafka，先用 Postgres LISTEN/NOTIFY；流量超過 1k/s 再評估\n- 金額一律用整數分存在 amount_cents 欄位",
        "2026-05-25 13:30",
    )
    extract_sources(vault, [source_for_session(vault, sid)], offline=True)
    assert len(active(vault)) == 2, [n.content for n in active(vault)]
    snapshot(
        "- [superseded] 不用 Kafka，先用 Postgres LISTEN/NOTIFY；流量超過 1k/s 再評估\n- 金額一律用整數分存在 amount_cents 欄位",
        "2026-05-26 09:00",
    )
    extract_sources(vault, [source_for_session(vault, sid)], offline=True)
    (kept,) = active(vault)
    assert "整數分" in kept.content
    (gone,) = [n for n in load_notes(vault) if not n.active]
    assert "LISTEN/NOTIFY" in gone.content
