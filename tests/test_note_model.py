"""One note model (docs/notes.md): every reader sees a note the same way, hand-edited or written by
the tool, and a rewrite keeps every property it does not change - Obsidian links and unknown keys
included."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_vault.vault import Vault
from agentmem_vault.errors import NoteFormatError
from agentmem_vault.longterm.curate import deprecated_note, plan_curation
from agentmem_vault.longterm.notes import load_notes, write_note
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.model.notes import (
    KEY_ORDER,
    TAG,
    HistoryEntry,
    Note,
    link_target,
    parse_note,
    quote_links,
    render_note,
)
from agentmem_vault.recall.index import RecallIndex
from agentmem_vault.writer import VaultWriter

SID = "2026-05-26-0900-cursor-main-agent"

HAND_EDITED = f"""---
id: lt-0a1b2c
title: Use pnpm
category: Development_Practice_Specification
keywords: pnpm，npm、yarn
usage_scenario: installing packages
status: Deprecated
importance: 1.5
score: 9
created: 2026-05-26 09:00:00
sources: [[{SID}]]
related:
  - [[Other note]]
  - [[Third|alias]]
color: red
---
Always use pnpm in this repository.

## 歷史

### 2026-05-01T10:00
Use npm.
"""


# -- the listed hand edits, one way everywhere -------------------------------------------------------


def test_hand_edited_note_reads_one_way() -> None:
    n = parse_note(HAND_EDITED)
    assert n.status == "deprecated" and not n.active  # case-insensitive enum
    assert n.category == "development_practice_specification"
    assert n.importance == 1.0 and n.score == 5  # clamped
    assert n.keywords == ["pnpm", "npm", "yarn"]  # full-width comma and 、 separate
    assert n.usage_scenario == ["installing packages"]  # a scalar is a one-item list
    assert n.sources == [f"[[{SID}]]"] and n.source_ids == [SID]  # link, not a nested list
    assert n.created == "2026-05-26T09:00:00" and n.changed_at == "2026-05-26T09:00:00"
    assert n.content == "Always use pnpm in this repository."  # 歷史 is the History heading
    assert n.history == [HistoryEntry("2026-05-01T10:00", "Use npm.")] and n.history_heading == "歷史"
    assert n.extra == {"related": ["[[Other note]]", "[[Third|alias]]"], "color": "red"}


def test_assessment_score_is_read_as_a_legacy_alias_of_score() -> None:
    """An older version wrote the assessment twice; ``score`` is the one property (docs/notes.md)."""
    head = "---\nid: lt-abcdef\ntitle: Use pnpm\n"
    both = parse_note(head + "score: 4\nassessment_score: 2\nassessment_reason: asked to\n---\nUse pnpm.\n")
    assert both.score == 4 and both.assessment_reason == "asked to" and "assessment_score" not in both.extra
    rendered = render_note(both)
    assert "assessment_score" not in rendered and "score: 4" in rendered
    only_old = parse_note(head + "assessment_score: 5\n---\nUse pnpm.\n")
    assert only_old.score == 5
    bad_score = parse_note(head + "score: high\nassessment_score: 2\n---\nUse pnpm.\n")
    assert bad_score.score == 2
    assert parse_note(head + "---\nUse pnpm.\n").score == 3


@pytest.mark.parametrize(
    "raw, expected",
    [
        (f"sources: [[{SID}]]", [f"[[{SID}]]"]),
        (f'sources: "[[{SID}]]"', [f"[[{SID}]]"]),
        (f'sources: ["[[{SID}]]"]', [f"[[{SID}]]"]),
        ("sources: [[a]], [[b]]", ["[[a]]", "[[b]]"]),
        ("sources: [[a]]，[[b]]", ["[[a]]", "[[b]]"]),
        ('sources: "[[a]], [[b]]"', ["[[a]]", "[[b]]"]),
        ("sources:\n  - [[a]]\n  - [[b]]", ["[[a]]", "[[b]]"]),
        ("sources: [[[a]], [[b]]]", ["[[a]]", "[[b]]"]),  # flow list of links: YAML nesting
        ("sources: [[a, b]]", ["[[a, b]]"]),  # a link target may hold a comma
        ("sources: ['[''2026-x'']']", ["[[2026-x]]"]),  # what an earlier version wrote: repaired
        ("sources: [file:chat.md, 'cursor:abc']", ["file:chat.md", "cursor:abc"]),
        ("sources:", []),
    ],
)
def test_link_forms_in_list_properties(raw: str, expected: list[str]) -> None:
    assert parse_note(f"---\n{raw}\n---\n").sources == expected


def test_links_written_as_obsidian_properties_accept_them() -> None:
    text = render_note(parse_note(HAND_EDITED))
    assert f'sources: ["[[{SID}]]"]\n' in text
    assert 'related: ["[[Other note]]", "[[Third|alias]]"]\n' in text
    data = yaml.safe_load(text.split("---\n")[1])
    assert data["sources"] == [f"[[{SID}]]"] and data["color"] == "red"
    assert "\n## 歷史\n" in text  # the user's heading is kept


def test_quote_links_leaves_block_scalars_and_quoted_values_alone() -> None:
    fm = 'note: |\n  - [[keep]]\n  text\nq: "[[a]]"\nx: [[b]]'
    assert quote_links(fm) == 'note: |\n  - [[keep]]\n  text\nq: "[[a]]"\nx: ["[[b]]"]'
    assert link_target("[[a#h|alias]]") == "a" and link_target("file:x.md") == "file:x.md"


@pytest.mark.parametrize("heading", ["## History", "## history", "## 歷史", "## 历史", "## 歷史記錄", "## History:"])
def test_localized_history_headings(heading: str) -> None:
    n = parse_note(f"---\nid: x\n---\nnow\n\n{heading}\n\n### 2026-01-01T00:00\nbefore\n\n## Notes\nkept\n")
    assert n.content == "now\n\n## Notes\nkept" and n.history == [HistoryEntry("2026-01-01T00:00", "before")]


def test_history_heading_inside_a_code_fence_is_content() -> None:
    n = parse_note("---\nid: x\n---\n```\n## History\n```\ntext\n")
    assert "## History" in n.content and n.history == []


ALIAS_BOMB = (
    "---\n"
    + "".join(f"{k}: &{k} [{', '.join([f'*{p}' if p else 'x'] * 8)}]\n" for p, k in zip(["", "a", "b", "c"], "abcd"))
    + "keywords: [*d, *d, *d, *d, *d, *d, *d, *d]\n---\n"
)


@pytest.mark.parametrize(
    "text, words",
    [
        ("---\ntitle: [oops\n---\nx", "not valid YAML"),
        ("---\n- a\n---\n", "not a set of properties"),
        ("---\ntitle: x\n", "not closed"),
        ("---\ntitle: {a: 1}\n---\n", "'title' is a mapping"),
        ("---\nkeywords: [{a: 1}]\n---\n", "'keywords' holds a mapping"),
        (ALIAS_BOMB, "nested too deeply"),  # refused, not expanded
    ],
)
def test_malformed_frontmatter_is_a_clear_error(text: str, words: str) -> None:
    with pytest.raises(NoteFormatError) as exc:
        parse_note(text)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_crlf_and_bom_are_read_and_crlf_kept_on_rewrite() -> None:
    n = parse_note("\ufeff" + HAND_EDITED.replace("\n", "\r\n"))
    assert n == parse_note(HAND_EDITED) and n.crlf
    assert render_note(n).count("\r\n") == render_note(n).count("\n")


# -- every path agrees -------------------------------------------------------------------------------


def _index_row(vault: Vault, name: str) -> dict:
    idx = RecallIndex(vault)
    try:
        idx.rebuild()  # not sync(): a rewrite of the same size within the clock's tick would look unchanged
        assert idx.conn is not None
        idx.conn.row_factory = sqlite3.Row
        row = idx.conn.execute("SELECT * FROM notes WHERE path = ?", (name,)).fetchone()
        return dict(row)
    finally:
        idx.close()


def _agree(vault: Vault, name: str, text: str) -> Note:
    """What extraction/curation (load_notes) and recall (the index) read from one file: the same."""
    p = vault.longterm_dir / name
    p.write_text(text, encoding="utf-8")
    [note] = [n for n in load_notes(vault) if n.path == p]
    assert note == parse_note(text)
    row = _index_row(vault, name)
    assert row["error"] is None
    assert (row["note_id"], row["title"], row["category"], row["status"]) == (
        note.id,
        note.name,
        note.category,
        note.status,
    )
    assert (row["importance"], row["score"], row["created"], row["updated"]) == (
        note.importance,
        note.score,
        note.created,
        note.changed_at,
    )
    assert (row["project_raw"], row["module_raw"]) == (note.project, note.module)
    assert json.loads(row["keywords"]) == note.keywords and json.loads(row["usage"]) == note.usage_scenario
    assert json.loads(row["sources"]) == note.source_ids
    assert row["content"] == note.content
    return note


def test_extraction_and_recall_read_the_hand_edited_note_alike(vault: Vault) -> None:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    note = _agree(vault, "Use pnpm.md", HAND_EDITED)
    assert note.status == "deprecated" and note.keywords == ["pnpm", "npm", "yarn"]


def test_broken_note_is_skipped_by_extraction_and_reported_by_recall(vault: Vault) -> None:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "bad.md").write_text("---\ntitle: [oops\n---\nKafka body\n", encoding="utf-8")
    broken: list[Path] = []
    reasons: dict[Path, str] = {}
    assert load_notes(vault, broken, reasons) == [] and [p.name for p in broken] == ["bad.md"]
    assert "not valid YAML" in reasons[broken[0]]
    row = _index_row(vault, "bad.md")
    assert "not valid YAML" in row["error"] and row["content"] == "Kafka body" and row["title"] == "bad"


def test_a_writer_refuses_a_note_whose_file_went_bad(vault: Vault) -> None:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    p = vault.longterm_dir / "n.md"
    p.write_text(HAND_EDITED, encoding="utf-8")
    [note] = load_notes(vault)
    p.write_text("---\ntitle: [broken by hand\n---\nx\n", encoding="utf-8")
    with VaultWriter(vault, "test") as w, pytest.raises(NoteFormatError, match="nothing was written"):
        write_note(w, vault, note)
    assert p.read_text(encoding="utf-8").startswith("---\ntitle: [broken by hand")


# -- property tests ---------------------------------------------------------------------------------

_SEPS = set(",，、;；")
_word = (
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=16)
    .map(lambda s: s.strip())
    .filter(lambda s: s and not set(s) & _SEPS and not s.startswith(("[", "#")) and "]]" not in s)
)
_sentence = (
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40)
    .map(str.strip)
    .filter(lambda s: s and "]]" not in s and not s.startswith("["))
)
_session = st.builds(
    lambda d, h, a: f"[[2026-05-{d:02d}-{h:04d}-{a}]]",
    st.integers(1, 28),
    st.integers(0, 2359),
    st.sampled_from(["cursor-main-agent", "claude", "codex-2"]),
)
_ref = st.one_of(_session, st.builds(lambda w: f"file:{w}.md", st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)))
_ts = st.builds(
    lambda m, d, h: f"2026-{m:02d}-{d:02d}T{h:02d}:00:00", st.integers(1, 12), st.integers(1, 28), st.integers(0, 23)
)
_body = st.lists(_sentence.filter(lambda s: not s.startswith(("#", "-", "`", "~"))), min_size=1, max_size=4).map(
    "\n\n".join
)
_extra_key = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True).filter(
    # a user's own property: none of the note model's keys, nor the legacy ones it reads
    lambda k: k not in {*KEY_ORDER, "scope", "assessment_score", "assessment_reason", "deprecated_reason"}
)
_extra_val = st.one_of(st.integers(-5, 5000), _sentence, st.lists(_session, min_size=1, max_size=3), st.booleans())


@st.composite
def tool_notes(draw: st.DrawFn) -> Note:
    return Note(
        id=draw(st.from_regex(r"lt-[0-9a-f]{6}", fullmatch=True)),
        title=draw(_sentence),
        category=draw(st.sampled_from(["user_behavior", "project_tech_stack", "common_pitfalls_experience"])),
        keywords=draw(st.lists(_word, max_size=4)),
        usage_scenario=draw(st.lists(_sentence.filter(lambda s: not set(s) & _SEPS), max_size=3)),
        project=draw(st.one_of(st.just(""), _word)),
        module=draw(st.one_of(st.just(""), _word)),
        importance=draw(st.sampled_from([0.0, 0.2, 0.5, 0.85, 1.0])),
        score=draw(st.integers(1, 5)),
        status=draw(st.sampled_from(["active", "deprecated"])),
        created=draw(_ts),
        updated=draw(_ts),
        sources=draw(st.lists(_ref, max_size=3)),
        tags=[TAG],
        scope=draw(st.sampled_from(["", "project", "global"])),
        assessment_reason=draw(st.one_of(st.just(""), _sentence)),
        deprecated_reason=draw(st.one_of(st.just(""), _sentence)),
        content=draw(_body),
        history=draw(st.lists(st.builds(HistoryEntry, _ts, _body), max_size=2)),
        extra=draw(st.dictionaries(_extra_key, _extra_val, max_size=3)),
    )


def _yaml_scalar(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def hand_edit(note: Note, draw: st.DrawFn) -> str:
    """The note as a person might write it in Obsidian: the forms docs/notes.md lists."""

    def case(v: str) -> str:
        return draw(st.sampled_from([v, v.upper(), v.capitalize()]))

    def listed(key: str, xs: list[str]) -> str:
        if not xs:
            return f"{key}: []"
        form = draw(st.sampled_from(["flow", "block", "scalar"]))
        if form == "block":
            return f"{key}:\n" + "\n".join(f"  - {_yaml_scalar(x)}" for x in xs)
        if form == "scalar" and key != "usage_scenario":
            sep = draw(st.sampled_from([", ", "，", "、", "; "]))
            return f"{key}: {_yaml_scalar(sep.join(xs))}"
        return f"{key}: [{', '.join(_yaml_scalar(x) for x in xs)}]"

    def sources(xs: list[str]) -> str:
        if not xs or not all(x.startswith("[[") for x in xs):
            return listed("sources", xs)
        form = draw(st.sampled_from(["bare", "bare-block", "quoted", "joined"]))
        if form == "bare":
            return "sources: " + ", ".join(xs)  # [[a]], [[b]]
        if form == "bare-block":
            return "sources:\n" + "\n".join(f"  - {x}" for x in xs)
        if form == "joined":
            return f"sources: {_yaml_scalar(', '.join(xs))}"
        return listed("sources", xs)

    lines = [
        f"id: {note.id}",
        f"title: {_yaml_scalar(note.title)}",
        f"category: {case(note.category)}",
        listed("keywords", note.keywords),
        listed("usage_scenario", note.usage_scenario),
        f"project: {_yaml_scalar(note.project)}",
        f"module: {_yaml_scalar(note.module)}",
        f"importance: {draw(st.sampled_from([note.importance, note.importance + 1.0])) if note.importance == 1.0 else note.importance}",
        f"score: {note.score if note.score < 5 else draw(st.sampled_from([5, 6, 50]))}",
        f"status: {case(note.status)}",
        f"created: {note.created}",
        f"updated: {note.updated}",
        sources(note.sources),
        listed("tags", note.tags),
    ]
    if note.scope:
        lines.append(f"scope: {case(note.scope)}")
    if draw(st.booleans()):
        # what an older version also wrote: the same number again (docs/notes.md, legacy alias)
        lines.append(f"assessment_score: {note.score}")
    if note.assessment_reason:
        lines.append(f"assessment_reason: {_yaml_scalar(note.assessment_reason)}")
    if note.deprecated_reason or note.status == "deprecated":
        lines.append(f"deprecated_reason: {_yaml_scalar(note.deprecated_reason)}")
    for k, v in note.extra.items():
        if isinstance(v, list) and draw(st.booleans()):
            lines.append(f"{k}: " + ", ".join(v))  # bare links
        else:
            lines.append(f"{k}: {json.dumps(v, ensure_ascii=False)}")
    body = note.content
    if note.history:
        heading = draw(st.sampled_from(["History", "歷史", "历史", "history"]))
        body += f"\n\n## {heading}\n" + "".join(f"\n### {h.when}\n{h.text}\n" for h in note.history)
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


def _same(a: Note, b: Note) -> None:
    strip = {"history_heading"}  # how the heading is spelled is layout, not content
    assert {k: v for k, v in vars(a).items() if k not in strip} == {k: v for k, v in vars(b).items() if k not in strip}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_notes())
def test_a_note_written_by_the_tool_reads_back_identically(note: Note) -> None:
    text = render_note(note)
    back = parse_note(text)
    assert back == note
    assert render_note(back) == text  # and rewrites to the same bytes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_notes(), st.data())
def test_a_hand_edited_note_reads_as_the_note_it_means(note: Note, data: st.DataObject) -> None:
    text = hand_edit(note, data.draw)
    back = parse_note(text)
    _same(back, note)
    _same(parse_note(render_note(back)), note)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_notes(), st.data(), st.sampled_from(["deprecate", "content", "importance", "sources"]))
def test_a_rewrite_keeps_every_property_it_does_not_change(note: Note, data: st.DataObject, change: str) -> None:
    before = parse_note(hand_edit(note, data.draw))
    if change == "deprecate":
        after = deprecated_note(before, "superseded", now="2026-12-01T10:00")
        changed = {"status", "deprecated_reason", "updated"}
    elif change == "content":
        after = Note(
            **{**vars(before), "content": "new text", "history": [HistoryEntry("x", before.content), *before.history]}
        )
        changed = {"content", "history"}
    elif change == "importance":
        after = Note(**{**vars(before), "importance": 0.9})
        changed = {"importance"}
    else:
        after = Note(**{**vars(before), "sources": before.sources + ["[[2026-12-01-0000-codex]]"]})
        changed = {"sources"}
    reread = parse_note(render_note(after))
    for k, v in vars(before).items():
        if k not in changed | {"history_heading", "path", "crlf"}:
            assert getattr(reread, k) == v, k
    assert reread.extra == note.extra  # unknown keys, links in them included


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(tool_notes(), st.data())
def test_every_reader_agrees_on_any_note(vault: Vault, note: Note, data: st.DataObject) -> None:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    _agree(vault, "p.md", hand_edit(note, data.draw))


# -- sources: [[id]] through curation and `memories deprecate` ---------------------------------------

LINKED = f"""---
id: lt-5e5e5e
title: Deploy with blue-green releases
category: important_decision_experience
keywords: [deploy, blue-green]
importance: 0.7
score: 4
status: active
created: 2026-05-26T09:00
updated: 2026-05-26T09:00
sources: [[{SID}]]
reviewer: "[[Alice]]"
---
Production deploys use blue-green releases; never deploy in place.
"""


def _props(p: Path) -> dict:
    return yaml.safe_load(p.read_text(encoding="utf-8").split("---\n")[1])


def test_sources_link_survives_curation(vault: Vault) -> None:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    p = vault.longterm_dir / "Deploy with blue-green releases.md"
    p.write_text(LINKED, encoding="utf-8")
    m = MemoryObject(
        action="update",
        title="Deploy with blue-green releases",
        category="important_decision_experience",
        content="Production deploys use blue-green releases with a 10 minute soak; never deploy in place.",
        keywords=["deploy"],
        importance=0.7,
        score=4,
        sources=["[[2026-06-01-1000-claude]]"],
    )
    [action] = plan_curation([m], load_notes(vault), now="2026-06-01T10:00", folder=vault.longterm_dir)
    assert action.kind == "update" and action.note is not None
    with VaultWriter(vault, "test") as w:
        write_note(w, vault, action.note)
    props = _props(p)
    assert props["sources"] == [f"[[{SID}]]", "[[2026-06-01-1000-claude]]"] and props["reviewer"] == "[[Alice]]"
    assert f'sources: ["[[{SID}]]", "[[2026-06-01-1000-claude]]"]' in p.read_text(encoding="utf-8")
    [note] = load_notes(vault)
    assert note.source_ids == [SID, "2026-06-01-1000-claude"] and note.history[0].text.startswith(
        "Production deploys use"
    )


def test_sources_link_survives_memories_deprecate_cli(vault: Vault, cli) -> None:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    p = vault.longterm_dir / "Deploy with blue-green releases.md"
    p.write_text(LINKED, encoding="utf-8")
    r = cli(
        "memories",
        "deprecate",
        "lt-5e5e5e",
        "--reason",
        "moved to canaries",
        vault=vault,
        env={"AGENTMEM_NOW": "2026-06-02T08:00"},
    )
    assert r.returncode == 0, r.stderr
    text = p.read_text(encoding="utf-8")
    assert f'sources: ["[[{SID}]]"]\n' in text and "'[''" not in text
    props = _props(p)
    assert props["sources"] == [f"[[{SID}]]"] and props["reviewer"] == "[[Alice]]" and props["status"] == "deprecated"
    assert props["deprecated_reason"] == "moved to canaries" and props["keywords"] == ["deploy", "blue-green"]
    r = cli("memories", "show", "lt-5e5e5e", "--json", vault=vault)
    assert r.returncode == 0 and json.loads(r.stdout)["sources"] == [f"[[{SID}]]"]


def test_memories_deprecate_refuses_a_malformed_note(vault: Vault, cli) -> None:
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    p = vault.longterm_dir / "broken.md"
    p.write_text("---\ntitle: [oops\n---\nbody\n", encoding="utf-8")
    r = cli("memories", "deprecate", "broken", "--reason", "x", vault=vault)
    assert (
        r.returncode == 1 and "broken.md" in r.stderr and "not valid YAML" in r.stderr and "Traceback" not in r.stderr
    )
    assert p.read_text(encoding="utf-8") == "---\ntitle: [oops\n---\nbody\n"


# -- files that are not notes -------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_among_the_notes_is_reported_not_read(vault: Vault) -> None:
    import os

    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "ok.md").write_text(LINKED, encoding="utf-8")
    os.mkfifo(vault.longterm_dir / "pipe.md")  # reading it would block every reader for ever
    broken: list[Path] = []
    reasons: dict[Path, str] = {}
    assert [n.id for n in load_notes(vault, broken, reasons)] == ["lt-5e5e5e"]
    assert "not a regular file" in reasons[vault.longterm_dir / "pipe.md"]
    idx = RecallIndex(vault)
    try:
        assert idx.sync().total == 1
    finally:
        idx.close()


def test_an_oversized_note_is_reported_by_every_reader(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmem_vault.model import notes as model

    monkeypatch.setattr(model, "MAX_NOTE_BYTES", 4096)
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "dump.md").write_text(LINKED + "x" * 5000, encoding="utf-8")
    reasons: dict[Path, str] = {}
    assert load_notes(vault, [], reasons) == [] and "larger than" in reasons[vault.longterm_dir / "dump.md"]
    row = _index_row(vault, "dump.md")
    assert "larger than" in row["error"] and row["content"] == "" and row["title"] == "dump"


def test_a_note_with_two_bad_properties_names_the_first_in_written_order_whatever_the_hash_seed() -> None:
    # The message must not depend on set iteration order (PYTHONHASHSEED): `title` comes before
    # `module` in the properties as written (KEY_ORDER), so it is the one named, on every run.
    import os
    import subprocess
    import sys

    code = (
        "from agentmem_vault.model.notes import parse_note\n"
        "try:\n"
        "    parse_note('---\\ntitle: {a: 1}\\nmodule: {b: 2}\\n---\\nbody\\n')\n"
        "except Exception as e:\n"
        "    print(e)\n"
    )
    said = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            check=True,
        ).stdout.strip()
        for seed in range(8)
    }
    assert len(said) == 1 and "'title'" in said.pop()
