"""Pure index table engine: round-trip, escaping, tolerance, and byte-for-byte preservation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from agentmem_vault.board import table as it
from agentmem_vault.errors import IndexFormatError, SessionNotFound

HEADER = it.header_lines()


def row(sid: str = "2026-05-25-1318-cursor-main-agent", **kw: str) -> it.Row:
    base = dict(
        agent_name="cursor-main-agent",
        topic="未設定",
        summary="s",
        keywords="k",
        status="idle",
        referenced_by="-",
        started_at="2026-05-25 13:18",
        updated_at="2026-05-25 13:18",
    )
    base.update(kw)
    return it.Row(sid, **base)


cell_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("|\\ -:abc註冊记忆狀態、，。|")),
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(topic=cell_text, summary=cell_text, keywords=cell_text)
def test_row_round_trip_with_pipes_and_cjk(topic: str, summary: str, keywords: str) -> None:
    r = row(topic=topic, summary=summary, keywords=keywords)
    parsed = it.split_cells(it.render_row(r))
    expect = [it.escape_cell(c).replace("\\|", "|") for c in r.cells()]
    assert parsed == expect


@settings(max_examples=100, deadline=None)
@given(
    before=st.text(
        alphabet=st.characters(
            codec="utf-8",
            exclude_categories=("Cs",),
            exclude_characters="|\x00\r\n\ufeff\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
        ),
        max_size=40,
    ),
    after=st.text(
        alphabet=st.characters(
            codec="utf-8",
            exclude_categories=("Cs",),
            exclude_characters="|\x00\r\n\ufeff\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
        ),
        max_size=40,
    ),
    crlf=st.booleans(),
    bom=st.booleans(),
    topic=cell_text,
)
def test_append_keeps_every_other_byte(before: str, after: str, crlf: bool, bom: bool, topic: str) -> None:
    nl = "\r\n" if crlf else "\n"
    existing = "| 2026-01-01-0000-a | a | t | s | k | active | - | x | y |" + nl
    text = ("\ufeff" if bom else "") + before + nl + nl + it.header_lines(nl) + existing + nl + after
    doc = it.parse_index(text)
    assert [r.session_id for r in doc.row_list()] == ["2026-01-01-0000-a"]
    new_text = it.edit_table(doc, {}, [row(topic=topic)])
    # text after the table: the row is inserted at the table's end, not at the file's
    assert new_text.replace(it.render_row(row(topic=topic)) + nl, "", 1) == text
    again = it.parse_index(new_text)
    assert again.find(row().session_id).topic == it.escape_cell(topic).replace("\\|", "|")
    assert again.render() == new_text


def test_tolerates_bom_crlf_extra_spaces_missing_trailing_pipe() -> None:
    text = "\ufeff# Memory\r\n\r\n|Session ID|Agent Name| Topic |Summary|Keywords|Status|Referenced By|Started At|Updated At|\r\n| --- | :---: |---|---|---|---|---|---|---|\r\n|   2026-05-25-1318-cursor-main-agent |cursor-main-agent|  主題 |s|k|active|-|2026-05-25 13:18|2026-05-25 13:18\r\n"
    doc = it.parse_index(text)
    assert doc.bom and doc.newline == "\r\n"
    (r,) = doc.row_list()
    assert r.topic == "主題" and r.updated_at == "2026-05-25 13:18"
    new_text = it.edit_table(doc, {}, [row("2026-05-25-1319-cursor-main-agent")])
    assert new_text.startswith(text) and new_text.endswith("\r\n")  # appended, in the file's line ends


def test_bad_rows_kept_and_reported() -> None:
    text = (
        HEADER
        + "| 2026-05-25-1318-a | a | t |\n| not-an-id | a | t | s | k | idle | - | x | y |\n| 2026-05-25-1319-b | b | t | s | k | idle | - | x | y |\n"
    )
    doc = it.parse_index(text)
    assert [b.line_no for b in doc.bad] == [3, 4]
    assert doc.ids() == ["2026-05-25-1319-b"]
    with pytest.raises(IndexFormatError, match="line 3"):
        doc.check_writable()
    # edits still never drop them
    assert "| not-an-id |" in _replace(doc, "2026-05-25-1319-b", row("2026-05-25-1319-b"))


def test_wrong_header_and_binary_junk_refused() -> None:
    with pytest.raises(IndexFormatError, match="unexpected table header"):
        it.parse_index("| ID | Name |\n|---|---|\n| a | b |\n")
    with pytest.raises(IndexFormatError, match="binary"):
        it.parse_index(HEADER + "\x00\x01junk")
    with pytest.raises(IndexFormatError, match="without the header"):
        it.parse_index("| 2026-05-25-1318-a | a |\n")


def test_stray_text_inside_table_reported() -> None:
    text = (
        HEADER
        + "| 2026-05-25-1318-a | a | t | s | k | idle | - | x | y |\nstray words\n| 2026-05-25-1319-b | b | t | s | k | idle | - | x | y |\n"
    )
    doc = it.parse_index(text)
    assert doc.ids() == ["2026-05-25-1318-a"]
    assert doc.bad and "break in the table" in doc.bad[0].reason


def _replace(doc: it.IndexDoc, session_id: str, new: it.Row) -> str:
    return it.edit_table(doc, {it.line_of(doc, session_id): new})


def _remove(doc: it.IndexDoc, session_id: str) -> str:
    return it.edit_table(doc, {it.line_of(doc, session_id): None})


def test_replace_and_remove_touch_only_the_target() -> None:
    a, b, c = (row(f"2026-05-25-131{i}-cursor-main-agent") for i in range(3))
    text = "intro\n\n" + HEADER + "".join(it.render_row(r) + "\n" for r in (a, b, c)) + "\noutro"
    doc = it.parse_index(text)
    new = _replace(doc, b.session_id, b.with_(status="active", topic="新主題 | pipe"))
    assert new.splitlines()[4] == text.splitlines()[4] and new.splitlines()[6] == text.splitlines()[6]
    assert it.parse_index(new).find(b.session_id).topic == "新主題 | pipe"
    gone = _remove(doc, b.session_id)
    assert gone == text.replace(it.render_row(b) + "\n", "")
    with pytest.raises(SessionNotFound):
        _remove(doc, "2026-01-01-0000-nobody")


def test_id_lists() -> None:
    assert it.split_id_list("-") == []
    assert it.split_id_list("a, b,a，c") == ["a", "b", "c"]
    assert it.join_id_list([]) == "-"
    assert it.join_id_list(["a", "b"]) == "a, b"


LINE_BREAKERS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r", "\n", "\x00", "\x07"]


@pytest.mark.parametrize("ch", LINE_BREAKERS)
def test_cells_with_unicode_line_breaks_or_controls_stay_one_valid_row(ch: str) -> None:
    # str.splitlines() also breaks at U+2028/2029, NEL, VT, FF and FS/GS/RS: a Topic pasted from a
    # web page used to be written as a row that read back as two broken lines, after which the
    # whole index refused every write.
    doc = it.parse_index(it.new_index_text())
    new_text = it.edit_table(doc, {}, [row(topic=f"a{ch}b", summary=f"{ch}s{ch}")])
    again = it.parse_index(new_text)
    assert not again.bad, again.bad
    assert again.get(row().session_id).topic == "a b"
    assert again.render() == new_text


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\x85"])
def test_hand_written_cell_with_unicode_line_separator_is_one_row(ch: str) -> None:
    # Only \n, \r\n and \r end a line of Markdown; a separator a person pasted into a cell in
    # Obsidian must not split the row (every byte of it is kept).
    line = f"| 2026-01-01-0000-a | a | t{ch}u | s | k | active | - | x | y |\n"
    text = HEADER + line
    doc = it.parse_index(text)
    assert not doc.bad
    assert doc.get("2026-01-01-0000-a").topic == f"t{ch}u"
    new_text = it.edit_table(doc, {}, [row()])
    assert new_text.startswith(text)


def test_undecodable_argument_text_is_a_usage_error() -> None:
    from agentmem_vault.errors import UsageError

    with pytest.raises(UsageError, match="UTF-8"):
        it.render_row(row(topic="bad \udc85 byte"))


def test_separator_with_single_hyphens_is_a_table_header() -> None:
    # GFM (and Obsidian) accept one hyphen per delimiter cell; a hand-typed `|-|-|…|` must not
    # make the whole index unreadable.
    text = "| " + " | ".join(it.COLUMNS) + " |\n|" + "-|" * len(it.COLUMNS) + "\n" + it.render_row(row()) + "\n"
    doc = it.parse_index(text)
    assert [r.session_id for r in doc.row_list()] == [row().session_id] and not doc.bad
