"""Property tests (hypothesis) for snapshots: round-trip, normalisation, no old item lost, idempotence."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_vault.errors import SnapshotFormatError
from agentmem_vault.model.snapshot import (
    METADATA_FIELDS,
    SECTIONS,
    ExtraSection,
    Snapshot,
    in_render_order,
    parse_snapshot,
    render_snapshot,
    section_name,
)
from agentmem_vault.model.snapshot_merge import merge_snapshots
from agentmem_vault.model.snapshot import _FIELD_ALIASES, _is_filler
from agentmem_vault.model.snapshot_merge import (
    MOVABLE,
    item_key,
    parse_resolved,
    path_key,
    split_mark,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Letters, digits, punctuation and symbols from anywhere (CJK included), plus plain spaces and pipes;
# no control characters or exotic spaces (they are not content an agent writes).
CHARS = st.characters(whitelist_categories=("L", "N", "P", "S"), blacklist_characters="\x00") | st.sampled_from(
    list(" |`[]()*-#:：，。、測試決定鎖檔") + ["\u00e9", "\u4e2d"]
)


def line(min_size=1, max_size=20):
    return st.text(CHARS, min_size=min_size, max_size=max_size).map(str.strip).filter(bool)


def safe_line(**kw):
    """A line that cannot be read as a heading, a title or a frontmatter fence."""
    return line(**kw).filter(lambda s: not s.startswith("#") and s.strip() not in ("---", "..."))


LINE = line()
SAFE_LINE = safe_line()
BULLET_START = re.compile(r"^([-*+]|\d{1,3}[.)])(\s|$)")
# continuation lines, some indented further (nested bullets, code)
CONTINUATION = st.lists(st.tuples(st.booleans(), SAFE_LINE).map(lambda t: "  " * t[0] + t[1]), max_size=2)
LIST_ITEM = st.tuples(LINE, CONTINUATION).map(lambda t: "\n".join([t[0], *t[1]]))
CONTEXT_UNIT = st.one_of(
    st.tuples(SAFE_LINE.filter(lambda s: not BULLET_START.match(s)), st.lists(SAFE_LINE, max_size=2)).map(
        lambda t: "\n".join([t[0], *t[1]])
    ),
    LIST_ITEM.map(lambda s: "- " + s.replace("\n", "\n  ")),
)


def not_filler(s: str) -> bool:
    return not _is_filler(s) and not _is_filler(re.sub(r"^\s*[-*+]\s+", "", s))


def block():
    return st.lists(safe_line(), min_size=1, max_size=3).map("\n".join)


meta_key = line(max_size=12).filter(
    lambda k: re.search(r"\w", k) and re.sub(r"[^0-9a-z]", "", k.lower()) not in _FIELD_ALIASES and k.lower() != "field"
)


@st.composite
def snapshots(draw):
    meta = {}
    for f in METADATA_FIELDS:
        if draw(st.booleans()):
            meta[f] = draw(st.text(CHARS, max_size=15).map(str.strip))
    for k in draw(st.lists(meta_key, max_size=2, unique_by=str.lower)):
        meta[k] = draw(st.text(CHARS, max_size=10).map(str.strip))
    sections = {}
    for name in SECTIONS:
        strat = CONTEXT_UNIT if name == "Current Context" else LIST_ITEM
        sections[name] = draw(st.lists(strat.filter(not_filler), max_size=4))
    extras = draw(
        st.lists(
            st.builds(
                ExtraSection,
                heading=line(max_size=12).filter(lambda h: "#" not in h and section_name(h) is None),
                body=st.one_of(st.just(""), block()),
                after=st.sampled_from(["", "Metadata", *SECTIONS]),
            ),
            max_size=2,
        ).map(in_render_order)
    )
    return Snapshot(
        title=draw(st.one_of(st.just(""), line(max_size=30))),
        metadata=meta,
        sections=sections,
        frontmatter=draw(
            st.one_of(
                st.none(),
                st.lists(st.text(CHARS, max_size=12).filter(lambda s: s.strip() not in ("---", "...")), max_size=3).map(
                    "\n".join
                ),
            )
        ),
        preamble=draw(st.one_of(st.just(""), block())),
        metadata_notes=draw(
            st.lists(safe_line().filter(lambda s: s[0].isalnum() and ":" not in s and "：" not in s), max_size=2)
        ),
        extras=extras,
    )


@settings(SETTINGS, max_examples=75)
@given(snapshots(), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_render_then_parse_is_identity(s, newline, bom):
    text = render_snapshot(s, newline=newline, bom=bom)
    back = parse_snapshot(text)
    assert back == s
    assert back.crlf == (newline == "\r\n") and back.bom == bom


# Random Markdown-ish documents: whatever the parser makes of them, rendering is a fixed point.
DOC_LINES = st.one_of(
    st.sampled_from(
        [
            "",
            "# Session: 2026-06-01-0930-a",
            "## Metadata",
            "| Field | Value |",
            "|---|---|",
            "| Topic | x \\| y |",
            "## Decisions",
            "## current context",
            "## Files/Artifacts",
            "## Superseded / Resolved",
            "## Notes",
            "None",
            "無",
            "- item",
            "* star",
            "+ plus",
            "1. one",
            "2) two",
            "  continued",
            "\tTabbed",
            "---",
            "- [done] N1",
            "- [[2026-05-25-1318-a]]",
            "Topic: t",
            "- Session ID: z",
            "## ",
            "##NoSpace",
            "### sub",
        ]
    ),
    st.text(CHARS, max_size=15),
)


@SETTINGS
@given(st.lists(DOC_LINES, max_size=25), st.sampled_from(["\n", "\r\n"]))
def test_parse_of_any_text_is_an_error_or_a_render_fixed_point(lines, newline):
    text = newline.join(lines)
    try:
        s = parse_snapshot(text)
    except SnapshotFormatError:
        return
    once = render_snapshot(s)
    assert parse_snapshot(once) == s
    assert render_snapshot(parse_snapshot(once)) == once


# -- merge properties -------------------------------------------------------------------------

BASE = [
    "Use SQLite for the index cache",
    "Use Postgres for the index cache",
    "Keep the CLI a thin shell",
    "Locks live outside the synced folder",
    "鎖檔放在使用者快取目錄",
    "锁档放在使用者快取目录",
    "Write round-trip tests",
    "F1",
    "N1",
    "Q1",
    "src/a.py",
    "`src\\a.py`",
    "決定使用 SQLite 儲存索引",
]
SUFFIX = ["", "", ", with WAL mode enabled", " (confirmed)", "，並開啟 WAL", " now"]
MARKS = ["", "", "", "[superseded] ", "[DONE] ", "[resolved] ", "[已取代] ", "[已解決] ", "[已完成] ", "[x] "]
IDS = ["2026-05-25-1318-a", "[[2026-05-26-0900-b]]", "2026-05-27-0900-c"]


@st.composite
def merge_item(draw, marks=True):
    mark = draw(st.sampled_from(MARKS)) if marks else ""
    return mark + draw(st.sampled_from(BASE)) + draw(st.sampled_from(SUFFIX))


@st.composite
def merge_snapshot(draw, sid="2026-06-01-0930-a"):
    sections = {name: [] for name in SECTIONS}
    for name in SECTIONS:
        if name == "Continues From":
            sections[name] = draw(st.lists(st.sampled_from(IDS), max_size=3))
        elif name == "Superseded / Resolved":
            sections[name] = draw(
                st.lists(
                    st.builds(
                        lambda m, o, t: f"{m}({o}) {t}" if o else m + t,
                        st.sampled_from(["[done] ", "[superseded] ", "[已解決] ", ""]),
                        st.sampled_from(["", *MOVABLE]),
                        merge_item(marks=False),
                    ),
                    max_size=3,
                )
            )
        else:
            sections[name] = draw(st.lists(merge_item(marks=name != "Current Context"), max_size=6))
    meta = {"Session ID": sid, "Started At": "2026-06-01 09:30"} if draw(st.booleans()) else {}
    return Snapshot(title=sid, metadata=meta, sections=sections)


def survives(section: str, item: str, merged: Snapshot) -> bool:
    """Independent oracle: the old item is still in its section as the same text after
    normalisation (or, in Current Context, whole inside an extended paragraph), or it is recorded
    in Superseded / Resolved. No near-duplicate counts: nothing whose text differs is dropped."""
    _, _, text = split_mark(item) if section in MOVABLE else (None, None, item)
    keyf = path_key if section == "Files / Artifacts" else item_key
    context = section == "Current Context"
    for m in merged.sections[section]:
        if keyf(m) in (keyf(item), keyf(text)) or (context and item_key(item) in item_key(m)):
            return True
    for e in merged.sections["Superseded / Resolved"]:
        _, _, origin, t = parse_resolved(e)
        if origin in (None, section) and keyf(t) == keyf(text):
            return True
    return False


@settings(SETTINGS, max_examples=250)
@given(merge_snapshot(), merge_snapshot())
def test_merge_never_loses_an_old_item_and_is_idempotent(old, incoming):
    merged = merge_snapshots(old, incoming, updated_at="2026-06-02 10:00")
    for section in SECTIONS:
        if section == "Continues From":
            assert set(old.continues_from) <= set(merged.continues_from)
        elif section == "Superseded / Resolved":
            assert {item_key(e) for e in old.sections[section]} <= {item_key(e) for e in merged.sections[section]}
        else:
            for item in old.sections[section]:
                assert survives(section, item, merged), (section, item)
    # every incoming unmarked item is reflected verbatim; every marked one is recorded
    for section in MOVABLE:
        for item in incoming.sections[section]:
            mark, _, text = split_mark(item)
            keyf = path_key if section == "Files / Artifacts" else item_key
            if mark is None:
                assert any(keyf(m) == keyf(item) for m in merged.sections[section]) or any(
                    keyf(parse_resolved(e)[3]) == keyf(item) for e in merged.sections["Superseded / Resolved"]
                )
            else:
                assert not any(keyf(m) == keyf(text) for m in merged.sections[section])
    assert merge_snapshots(merged, incoming, updated_at="2026-06-02 10:00") == merged
    assert parse_snapshot(render_snapshot(merged)) == merged
