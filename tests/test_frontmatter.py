"""One frontmatter splitter (``model/yamlload.split_frontmatter``): notes, snapshots and archive
indexes, and every reader of them (note read, recall index, doctor, MCP, the merge driver), give one
answer for the same text (docs/notes.md, "Reading rules" and "Malformed notes")."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError
from test_mcp_server import server_params

from agentmem_vault.errors import NoteFormatError, SnapshotFormatError
from agentmem_vault.model import session_props as sp
from agentmem_vault.model.merge3 import Unmergeable, merge_note_texts
from agentmem_vault.model.notes import parse_note, salvage_body
from agentmem_vault.model.snapshot import parse_snapshot
from agentmem_vault.recall.index import RecallIndex
from agentmem_vault.vault import Vault

BODY = "# Session: 2026-01-01-0000-cursor\n\nkept body\n"
UNCLOSED = "unclosed"
CASES = [
    # (text, the properties every reader finds, or UNCLOSED)
    ("---\nrating: a\n---\n" + BODY, {"rating": "a"}),
    ("\ufeff---\r\nrating: a\r\n---\r\n" + BODY.replace("\n", "\r\n"), {"rating": "a"}),
    ("---\nrating: a\n...\n" + BODY, {"rating": "a"}),  # YAML's document end closes it too
    ("---\nnote: |\n  ---\n  indented\nrating: a\n---\n" + BODY, {"note": "---\nindented\n", "rating": "a"}),
    ("\ufeff\ufeff---\nrating: a\n---\n" + BODY, {"rating": "a"}),
    (" ---\nrating: a\n---\n" + BODY, {}),  # an indented first line opens nothing
    ("---\n---\n" + BODY, {}),
    ("", {}),
    (BODY, {}),
    ("---\nrating: a\n" + BODY, UNCLOSED),
    ("---", UNCLOSED),
    ("---\n", UNCLOSED),
    ("\ufeff---\r\nrating: a\r\n", UNCLOSED),
]


def _note(text: str) -> dict | str:
    try:
        return parse_note(text).extra
    except NoteFormatError as exc:
        assert "not closed" in str(exc), exc
        return UNCLOSED


def _props(text: str) -> dict | str:
    """What doctor and the writers of snapshots and archive indexes read."""
    try:
        fm = sp.split_text(text).frontmatter
    except SnapshotFormatError as exc:
        assert "not closed" in exc.message, exc
        return UNCLOSED
    return {} if fm is None else sp.parse_frontmatter(fm).data


@pytest.mark.parametrize("text, want", CASES)
def test_every_model_reader_splits_alike(text: str, want: dict | str) -> None:
    assert _note(text) == want
    assert _props(text) == want
    if "kept body" not in text:
        return
    snap = parse_snapshot(text)  # readers of the tables: an unclosed fence is body, never lost
    got = {} if snap.frontmatter is None else sp.parse_frontmatter(snap.frontmatter).data
    assert got == ({} if want == UNCLOSED else want)
    assert snap.title == "2026-01-01-0000-cursor" and "kept body" in snap.preamble
    if want == UNCLOSED:
        assert "rating: a" in snap.preamble and "rating: a" in salvage_body(text.encode())
    assert "kept body" in salvage_body(text.encode())


NOTE_BODY = "Deploy with blue-green, never in place.\n"


def _mcp_memory(vault: Vault, key: str) -> str:
    out: list[str] = []

    async def main() -> None:
        async with Client(server_params(vault), mode="legacy", read_timeout_seconds=120) as c:
            try:
                res = await c.read_resource(f"agentmem://memory/{key}")
                out.append(res.contents[0].text)  # type: ignore[union-attr]
            except MCPError as exc:
                out.append(f"error: {exc}")

    anyio.run(main)
    return out[0]


def _index_error(vault: Vault, name: str) -> tuple[str | None, str]:
    idx = RecallIndex(vault)
    try:
        idx.rebuild()
        assert idx.conn is not None
        idx.conn.row_factory = sqlite3.Row
        row = idx.conn.execute("SELECT error, content FROM notes WHERE path = ?", (name,)).fetchone()
        return row["error"], row["content"]
    finally:
        idx.close()


def test_every_front_end_reads_a_note_alike(vault: Vault, cli) -> None:
    """A note closed by ``...`` is read by all (was: malformed for notes, read for snapshots); an
    unclosed one is reported with the same reason by memories show, MCP, the recall index, doctor
    (was: "healthy") and the merge driver, and its body stays findable."""
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    dots = "---\nid: lt-d0d0d0\ntitle: Dots\nkeywords: [deploy]\n...\n" + NOTE_BODY
    (vault.longterm_dir / "dots.md").write_text(dots, encoding="utf-8")
    (vault.longterm_dir / "open.md").write_text("---\ntitle: Open\n" + NOTE_BODY, encoding="utf-8")
    shown = cli("memories", "show", "lt-d0d0d0", "--json", vault=vault)
    assert shown.returncode == 0 and json.loads(shown.stdout)["keywords"] == ["deploy"], shown.stderr
    assert "blue-green" in _mcp_memory(vault, "lt-d0d0d0")
    assert _index_error(vault, "dots.md")[0] is None

    reason = "the frontmatter is not closed by a '---' line"
    bad = cli("memories", "show", "open", vault=vault)
    assert bad.returncode == 1 and f"open.md: {reason}" in bad.stderr
    assert f"open.md: {reason}" in _mcp_memory(vault, "open")
    error, content = _index_error(vault, "open.md")
    assert error == reason and "blue-green" in content
    doctor = json.loads(cli("doctor", "--json", vault=vault).stdout)
    found = [f for f in doctor["findings"] if f["kind"] == "note_unreadable"]
    assert [f["message"] for f in found] == [f"memory/long-term/open.md: {reason}"]
    text = (vault.longterm_dir / "open.md").read_text(encoding="utf-8")
    with pytest.raises(Unmergeable, match=reason):
        merge_note_texts(text, text + "more\n", text, lambda o, a, b: (a, True))


def test_doctor_and_the_writers_read_an_indented_fence_inside_a_block_as_text(vault: Vault, cli) -> None:
    """``  ---`` inside a ``|`` block is YAML text, not the closing fence (was, for snapshots: the
    frontmatter cut there, reported malformed and every write refused)."""
    sid = json.loads(cli("register", "--manual", "--topic", "fence", "--json", vault=vault).stdout)["session_id"]
    snap = f"# Session: {sid}\n\n## Current Context\nWorking.\n"
    assert cli("update", sid, "--snapshot", "-", input=snap, vault=vault).returncode == 0
    path = vault.session_path(sid)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("---\n", "---\nnote: |\n  ---\n  mine\n", 1), encoding="utf-8")
    doctor = json.loads(cli("doctor", "--json", vault=vault).stdout)
    assert not [f for f in doctor["findings"] if f["kind"].startswith("properties")], doctor["findings"]
    assert cli("update", sid, "--snapshot", "-", input=snap, vault=vault).returncode == 0
    assert "note: |\n  ---\n  mine\n" in path.read_text(encoding="utf-8")


def test_the_splitter_keeps_what_it_does_not_own(tmp_path: Path) -> None:
    from agentmem_vault.model.yamlload import split_frontmatter

    text = "\ufeff---\r\na: 1\r\n...\r\nbody\r\n"
    parts = split_frontmatter(text)
    assert (parts.bom, parts.newline, parts.frontmatter, parts.fence_close, parts.body) == (
        "\ufeff",
        "\r\n",
        "a: 1",
        "...",
        "body\r\n",
    )
    assert sp.join_text(parts, "a: 1") == text


@pytest.mark.parametrize("where", ["note", "config"])
def test_a_tagged_value_yaml_cannot_read_is_a_clear_error(vault: Vault, cli, where: str) -> None:
    """``!!bool maybe`` (a tag whose values PyYAML looks up by name) in a note's frontmatter or in
    config.yaml: the one YAML loader's error, naming the file, never a traceback (was: KeyError)."""
    if where == "note":
        vault.longterm_dir.mkdir(parents=True, exist_ok=True)
        note = "---\ntitle: Use structlog\nverified: !!bool maybe\n---\n\nUse structlog.\n"
        (vault.longterm_dir / "use-structlog.md").write_text(note, encoding="utf-8")
        got = cli("memories", "list", vault=vault)
        assert "use-structlog.md" in got.stdout + got.stderr
    else:
        (vault.state_dir / "config.yaml").write_text("recall:\n  enabled: !!bool maybe\n", encoding="utf-8")
        got = cli("context", "fix the build", vault=vault)
        assert got.returncode != 0 and "config.yaml is not valid YAML" in got.stderr
    assert "Traceback" not in got.stderr, got.stderr
