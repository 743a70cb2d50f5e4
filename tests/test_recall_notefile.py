"""The recall package's own note reader: strict flat frontmatter, PyYAML fallback, History stripped."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import given, settings, strategies as st

from agentmem_vault.recall.notefile import (
    parse_flat_yaml,
    parse_note_text,
    read_note,
    strip_history,
)

NOTE = """---
id: lt-7f3a9c
title: 長期記憶檢索能力三層抽象模型
category: project_introduction      # the categories of docs/longterm.md
keywords: [全文索引, 倒排索引, OpenSearch]
usage_scenario:
  - 撰寫長期記憶技術文檔
  - 解釋檢索層架構設計
project: xxx
module: long_term_memory
importance: 0.8
score: 4
status: active
created: 2026-11-29T15:20
updated: 2026-11-30T08:00
sources: ["[[2026-05-25-1318-cursor-main-agent]]"]
tags: [agent-memory/long-term]
---
關鍵詞/全文索引是上層能力，倒排索引是底層資料結構。

## History
- 2026-11-29: 舊版本說 OpenSearch 等於倒排索引
"""


def test_reads_spec_example_and_drops_history(tmp_path: Path) -> None:
    n = parse_note_text(NOTE, tmp_path / "x.md")
    assert n.error is None
    assert (n.id, n.title, n.category) == ("lt-7f3a9c", "長期記憶檢索能力三層抽象模型", "project_introduction")
    assert n.keywords == ["全文索引", "倒排索引", "OpenSearch"]
    assert n.usage_scenario == ["撰寫長期記憶技術文檔", "解釋檢索層架構設計"]
    assert (n.importance, n.score, n.status) == (0.8, 4, "active")
    assert n.updated == "2026-11-30T08:00"
    assert n.sources == ["2026-05-25-1318-cursor-main-agent"]
    assert "倒排索引是底層" in n.content and "舊版本" not in n.content and "History" not in n.content


def test_bom_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "n.md"
    p.write_bytes(("\ufeff" + NOTE).replace("\n", "\r\n").encode("utf-8"))
    n = read_note(p)
    assert n.id == "lt-7f3a9c" and n.error is None and "\r" not in n.content


def test_yaml_fallback_for_what_the_strict_reader_refuses(tmp_path: Path) -> None:
    text = '---\nid: lt-1\ntitle: "quoted \\"title\\""\nkeywords:\n  - a\ncontent_note: |\n  block\n---\nbody\n'
    n = parse_note_text(text, tmp_path / "n.md")
    assert n.title == 'quoted "title"' and n.keywords == ["a"] and n.error is None
    # the hook path has no PyYAML: the note is flagged, not misread
    fast = parse_note_text(text, tmp_path / "n.md", allow_yaml=False)
    assert fast.error


def test_broken_frontmatter_is_still_a_note(tmp_path: Path) -> None:
    n = parse_note_text("---\ntitle: [unclosed\n---\nstill useful text\n", tmp_path / "手寫筆記.md")
    assert n.error and n.title == "手寫筆記" and n.content == "still useful text"
    n2 = parse_note_text("---\ntitle: x\nno closing fence\n", tmp_path / "a.md")
    assert n2.error and n2.title == "a"
    plain = parse_note_text("# just markdown\n\ntext", tmp_path / "plain.md")
    assert plain.error is None and plain.title == "plain" and plain.status == "active"


def test_defaults_and_clamping(tmp_path: Path) -> None:
    n = parse_note_text("---\nimportance: 7\nscore: x\nkeywords: a, b，c\n---\n", tmp_path / "t.md")
    assert n.importance == 1.0 and n.score is None and n.keywords == ["a", "b", "c"]


def test_strip_history_keeps_later_sections() -> None:
    body = "text\n\n## History\nold\n\n## Notes\nkept"
    assert strip_history(body) == "text\n\n## Notes\nkept"


_plain = st.text(alphabet=st.sampled_from(list("abcXYZ019 _-註冊注册記憶模型/")), min_size=1, max_size=12).map(str.strip).filter(
    lambda s: s and not s[0].isdigit() and not s.startswith("-") and not s.endswith(("-", "_")) and s not in ("-",)
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["id", "title", "category", "project", "module", "keywords", "tags"]),
                       st.one_of(_plain, st.lists(_plain, max_size=4)), max_size=6),
       st.booleans())
def test_strict_reader_agrees_with_pyyaml(data: dict, block_lists: bool) -> None:
    lines = []
    for k, v in data.items():
        if isinstance(v, list):
            if block_lists:
                lines.append(f"{k}:")
                lines += [f"  - {x}" for x in v]
            else:
                lines.append(f"{k}: [{', '.join(v)}]")
        else:
            lines.append(f"{k}: {v}")
    text = "\n".join(lines)
    ref = yaml.safe_load(text) or {}
    ref = {k: ([str(x) for x in v] if isinstance(v, list) else (None if v is None else str(v))) for k, v in ref.items()}
    ours = parse_flat_yaml(text)
    ours = {k: (v if v not in ([],) else None) if block_lists else v for k, v in ours.items()}
    ref = {k: (v if v not in ([],) else None) if block_lists else v for k, v in ref.items()}
    assert ours == ref
