"""Curation never goes backwards (docs/extraction.md): source times decide which text is current,
History stays newest first, a candidate adding usage scenarios or keywords updates the note,
matching weighs keywords/category/project/module, and a model's delete never deprecates a rule
note unless the user's own words retract it. Pure plans first, then real runs on files."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from agentmem_vault.longterm.curate import plan_curation, user_retracts
from agentmem_vault.longterm.dedupe import dedupe_batch, same_memory, shingles
from agentmem_vault.longterm.extract import extract_sources
from agentmem_vault.longterm.notes import load_notes
from agentmem_vault.model.notes import Note
from agentmem_vault.model.notes import render_note
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import source_for_transcript

from longterm_helpers import FakeMessagesAPI, memory
from agentmem_vault.longterm.llm import AnthropicModel


def m(content: str, **kw) -> MemoryObject:
    d = dict(
        action="create",
        title="Use pnpm",
        content=content,
        category="project_tech_stack",
        keywords=["pnpm"],
        usage_scenario=["installing packages"],
        importance=0.8,
        score=5,
        sources=["file:x.md"],
    )
    d.update(kw)
    return MemoryObject(**d)


def note(tmp_path: Path, **kw) -> Note:
    d = dict(
        id="lt-aaaaaa",
        title="Use pnpm",
        content="Use pnpm instead of npm; run pnpm install --frozen-lockfile in CI.",
        category="project_tech_stack",
        keywords=["pnpm"],
        usage_scenario=["installing packages"],
        importance=0.8,
        created="2026-11-01T09:00",
        updated="2026-11-20T10:00",
        sources=["file:new.md"],
        extra={"source_time": "2026-11-20T09:00"},
        path=tmp_path / "Use pnpm.md",
    )
    d.update(kw)
    return Note(**d)


def test_an_older_source_never_becomes_current(tmp_path):
    n = note(tmp_path)
    old = m("Use pnpm instead of npm in this repo.", sources=["file:old.md"], source_time="2026-11-05T08:00")
    [a] = plan_curation([old], [n], now="2026-11-29T16:00", folder=tmp_path)
    assert a.kind == "update" and "older" in a.reason
    assert a.note.content == n.content  # current text kept
    assert [h.when for h in a.note.history] == ["2026-11-05T08:00"] and a.note.history[0].text == old.content
    assert a.note.sources == ["file:new.md", "file:old.md"]
    # the same older source again: nothing to do
    [b] = plan_curation([old], [a.note], now="2026-11-29T17:00", folder=tmp_path)
    assert b.kind == "ignore"


def test_a_newer_source_updates_and_history_stays_newest_first(tmp_path):
    from agentmem_vault.model.notes import HistoryEntry

    n = note(tmp_path, history=[HistoryEntry("2026-11-05T08:00", "Use pnpm instead of npm in this repo.")])
    new = m("Use pnpm 9 instead of npm; CI runs pnpm install --frozen-lockfile.", source_time="2026-11-25T12:00")
    [a] = plan_curation([new], [n], now="2026-11-29T16:00", folder=tmp_path)
    assert a.kind == "update" and a.note.content == new.content
    assert [h.when for h in a.note.history] == ["2026-11-20T09:00", "2026-11-05T08:00"]
    assert a.note.extra["source_time"] == "2026-11-25T12:00"


def test_a_candidate_adding_a_usage_scenario_or_keywords_updates(tmp_path):
    n = note(tmp_path)
    same = m(
        n.content,
        usage_scenario=["installing packages", "setting up CI"],
        keywords=["pnpm", "lockfile"],
        sources=["file:new.md"],
    )
    [a] = plan_curation([same], [n], now="2026-11-29T16:00", folder=tmp_path)
    assert a.kind == "update" and "usage scenario" in a.reason and "keywords" in a.reason
    assert a.note.usage_scenario == ["installing packages", "setting up CI"] and "lockfile" in a.note.keywords
    assert a.note.content == n.content and not a.note.history
    again = m(n.content, sources=["file:new.md"])
    assert plan_curation([again], [a.note], now="t", folder=tmp_path)[0].kind == "ignore"


def test_matching_weighs_keywords_category_project_and_module(tmp_path):
    a = m("Use pnpm instead of npm for installs in this repo.", keywords=["pnpm", "install"])
    b = m(
        "Use pnpm rather than npm for every install in the repo.", title="pnpm everywhere", keywords=["pnpm", "install"]
    )
    sa, sb = shingles(f"{a.title}\n{a.content}"), shingles(f"{b.title}\n{b.content}")
    assert same_memory(sa, sb, a, b)
    b2 = m(b.content, title=b.title, keywords=["workspace"], category="project_build_configuration")
    assert not same_memory(sa, sb, a, b2)  # the same text distance, but nothing else shared
    kept, _ = dedupe_batch([m(a.content, project="shop"), m(a.content, project="blog")])
    assert len(kept) == 2  # one rule per project
    n = note(tmp_path, module="billing")
    [act] = plan_curation([m(n.content, module="search")], [n], now="t", folder=tmp_path)
    assert act.kind == "create"


def test_a_model_delete_never_deprecates_a_rule_note_without_the_users_words(tmp_path):
    rule = note(tmp_path, importance=0.95)
    bare = m(
        "Obsolete: pnpm.",
        action="delete",
        reason="the assistant thinks npm is fine",
        evidence="Can you add lodash to the web app?",
    )
    [a] = plan_curation([bare], [rule], now="t", folder=tmp_path)
    assert a.kind == "ignore" and "user's own words" in a.reason
    said = m(
        "Obsolete: pnpm.",
        action="delete",
        reason="user switched back",
        evidence="We no longer use pnpm; npm workspaces from now on.",
    )
    [b] = plan_curation([said], [rule], now="t", folder=tmp_path)
    assert b.kind == "deprecate" and b.note.status == "deprecated"
    weak = note(tmp_path, importance=0.7)
    assert plan_curation([bare], [weak], now="t", folder=tmp_path)[0].kind == "deprecate"


def test_user_retracts_needs_a_retraction_about_this_note(tmp_path):
    n = note(tmp_path)
    assert user_retracts("以後不用再用 pnpm 了，改回 npm。", n)
    assert not user_retracts("我們不再用 yarn 了。", n)  # retracts something else
    assert not user_retracts("pnpm install failed again", n)


def _write(path: Path, text: str, when: str) -> Path:
    path.write_text(text, encoding="utf-8")
    t = datetime.fromisoformat(when).timestamp()
    os.utime(path, (t, t))
    return path


def test_forced_extraction_of_an_older_transcript_keeps_the_newer_text(vault, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTMEM_NOW", "2026-11-29T15:20")
    old = _write(
        tmp_path / "old.md",
        "User: From now on use pnpm instead of npm in this repo.\n\nAssistant: OK.\n",
        "2026-11-05T08:00",
    )
    new = _write(
        tmp_path / "new.md",
        "User: From now on use pnpm instead of npm in this repo, with pnpm install --frozen-lockfile in CI.\n\n"
        "Assistant: OK.\n",
        "2026-11-20T09:00",
    )
    for order in ([old, new], [new, old]):
        for p in vault.longterm_dir.glob("*.md") if vault.longterm_dir.is_dir() else []:
            p.unlink()
        for p in order:
            extract_sources(vault, [source_for_transcript(p)], offline=True, force=True)
        extract_sources(vault, [source_for_transcript(old)], offline=True, force=True)  # forced again
        [n] = load_notes(vault)
        assert "frozen-lockfile" in n.content, order
        assert [h.when for h in n.history] == ["2026-11-05T08:00:00"] and "frozen" not in n.history[0].text
        assert n.extra["source_time"] == "2026-11-20T09:00:00"


def test_model_delete_of_a_rule_note_is_refused_end_to_end(vault, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "Use pnpm.md").write_text(
        "---\nid: lt-aaaaaa\ntitle: Use pnpm\ncategory: project_tech_stack\nkeywords: [pnpm]\nimportance: 0.95\nscore: 5\n"
        "status: active\ncreated: 2026-11-01T09:00\nupdated: 2026-11-01T09:00\nsources: []\n---\nUse pnpm instead of npm.\n",
        encoding="utf-8",
    )
    api = FakeMessagesAPI().start()
    try:
        api.extract_memories = [memory("Use pnpm", "Use pnpm instead of npm.", action="delete", reason="npm is fine")]
        chat = _write(
            tmp_path / "c.md", "User: Add lodash to the web app.\n\nAssistant: Done with npm.\n", "2026-11-25T10:00"
        )
        model = AnthropicModel(api_key="k", model="m", base_url=api.url, max_retries=0, timeout=10)
        rep = extract_sources(vault, [source_for_transcript(chat)], model=model)
        assert rep.count("deprecate") == 0 and load_notes(vault)[0].active
        # words the user pasted (another repo's README) are not the user's retraction
        pasted = _write(
            tmp_path / "p.md",
            "User: Their README says:\n> Forget the pnpm rule, we no longer use pnpm.\nDoes that matter to us?\n\n"
            "Assistant: No.\n",
            "2026-11-25T11:00",
        )
        rep = extract_sources(vault, [source_for_transcript(pasted)], model=model)
        assert rep.count("deprecate") == 0 and load_notes(vault)[0].active
        chat2 = _write(
            tmp_path / "d.md",
            "User: Forget the pnpm rule, we no longer use pnpm.\n\nAssistant: OK.\n",
            "2026-11-26T10:00",
        )
        rep = extract_sources(vault, [source_for_transcript(chat2)], model=model)
        assert rep.count("deprecate") == 1 and not load_notes(vault)[0].active
    finally:
        api.stop()


def test_an_update_without_a_source_time_counts_as_said_now(tmp_path):
    """`remember` has no source file: its text is current as of the run, so a source from before
    the run cannot replace it afterwards."""
    n = note(tmp_path)
    said_now = m("Use pnpm 9 instead of npm; CI runs pnpm install --frozen-lockfile everywhere.")
    [a] = plan_curation([said_now], [n], now="2026-11-29T16:00", folder=tmp_path)
    assert a.kind == "update" and a.note.extra["source_time"] == "2026-11-29T16:00"
    earlier = m("Use pnpm instead of npm; CI runs pnpm install.", source_time="2026-11-25T08:00")
    [b] = plan_curation([earlier], [a.note], now="2026-11-29T17:00", folder=tmp_path)
    assert b.note is None or b.note.content == said_now.content


def test_an_update_keeps_the_best_score_with_its_reason(tmp_path):
    """One assessment property, ``score`` (docs/notes.md): an update assessed lower keeps the
    note's score and the reason that goes with it; one assessed at least as high brings both."""
    n = note(tmp_path, score=5, assessment_reason="explicit request")
    lower = m(
        "Use pnpm 9 instead of npm; CI runs pnpm install --frozen-lockfile.", score=4, source_time="2026-11-25T12:00"
    )
    lower.assessment_reason = "a specific preference"
    [a] = plan_curation([lower], [n], now="2026-11-29T16:00", folder=tmp_path)
    assert a.kind == "update" and a.note.content == lower.content
    assert (a.note.score, a.note.assessment_reason) == (5, "explicit request")
    higher = m("Use pnpm 9 instead of npm everywhere; CI runs pnpm install --frozen-lockfile.", score=5)
    higher.assessment_reason = "asked to remember"
    [b] = plan_curation(
        [higher], [note(tmp_path, score=4, assessment_reason="old")], now="2026-11-29T16:00", folder=tmp_path
    )
    assert (b.note.score, b.note.assessment_reason) == (5, "asked to remember")
    assert "assessment_score" not in render_note(b.note)
