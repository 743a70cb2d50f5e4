"""The note format contract: key order, CJK unescaped, round trip, broken notes, safe names."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from agentmem_vault.errors import NoteFormatError
from agentmem_vault.longterm.notes import find_note, load_notes, note_id, safe_filename
from agentmem_vault.model.notes import KEY_ORDER, HistoryEntry, Note, parse_note, render_note


def _note(**kw) -> Note:
    d = dict(
        id="lt-7f3a9c",
        title="長期記憶檢索能力三層抽象模型",
        category="project_introduction",
        keywords=["全文索引", "倒排索引", "OpenSearch"],
        usage_scenario=["撰寫長期記憶技術文檔", "解釋檢索層架構設計"],
        project="xxx",
        module="long_term_memory",
        importance=0.8,
        score=4,
        status="active",
        created="2026-11-29T15:20:00",
        updated="2026-11-29T15:20:00",
        sources=["[[2026-05-25-1318-cursor-main-agent]]"],
        content="描述檢索層時區分能力、資料結構與工程實現。",
    )
    d.update(kw)
    return Note(**d)


def test_render_matches_the_spec_layout():
    text = render_note(_note())
    head = text.split("---\n")[1]
    keys = [line.split(":")[0] for line in head.splitlines()]
    assert keys == list(KEY_ORDER)
    assert "title: 長期記憶檢索能力三層抽象模型\n" in text  # CJK unescaped
    assert "keywords: [全文索引, 倒排索引, OpenSearch]\n" in text
    assert "created: 2026-11-29T15:20:00\n" in text and "score: 4\n" in text and "importance: 0.8\n" in text
    assert "tags: [agent-memory/long-term]\n" in text
    assert yaml.safe_load(head)["sources"] == ["[[2026-05-25-1318-cursor-main-agent]]"]
    assert text.endswith("---\n描述檢索層時區分能力、資料結構與工程實現。\n")
    assert "deprecated_reason" not in text


def test_deprecated_and_history_round_trip():
    n = _note(
        status="deprecated",
        deprecated_reason="OpenSearch 的描述已過時",
        history=[HistoryEntry("2026-11-28T10:00", "舊版本\n\n第二段"), HistoryEntry("2026-11-01T09:00", "最早")],
    )
    text = render_note(n)
    assert text.index("tags:") < text.index("deprecated_reason:")
    assert "\n## History\n\n### 2026-11-28T10:00\n舊版本\n\n第二段\n\n### 2026-11-01T09:00\n最早\n" in text
    assert parse_note(text) == n


def test_parse_tolerates_bom_crlf_dates_and_string_lists():
    text = "\ufeff---\r\nid: lt-000001\r\ntitle: Use pnpm\r\nkeywords: pnpm, npm\r\ncreated: 2026-11-29 15:20:00\r\nupdated: 2026-11-29\r\nimportance: high\r\ncolor: red\r\n---\r\nBody\r\n"
    n = parse_note(text)
    assert n.keywords == ["pnpm", "npm"] and n.created == "2026-11-29T15:20:00" and n.updated == "2026-11-29T00:00:00"
    assert n.importance == 0.5 and n.status == "active" and n.content == "Body"
    assert n.extra == {"color": "red"} and "color: red" in render_note(n)


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: [unclosed\n---\nx",
        "---\n- a list\n---\n",
        "---\ntitle: x\nno end",
        "---\nproject: {a: 1}\n---\n",
        "---\nkeywords: [{a: 1}]\n---\n",
    ],
)
def test_broken_notes_raise_format_error(text):
    with pytest.raises(NoteFormatError):
        parse_note(text)


def test_a_note_without_frontmatter_is_a_note_without_properties():
    n = parse_note("# Hand-written\n\nUse pnpm.\n")
    assert n.content == "# Hand-written\n\nUse pnpm." and n.id == "" and n.status == "active" and n.active


def test_load_notes_skips_and_counts_broken(vault):
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "good.md").write_text(render_note(_note()), encoding="utf-8")
    (vault.longterm_dir / "bad.md").write_text("---\ntitle: [oops\n---\n", encoding="utf-8")
    (vault.longterm_dir / "latin1.md").write_bytes("---\ntitle: caf\xe9\n---\n".encode("latin-1"))
    broken: list = []
    notes = load_notes(vault, broken)
    assert [n.id for n in notes] == ["lt-7f3a9c"] and notes[0].path.name == "good.md"
    assert sorted(p.name for p in broken) == ["bad.md", "latin1.md"]
    assert find_note(notes, "lt-7f3a9c") is find_note(notes, "good") is find_note(notes, "長期記憶檢索能力三層抽象模型")


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    title=_text.map(str.strip).filter(bool),  # text properties are read stripped (docs/notes.md)
    keywords=st.lists(_text.map(str.strip).filter(lambda s: s and not set(s) & set(",，、;；")), max_size=4),
    content=st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
        ),
        max_size=200,
    ),
    score=st.integers(1, 5),
)
def test_round_trip_property(title, keywords, content, score):
    content = "\n".join(line for line in content.split("\n") if line.strip() not in ("## History", "---")).strip("\n")
    n = _note(title=title, keywords=keywords, content=content, score=score, project="a|b: c # d", module="'yes'")
    back = parse_note(render_note(n))
    assert back.title == title and back.keywords == keywords and back.score == score
    assert back.project == "a|b: c # d" and back.module == "'yes'"
    assert back.content == content.strip("\n")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_safe_filename_property(title):
    name = safe_filename(title)
    stem = name[:-3]
    assert name.endswith(".md") and stem and not re.search(r'[\\/:*?"<>|#^\[\]\x00-\x1f]', stem)
    assert not stem.startswith((".", " ")) and not stem.endswith((".", " ")) and ".." not in stem
    assert len(stem) <= 80 and len(name.encode("utf-8")) <= 190
    assert stem.split(".")[0].lower() not in {"con", "nul", "aux", "prn", "com1", "lpt1"}


def test_safe_filename_unique_case_insensitive_and_traversal():
    assert safe_filename("../../x") == "x.md"
    assert safe_filename("Use pnpm", {"use PNPM.md", "Use pnpm 2.md"}) == "Use pnpm 3.md"
    assert safe_filename("NUL") == "NUL note.md"
    assert safe_filename("記憶" * 100).encode("utf-8").__len__() <= 190


def test_note_id_is_stable_and_avoids_collisions():
    a = note_id("Use pnpm", "file:chat.md")
    assert re.fullmatch(r"lt-[0-9a-f]{6}", a) and a == note_id("use PNPM", "file:chat.md")
    assert note_id("Use pnpm", "file:chat.md", {a}) != a


@pytest.mark.parametrize("title", ["CON .x", "nul .txt", "con.txt", "LPT¹", "COM² port notes.md"])
def test_note_file_names_avoid_every_windows_device_name(title: str) -> None:
    from agentmem_vault.longterm.notes import safe_filename

    name = safe_filename(title)
    base = name.split(".")[0].rstrip(" ")
    import unicodedata

    assert unicodedata.normalize("NFKC", base).lower() not in {"con", "nul", "lpt1", "com2"}, name
