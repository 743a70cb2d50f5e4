"""Obsidian-native browsing (docs/obsidian.md): Properties on snapshots and archives kept equal to
their tables by every operation, links that resolve before and after archive, property types,
Bases views. Real files in tmp vaults; the daemon runs in-process without its observer thread."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import props_of, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_vault.vault import Vault
from agentmem_vault.errors import SnapshotFormatError
from agentmem_vault.board import table as it
from agentmem_vault.model import session_props as sp
from agentmem_vault.model.snapshot import parse_snapshot, render_snapshot
from agentmem_vault.board.register import register_idle

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
SID = "2026-06-01-0930-cursor-main-agent"


def snapshot(
    sid: str = SID,
    *,
    topic: str = "Obsidian 瀏覽",
    updated: str = "2026-06-01 09:30",
    continues: tuple[str, ...] = (),
    status: str = "active",
) -> str:
    cf = "\n".join(f"- {c}" for c in continues) or "None"
    return (
        f"# Session: {sid}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Session ID | {sid} |\n"
        f"| Agent Name | cursor-main-agent |\n| Topic | {topic} |\n| Status | {status} |\n"
        f"| Started At | 2026-06-01 09:30 |\n| Updated At | {updated} |\n\n## Current Context\nWorking.\n\n"
        f"## Decisions\n- use Properties\n\n## Continues From\n{cf}\n"
    )


# -- the pure model -------------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
CELL = TEXT.map(lambda s: " ".join(s.replace("|", "/").split()))  # what a table cell can hold
KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(lambda k: k not in sp.PROPERTY_TYPES)


@SETTINGS
@given(
    topic=CELL,
    summary=CELL,
    keywords=st.lists(
        CELL.filter(lambda s: s and "," not in s and "，" not in s and "、" not in s and ";" not in s), max_size=4
    ),
    user=st.dictionaries(KEYS, TEXT | st.integers() | st.lists(TEXT, max_size=3), max_size=3),
    crlf=st.booleans(),
    bom=st.booleans(),
)
def test_frontmatter_equals_the_tables_and_the_rest_of_the_file_is_kept(topic, summary, keywords, user, crlf, bom):
    body = snapshot(topic=topic or "t")
    if user:  # a user's own properties, written by another YAML writer
        body = "---\n" + yaml.safe_dump(user, allow_unicode=True, sort_keys=False) + "---\n\n" + body
    if crlf:
        body = body.replace("\n", "\r\n")
    text = ("\ufeff" if bom else "") + body
    board = sp.BoardFacts("stale", summary, ", ".join(keywords), "-")
    out = sp.sync_props(text, kind=sp.LIVE, board=board, session_id=SID)
    props = props_of(out)

    def filled(cell: str) -> str | None:  # "-" is the tables' empty cell (docs/board.md), as "" is
        return cell.strip() if cell.strip() not in ("", "-") else None

    assert props["topic"] == (topic.strip() or "t") or (props["topic"] is None and not filled(topic))
    assert props["summary"] == filled(summary)
    assert props["keywords"] == list(dict.fromkeys(k for k in map(filled, keywords) if k))  # a list, deduplicated
    assert props["status"] == "stale" and props["aliases"][-1] == SID and sp.SESSION_TAG in props["tags"]
    said = yaml.safe_load(yaml.safe_dump(user, allow_unicode=True)) if user else {}  # what the user's file says
    for k, v in said.items():  # the user's keys and values survive
        assert props[k] == v
    assert sp.disagreements(out, kind=sp.LIVE, board=board, session_id=SID) == []
    assert sp.sync_props(out, kind=sp.LIVE, board=board, session_id=SID) == out  # idempotent
    # Everything after the frontmatter is the original text, byte for byte (line ends and BOM too).
    original_body = body.split("---" + ("\r\n" if crlf else "\n"), 2)[-1] if user else body
    assert out.endswith(original_body.lstrip("\r\n") if not user else original_body)
    assert out.startswith("\ufeff---") if bom else out.startswith("---")
    assert ("\r\n" in out) == crlf and ("\n" not in out.replace("\r\n", "")) if crlf else True
    assert parse_snapshot(out).metadata == parse_snapshot(text).metadata


@SETTINGS
@given(
    st.dictionaries(KEYS, TEXT | st.integers() | st.booleans() | st.lists(TEXT, max_size=3), max_size=6),
    st.sampled_from(["block", "flow"]),
    st.booleans(),
)
def test_parse_render_frontmatter_is_byte_identical(data, style, comment):
    raw = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, default_flow_style=(style == "flow")).rstrip("\n")
    if comment:
        raw = "# my notes\n" + raw + "\n# end"
    fm = sp.parse_frontmatter(raw)
    assert sp.render_frontmatter(fm) == raw
    assert fm.data == (yaml.safe_load(raw) or {})


def test_cjk_quotes_colons_and_yaml_words_read_back_as_strings():
    for s in [
        "未設定",
        "a: b",
        "yes",
        "No",
        "0o17",
        "1.5",
        "-x",
        "[[x]]",
        "#tag",
        'say "hi"',
        "a #b",
        "~",
        "",
        "2026-06-01",
        "tab\there",
        "nel\x85x",
        "\u2028",
        "trailing ",
        "=",
        "<<",
        "a=b",
        "null",
    ]:
        line = sp.render_entry("topic", s)
        assert yaml.safe_load(line) == {"topic": s}, line


def test_datetimes_are_written_as_obsidian_documents_them():
    assert sp.obsidian_datetime("2026-05-25 13:18") == "2026-05-25T13:18:00"
    assert sp.obsidian_datetime("2026-05-25T13:18:07") == "2026-05-25T13:18:07"
    assert sp.obsidian_datetime("2026-05-25") == "2026-05-25T00:00:00"
    assert sp.obsidian_datetime("-") is None and sp.obsidian_datetime("soon") == "soon"
    out = sp.sync_props(snapshot(), kind=sp.LIVE, board=None, session_id=SID)
    assert "\nstarted: 2026-06-01T09:30:00\n" in out and "\nupdated: 2026-06-01T09:30:00\n" in out


def test_user_keys_and_formatting_are_kept_and_only_stale_keys_change():
    text = sp.sync_props(snapshot(), kind=sp.LIVE, board=None, session_id=SID)
    edited = text.replace("topic: Obsidian 瀏覽", "topic: edited in Obsidian\nrating: 5  # mine\nmy_list: [a, b]")
    edited = edited.replace("  - agent-memory/session", "  - agent-memory/session\n  - project/x")
    assert sp.disagreements(edited, kind=sp.LIVE, board=None, session_id=SID) == ["topic"]
    fixed = sp.sync_props(edited, kind=sp.LIVE, board=None, session_id=SID)
    assert "topic: Obsidian 瀏覽\nrating: 5  # mine\nmy_list: [a, b]\n" in fixed  # toward the table
    assert props_of(fixed)["tags"] == ["agent-memory/session", "project/x"]  # a user's tag stays


@pytest.mark.parametrize(
    "bad, why",
    [
        ("---\ntopic: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a list\n---\n", "not a list of properties"),
        ("---\ntopic: a\ntopic: b\n---\n", "more than once"),
        ("---\ntopic: a\n", "not closed"),
        ("---\nupdated: 2026-13-45T10:00:00\n---\n", "month must be"),
        ('---\n"\\x41": 1\n"\\x41": 2\n---\n', "not valid YAML|more than once"),
        ("---\n" + "[" * 2000 + "\n---\n", "not valid YAML"),
    ],
)
def test_malformed_frontmatter_is_a_clear_error(bad, why):
    with pytest.raises(SnapshotFormatError, match=why):
        sp.sync_props(bad + snapshot(), kind=sp.LIVE, board=None, session_id=SID)


def test_merge_and_readers_accept_both_forms():
    from agentmem_vault.model.snapshot_merge import merge_snapshots

    with_fm = sp.sync_props(
        snapshot(continues=("2026-05-25-1318-cursor-main-agent",)), kind=sp.LIVE, board=None, session_id=SID
    )
    old = parse_snapshot(with_fm)
    merged = merge_snapshots(
        old, parse_snapshot(snapshot(continues=("[[2026-05-26-0900-b]]",))), updated_at="2026-06-02 10:00"
    )
    assert merged.frontmatter == old.frontmatter
    assert merged.continues_from == ["2026-05-25-1318-cursor-main-agent", "2026-05-26-0900-b"]
    assert parse_snapshot(render_snapshot(merged)).continues_from == merged.continues_from


# -- every operation keeps frontmatter == tables ----------------------------------------------------


def all_session_files(v: Vault) -> list[Path]:
    return sorted(v.sessions_dir.glob("*.md")) + sorted(v.archive_dir.glob("*/*.md"))


def assert_in_step(v: Vault) -> None:
    """Every file with frontmatter agrees with its Metadata table and board row / archive index."""
    from agentmem_vault.ops.obsidian import property_problems

    assert property_problems(v) == []
    doc = it.parse_index(v.index_path.read_text(encoding="utf-8"))
    for path in all_session_files(v):
        text = path.read_text(encoding="utf-8")
        if sp.split_text(text).frontmatter is None:
            continue
        props, snap = props_of(text), parse_snapshot(text)
        sid = path.stem if path.parent == v.sessions_dir else path.parent.name
        assert props["session_id"] == sid and props["topic"] == (snap.metadata.get("Topic") or None)
        assert props["updated"].strftime("%Y-%m-%d %H:%M") == snap.metadata["Updated At"]
        if path.parent == v.sessions_dir:
            row = doc.find(sid)
            assert props["continues_from"] == [f"[[{s}]]" for s in snap.continues_from]
            if row is not None:
                assert props["status"] == row.status and props["summary"] == row.summary
                assert props["referenced_by"] == [f"[[{s}]]" for s in row.referencing_ids]
        else:
            assert props["status"] == "archived" and props["archived"] is not None


@pytest.fixture
def clock(monkeypatch):
    def at(ts: str) -> None:
        monkeypatch.setenv("AGENTMEM_NOW", ts)

    at("2026-06-01T09:30")
    return at


def test_every_session_operation_keeps_properties_equal_to_the_tables(vault, clock):
    from agentmem_vault.journal import restore_row
    from agentmem_vault.ops.archive import archive
    from agentmem_vault.ops.lifecycle import organize
    from agentmem_vault.ops.sessions import (
        continue_session,
        register_manual,
        release_reference,
        update_session,
    )

    a = register_manual(vault, "cursor-main-agent", topic="來源 A", snapshot_text="## Decisions\n- d1\n").session_id
    assert_in_step(vault)
    props = props_of(vault.session_path(a).read_text(encoding="utf-8"))
    assert props["status"] == "active" and props["keywords"] == [
        "manual-registration",
        "cursor-agent",
        "session-snapshot",
    ]
    clock("2026-06-01T10:00")
    b = register_idle(vault, "cursor-main-agent").session_id
    update_session(vault, b, snapshot_text=snapshot(b, topic="B 工作"), keywords="b, 工作")
    assert_in_step(vault)
    clock("2026-06-01T11:00")
    continue_session(vault, a, session_id=b)
    assert_in_step(vault)
    assert props_of(vault.session_path(a).read_text(encoding="utf-8"))["referenced_by"] == [f"[[{b}]]"]
    text_b = vault.session_path(b).read_text(encoding="utf-8")
    assert f"- [[{a}]]" in text_b  # Continues From written as a link
    # register, update and continue write b's snapshot once each, its Properties in that same write
    actions = [json.loads(x) for x in vault.journal_path.read_text(encoding="utf-8").splitlines()]
    assert [
        e["action"]
        for e in actions
        if e.get("session_id") == b and e["action"] in ("write_snapshot", "sync_properties")
    ] == ["write_snapshot", "write_snapshot"]
    assert any(
        e["action"] == "sync_properties" and e.get("session_id") == a for e in actions
    )  # the source's row changed
    idle = register_idle(vault, "cursor-main-agent").session_id  # continue promotes it: new keywords, status
    continue_session(vault, a, session_id=idle)
    actions = [json.loads(x) for x in vault.journal_path.read_text(encoding="utf-8").splitlines()]
    assert [
        e["action"]
        for e in actions
        if e.get("session_id") == idle and e["action"] in ("write_snapshot", "sync_properties")
    ] == ["write_snapshot"]
    assert_in_step(vault)
    release_reference(vault, a, session_id=idle)
    release_reference(vault, a, session_id=b)
    assert_in_step(vault)
    continue_session(vault, a, session_id=b)
    clock("2026-07-01T09:00")
    plan = organize(vault, stale_days=14)
    assert b in plan.marked_stale
    assert props_of(vault.session_path(b).read_text(encoding="utf-8"))["status"] == "stale"
    assert_in_step(vault)
    archive(vault, b)
    assert_in_step(vault)
    assert props_of(vault.session_path(a).read_text(encoding="utf-8"))["referenced_by"] == []
    # an idle row deleted by organize comes back with restore; a snapshot made for it follows its row
    c = register_idle(vault, "cursor-main-agent").session_id
    organize(vault)
    restore_row(vault, c)
    assert_in_step(vault)


def test_old_snapshots_are_upgraded_on_their_next_write_and_never_otherwise(vault, clock):
    from agentmem_vault.ops.lifecycle import organize
    from agentmem_vault.ops.sessions import continue_session, update_session

    old, cur = "2026-05-01-0900-cursor-main-agent", "2026-05-02-0900-cursor-main-agent"
    rows = [
        it.Row(s, "cursor-main-agent", "舊", "old work", "k", "active", "-", "2026-05-01 09:00", "2026-05-01 09:00")
        for s in (old, cur)
    ]
    vault.index_path.write_text(it.new_index_text() + "".join(it.render_row(r) + "\n" for r in rows), encoding="utf-8")
    before = snapshot(old, topic="舊", updated="2026-05-01 09:00").replace("\n", "\r\n").encode("utf-8")
    vault.session_path(old).write_bytes(before)
    continue_session(vault, old, session_id=cur)  # old is the source: its row changes, not its file
    organize(vault, stale_days=14)  # cur is referenced; old becomes stale on the board only
    assert vault.session_path(old).read_bytes() == before
    assert_in_step(vault)
    clock("2026-06-02T10:00")
    update_session(vault, old, snapshot_text="## Decisions\n- more\n")
    after = vault.session_path(old).read_bytes()
    assert (
        after.startswith(b"---\r\n")
        and b"\r\n---\r\n\r\n# Session: " in after
        and b"\n" not in after.replace(b"\r\n", b"")
    )
    assert_in_step(vault)


def test_a_file_with_lone_cr_line_ends_keeps_one_frontmatter_and_its_line_ends():
    # old Mac editors write lone CRs: the snapshot parser sees its lines, so the frontmatter reader must
    cr = sp.sync_props(snapshot(), kind=sp.LIVE, board=None, session_id=SID).replace("\n", "\r")
    assert sp.sync_props(cr, kind=sp.LIVE, board=None, session_id=SID) == cr
    fresh = sp.sync_props(snapshot().replace("\n", "\r"), kind=sp.LIVE, board=None, session_id=SID)
    assert fresh.count("---\r") == 2 and "\n" not in fresh and fresh.startswith("---\raliases:\r")
    assert sp.disagreements(
        fresh.replace("topic: Obsidian 瀏覽", "topic: x"), kind=sp.LIVE, board=None, session_id=SID
    ) == ["topic"]


def test_malformed_frontmatter_refuses_writers_and_doctor_reports_it(vault, clock):
    register_idle(vault, "cursor-main-agent")
    sid = it.parse_index(vault.index_path.read_text(encoding="utf-8")).ids()[0]
    bad = "---\ntopic: [oops\n---\n" + snapshot(sid)
    vault.session_path(sid).write_text(bad, encoding="utf-8")
    index_before = vault.index_path.read_bytes()
    p = run_cli("update", sid, "--snapshot", "-", vault=vault, input="## Decisions\n- x\n")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "frontmatter is not valid YAML at line 3, column 1" in p.stderr and "nothing was written" in p.stderr
    assert vault.session_path(sid).read_text(encoding="utf-8") == bad and vault.index_path.read_bytes() == index_before
    d = run_cli("doctor", "--json", vault=vault)
    found = [f for f in json.loads(d.stdout)["findings"] if f["kind"] == "properties_malformed"]
    assert d.returncode == 1 and found and found[0]["session_id"] == sid
    # Another session continuing from it only changes its row: that succeeds, the file is left alone.
    from agentmem_vault.ops.sessions import continue_session, register_manual

    other = register_manual(vault, "cursor-main-agent", topic="接續").session_id
    continue_session(vault, sid, session_id=other)
    assert vault.session_path(sid).read_text(encoding="utf-8") == bad
    assert other in it.parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid).referencing_ids


def test_doctor_fix_and_the_daemon_resolve_a_hand_edit_toward_the_table(vault, clock):
    from agentmem_vault.daemon.scan import scan_memory
    from agentmem_vault.daemon.service import Daemon
    from agentmem_vault.ops.doctor import diagnose, repair
    from agentmem_vault.ops.sessions import register_manual

    sid = register_manual(vault, "cursor-main-agent", topic="表格為準").session_id
    path = vault.session_path(sid)
    good = path.read_text(encoding="utf-8")
    path.write_text(good.replace("topic: 表格為準", "topic: 手改\nmine: kept"), encoding="utf-8")
    assert [f.kind for f in diagnose(vault).findings] == ["properties_disagree"]
    report = repair(vault)
    assert report.findings[0].fixed and report.backup
    assert path.read_text(encoding="utf-8") == good.replace("topic: 表格為準", "topic: 表格為準\nmine: kept")
    assert (vault.root / report.backup / "sessions" / f"{sid}.md").is_file()
    # the daemon: a hand edit of the Properties is put back, the user's own key stays
    path.write_text(good.replace("status: active", "status: done\nmine: again"), encoding="utf-8")
    d = Daemon(vault, rescan_seconds=30, debounce_seconds=0, quiet_minutes=0, extractor_loader=lambda v: (None, "off"))
    d.queue.load()
    d.passes.folder = scan_memory(vault.memory)
    d.passes.reconcile_pass()
    assert path.read_text(encoding="utf-8") == good.replace("status: active", "status: active\nmine: again")
    assert_in_step(vault)
    # the board changes under it (a hand edit of the row's Status, the snapshot's Metadata still
    # active): the daemon resolves it toward the Metadata as doctor --fix does, and the Properties
    # follow the row (docs/board.md "Row and snapshot in step")
    vault.index_path.write_text(
        vault.index_path.read_text(encoding="utf-8").replace("| active |", "| stale |"), encoding="utf-8"
    )
    d.passes.handle_paths(["index.md"])
    assert it.parse_index(vault.index_path.read_text(encoding="utf-8")).get(sid).status == "active"
    assert props_of(path.read_text(encoding="utf-8"))["status"] == "active"
    assert_in_step(vault)
    # a snapshot copied in with Properties but no row: the daemon adds the row, the Properties follow it
    new = "2026-05-20-0800-cursor-main-agent"
    vault.session_path(new).write_text(
        sp.sync_props(snapshot(new), kind=sp.LIVE, board=None, session_id=new), encoding="utf-8"
    )
    d.passes.handle_paths([f"sessions/{new}.md"])
    assert it.parse_index(vault.index_path.read_text(encoding="utf-8")).find(new) is not None
    assert props_of(vault.session_path(new).read_text(encoding="utf-8"))["summary"]
    assert_in_step(vault)


# -- links resolve by Obsidian's rules, before and after archive -----------------------------------


def resolve(vault_root: Path, target: str) -> list[Path]:
    """Obsidian's link resolution, reduced to what matters here: a ``[[target]]`` goes to the note
    whose file name (without .md) equals target case-insensitively, else to notes with that alias."""
    t = target.split("#", 1)[0].split("|", 1)[0].strip().casefold()
    notes = [p for p in vault_root.rglob("*.md") if ".agentmem" not in p.parts]
    by_name = [p for p in notes if p.stem.casefold() == t]
    if by_name:
        return by_name
    out = []
    for p in notes:
        try:
            aliases = props_of(p.read_text(encoding="utf-8")).get("aliases") or []
        except SnapshotFormatError:
            continue
        if any(str(a).casefold() == t for a in (aliases if isinstance(aliases, list) else [aliases])):
            out.append(p)
    return out


def links_in(vault_root: Path) -> dict[Path, list[str]]:
    return {
        p: re.findall(r"\[\[([^\[\]]+)\]\]", p.read_text(encoding="utf-8"))
        for p in vault_root.rglob("*.md")
        if ".agentmem" not in p.parts
    }


def test_every_link_to_a_session_resolves_before_and_after_archive(vault, clock):
    from agentmem_vault.ops.archive import archive
    from agentmem_vault.ops.sessions import (
        continue_session,
        register_manual,
        release_reference,
    )

    src = register_manual(vault, "cursor-main-agent", topic="來源").session_id
    clock("2026-06-01T10:00")
    cur = register_manual(vault, "cursor-main-agent", topic="接續").session_id
    continue_session(vault, src, session_id=cur)
    note = vault.longterm_dir / "規則.md"
    note.write_text(
        f'---\ntitle: 規則\nsources: ["[[{src}]]"]\ntags: [agent-memory/long-term]\n---\n見 [[{src.upper()}]]\n',
        encoding="utf-8",
    )
    pointing = {p: [t for t in ts if t.casefold() == src.casefold()] for p, ts in links_in(vault.root).items()}
    pointing = {p: ts for p, ts in pointing.items() if ts}
    assert len(pointing) >= 2  # the continuing snapshot (section and properties) and the note
    for ts in pointing.values():
        for t in ts:
            assert resolve(vault.root, t) == [vault.session_path(src)]
    release_reference(vault, src, session_id=cur)
    archive(vault, src)
    archived = vault.archive_path(src) / "session.md"
    for ts in pointing.values():
        for t in ts:
            assert resolve(vault.root, t) == [archived], t  # by alias now, and only to the snapshot
    assert resolve(vault.root, f"{src} archive index") == [vault.archive_path(src) / "index.md"]


def test_long_term_notes_link_their_source_sessions(vault, clock):
    """The one note model (model/notes.py) writes a session source as a quoted [[id]] link, which
    resolves to the snapshot before archive and by alias after it."""
    from agentmem_vault.model.ids import link as as_link
    from agentmem_vault.model.notes import Note, parse_note, render_note
    from agentmem_vault.ops.archive import archive
    from agentmem_vault.ops.sessions import register_manual

    sid = register_manual(vault, "cursor-main-agent", topic="來源").session_id
    text = render_note(
        Note(
            id="lt-1",
            title="規則",
            category="project_introduction",
            created="2026-06-01T09:30",
            updated="2026-06-01T09:30",
            sources=[as_link(sid)],
            content="內容",
        )
    )
    assert props_of(text)["sources"] == [f"[[{sid}]]"] and parse_note(text).source_ids == [sid]
    (vault.longterm_dir / "規則.md").write_text(text, encoding="utf-8")
    assert resolve(vault.root, sid) == [vault.session_path(sid)]
    archive(vault, sid)
    assert resolve(vault.root, sid) == [vault.archive_path(sid) / "session.md"]
    sample = Path(__file__).resolve().parents[1] / "sample_vault" / "memory" / "long-term"
    for p in sample.glob("*.md"):
        sources = parse_note(p.read_text(encoding="utf-8")).sources
        assert sources and all(re.fullmatch(r"\[\[[^\[\]]+\]\]", s) for s in sources)
        for s in sources:
            assert len(resolve(sample.parents[1], s[2:-2])) == 1, s


# -- property types and Bases ------------------------------------------------------------------------


def test_init_merges_types_into_an_existing_obsidian_folder_only(tmp_path):
    from agentmem_vault.ops.board import init_vault

    plain = Vault(tmp_path / "plain")
    plain.root.mkdir()
    init_vault(plain)
    assert not (plain.root / ".obsidian").exists()
    assert (plain.memory / "Sessions.base").is_file() and (plain.memory / "Long-term memories.base").is_file()

    v = Vault(tmp_path / "obs")
    (v.root / ".obsidian").mkdir(parents=True)
    app = '{"alwaysUpdateLinks": true}\n'
    (v.root / ".obsidian" / "app.json").write_text(app, encoding="utf-8")
    old = {"types": {"status": "checkbox", "rating": "number"}, "other": 1}
    (v.root / ".obsidian" / "types.json").write_text(json.dumps(old), encoding="utf-8")
    res = init_vault(v)
    types = json.loads((v.root / ".obsidian" / "types.json").read_text(encoding="utf-8"))
    assert types["other"] == 1 and types["types"]["rating"] == "number"  # others' settings untouched
    assert types["types"]["status"] == "text" and types["types"]["updated"] == "datetime"
    assert types["types"]["keywords"] == "multitext" and types["types"]["importance"] == "number"
    assert json.loads((v.root / res["types_backup"]).read_text(encoding="utf-8")) == old
    assert (v.root / ".obsidian" / "app.json").read_text(encoding="utf-8") == app
    again = init_vault(v)
    assert again["types_changed"] == [] and again["created"] == []
    # a user's edited base is never overwritten
    (v.memory / "Sessions.base").write_text("views: []\n", encoding="utf-8")
    init_vault(v)
    assert (v.memory / "Sessions.base").read_text(encoding="utf-8") == "views: []\n"


FILE_PROPS = {
    "name",
    "path",
    "folder",
    "ext",
    "size",
    "ctime",
    "mtime",
    "tags",
    "links",
    "backlinks",
    "embeds",
    "properties",
    "file",
}
_IDENT = re.compile(
    r"(?<![\w.\"'])((?:note|file|formula)\.)?([A-Za-z_][A-Za-z0-9_]*)(?=\s*(?:[=!<>+\-*/%)]|\.[a-z]|$|,))"
)
_FUNCTIONS = {"if", "now", "today", "date", "list", "link", "number", "true", "false", "null", "file", "this"}


def referenced(expr: str) -> set[str]:
    """Property names an expression uses (``note.x``/bare ``x``, ``file.x``, ``formula.x``)."""
    stripped = re.sub(r'"[^"]*"', '""', expr)
    out = set()
    for m in _IDENT.finditer(stripped):
        prefix, name = m.group(1) or "", m.group(2)
        if not prefix and name in _FUNCTIONS:
            continue
        if not prefix and m.start() and stripped[m.start() - 1] == ".":
            continue  # a method such as .relative(
        out.add(prefix + name)
    return out


def base_references(data: dict) -> set[str]:
    refs: set[str] = set()

    def filters(f: object) -> None:
        if isinstance(f, str):
            refs.update(referenced(f))
        elif isinstance(f, dict):
            for v in f.values():
                filters(v)
        elif isinstance(f, list):
            for v in f:
                filters(v)

    filters(data.get("filters"))
    for expr in (data.get("formulas") or {}).values():
        refs.update(referenced(expr))
    refs.update(data.get("properties") or {})
    for view in data["views"]:
        assert view["type"] == "table" and view["name"]
        filters(view.get("filters"))
        refs.update(view.get("order") or [])
        refs.update(s["property"] for s in view.get("sort") or [])
        assert all(s["direction"] in ("ASC", "DESC") for s in view.get("sort") or [])
        if "groupBy" in view:
            refs.add(view["groupBy"]["property"])
            assert view["groupBy"]["direction"] in ("ASC", "DESC")
    return refs


def test_bases_are_valid_and_reference_only_properties_we_write(vault, clock):
    from agentmem_vault.ops.archive import archive
    from agentmem_vault.ops.obsidian import BASES, base_template
    from agentmem_vault.ops.sessions import register_manual

    a = register_manual(vault, "cursor-main-agent", topic="t").session_id
    clock("2026-06-01T10:00")
    b = register_manual(vault, "cursor-main-agent", topic="u").session_id
    archive(vault, b)
    written: set[str] = set()
    for p in all_session_files(vault):
        written |= set(props_of(p.read_text(encoding="utf-8")))
    assert {"referenced_by", "continues_from", "archived", "original_status", "project"} <= written
    sample = Path(__file__).resolve().parents[1] / "sample_vault" / "memory" / "long-term"
    notes: set[str] = set()
    for p in sample.glob("*.md"):
        notes |= set(props_of(p.read_text(encoding="utf-8")))
    from agentmem_vault.model.notes import KNOWN_KEYS

    notes |= set(KNOWN_KEYS)  # what the note model writes (optional keys only when set)
    for name, props in zip(BASES, (written, notes)):
        data = yaml.safe_load(base_template(name))
        assert set(data) <= {"filters", "formulas", "properties", "views", "summaries"}
        formulas = set(data.get("formulas") or {})
        for ref in base_references(data):
            kind, _, prop = ref.rpartition(".")
            if kind == "formula":
                assert prop in formulas, (name, ref)
            elif kind == "file":
                assert prop in FILE_PROPS, (name, ref)
            else:
                assert prop in props, (name, ref)
        assert (vault.memory / name).read_text(encoding="utf-8") == base_template(name)
    assert a


def test_sample_vault_shows_it_all():
    root = Path(__file__).resolve().parents[1] / "sample_vault"
    v = Vault(root)
    from agentmem_vault.ops.obsidian import BASES

    for name in BASES:
        assert (v.memory / name).is_file()
    assert json.loads((root / ".obsidian" / "types.json").read_text(encoding="utf-8"))["types"]["updated"] == "datetime"
    assert list(v.archive_dir.glob("*/session.md")) and all(
        sp.split_text(p.read_text(encoding="utf-8")).frontmatter is not None for p in all_session_files(v)
    )
    assert_in_step(v)


def test_a_git_merge_of_two_snapshots_merges_their_properties_key_by_key():
    from agentmem_vault.model.merge3 import merge_snapshot_texts

    base = sp.sync_props(snapshot(), kind=sp.LIVE, board=sp.BoardFacts("active", "s", "k", "-"), session_id=SID)
    ours = sp.sync_props(
        base.replace("- use Properties", "- use Properties\n- ours").replace(
            "| Updated At | 2026-06-01 09:30 |", "| Updated At | 2026-06-02 10:00 |"
        ),
        kind=sp.LIVE,
        board=None,
        session_id=SID,
    ).replace("tags:\n", "mine: 1\ntags:\n")
    theirs = sp.sync_props(
        base.replace("- use Properties", "- use Properties\n- theirs")
        .replace("| Topic | Obsidian 瀏覽 |", "| Topic | 新主題 |")
        .replace("| Updated At | 2026-06-01 09:30 |", "| Updated At | 2026-06-01 12:00 |"),
        kind=sp.LIVE,
        board=None,
        session_id=SID,
    ).replace("  - agent-memory/session", "  - agent-memory/session\n  - theirs-tag")
    out = merge_snapshot_texts(base, ours, theirs)
    assert out.clean
    props = props_of(out.text)
    assert props["mine"] == 1 and "theirs-tag" in props["tags"] and props["topic"] == "新主題"
    assert props["updated"].strftime("%Y-%m-%d %H:%M") == "2026-06-02 10:00" and props["summary"] == "s"
    assert sp.disagreements(out.text, kind=sp.LIVE, board=sp.BoardFacts("active", "s", "k", "-"), session_id=SID) == []


def test_doctor_fix_merges_the_property_types(vault):
    from agentmem_vault.ops.doctor import diagnose, repair

    (vault.root / ".obsidian").mkdir()
    (vault.root / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    assert [f.kind for f in diagnose(vault).findings] == ["obsidian_types"]
    report = repair(vault)
    assert all(f.fixed for f in report.findings)
    types = json.loads((vault.root / ".obsidian" / "types.json").read_text(encoding="utf-8"))["types"]
    assert types == sp.PROPERTY_TYPES and diagnose(vault).findings == []
    assert (vault.root / ".obsidian" / "app.json").read_text(encoding="utf-8") == "{}"


@SETTINGS
@given(
    st.lists(
        st.sampled_from(
            [
                "a: 1",
                "b:",
                "  - x",
                "- y",
                "# c",
                "",
                "'q': 2",
                '"k\\x41": 3',
                "c: [1, 2",
                "d: {e: 1}",
                "? f",
                ": g",
                "h: |",
                "  text",
                "i: 2026-06-01T09:30:00",
                "j: *k",
                "k: &k v",
                "l: !!binary aGk=",
                "m: 日本語",
                "\t",
                "n: 'it''s'",
            ]
        )
        | st.text(max_size=8),
        max_size=8,
    )
)
def test_any_frontmatter_text_is_read_exactly_or_refused_clearly(lines):
    raw = "\n".join(lines)
    try:
        fm = sp.parse_frontmatter(raw)
    except SnapshotFormatError:
        return
    assert sp.render_frontmatter(fm) == raw
    try:
        out = sp.sync_frontmatter(raw, {"topic": "t", "tags": [sp.SESSION_TAG]})
    except SnapshotFormatError:
        return  # e.g. a value that cannot be written back as it was read: refused, nothing written
    assert sp.parse_frontmatter(out).data["topic"] == "t"


def test_project_comes_from_a_project_row_else_it_is_the_users():
    with_row = snapshot().replace("| Status | active |", "| Project | shop |\n| Status | active |")
    assert props_of(sp.sync_props(with_row, kind=sp.LIVE, board=None, session_id=SID))["project"] == "shop"
    mine = sp.sync_props(snapshot(), kind=sp.LIVE, board=None, session_id=SID).replace("project:\n", "project: 私人\n")
    assert sp.sync_props(mine, kind=sp.LIVE, board=None, session_id=SID) == mine  # kept, not a disagreement
    fixed = sp.sync_props(
        mine.replace("| Status | active |", "| Project | shop |\n| Status | active |"),
        kind=sp.LIVE,
        board=None,
        session_id=SID,
    )
    assert props_of(fixed)["project"] == "shop"  # once the table says, the table wins


def test_an_example_row_in_a_code_fence_does_not_hide_the_row_from_the_properties(vault, clock) -> None:
    """A board-only change resyncs the properties from the row read by the board's rule: a row
    inside a code fence is text (was: counted as a second row of the session, so the source's
    properties kept their old Referenced By)."""
    src = register_idle(vault, "cursor-main-agent").session_id
    assert run_cli("update", src, "--snapshot", "-", vault=vault, input=snapshot(src)).returncode == 0
    text = vault.index_path.read_text(encoding="utf-8")
    example = it.render_row(it.parse_index(text).get(src).with_(summary="just an example"))
    vault.index_path.write_text(text + f"\nExample:\n```\n{it.header_lines()}{example}\n```\n", encoding="utf-8")
    clock("2026-06-01T10:00")
    new = register_idle(vault, "other-agent").session_id
    cont = run_cli("continue", src, "--session", new, vault=vault)
    assert cont.returncode == 0, cont.stderr
    props = props_of(vault.session_path(src).read_text(encoding="utf-8"))
    assert props["referenced_by"] == [f"[[{new}]]"]
