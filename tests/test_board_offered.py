"""The board's three defects of issue 23, on real files and real hook processes:

- the sessions a new chat is offered: one rule (board/rules.py ``offered_sessions``) for the hook's
  fast path (the board summary) and the full parse, for any number of active rows; the chat's own
  project's sessions first, then unknown ones, never another project's (docs/board.md);
- a board summary linked to the board (hard link or symbolic link) never destroys the board;
- one snapshot limit, the configured ``max_snapshot_bytes``, named in the refusal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentmem_vault.board import summary
from agentmem_vault.board import table as it
from agentmem_vault.recall.session_start import offered_sessions
from agentmem_vault.vault import Vault
from conftest import run_cli
from hooks_helpers import answer, context_of, cursor_start, hook_env, run_hook


def _sid(i: int) -> str:
    return f"2026-05-{1 + i // 1440:02d}-{(i // 60) % 24:02d}{i % 60:02d}-agent-{i}"


def _build(root: Path, rows: list[tuple[str, str, str]]) -> Vault:
    """A vault whose board has one row per (status, updated, project) and whose conversation
    pairs record each row's project ("" none)."""
    v = Vault(root)
    v.sessions_dir.mkdir(parents=True)
    v.state_dir.mkdir(parents=True)
    text = it.new_index_text()
    pairs = []
    for i, (status, updated, project) in enumerate(rows):
        sid = _sid(i)
        text += it.render_row(it.Row(sid, "agent", f"topic {i}", f"summary {i}", "k", status, "-", updated, updated))
        text += "\n"
        pair = {"time": "2026-05-01T00:00:00", "conversation_id": f"c-{i}", "session_id": sid, "agent": "cursor"}
        if project:
            pair["project"] = project
        pairs.append(json.dumps(pair) + "\n")
    v.index_path.write_text(text, encoding="utf-8")
    (v.state_dir / "conversations.jsonl").write_text("".join(pairs), encoding="utf-8")
    return v


def _rows(active: int) -> list[tuple[str, str, str]]:
    """``active`` active rows (and as many idle and stale ones) of projects A, B and none, with
    update times that do not follow board order (ties included)."""
    out = []
    for i in range(active):
        minute = (i * 37) % (active + 3)
        updated = f"2026-06-{1 + minute // 1440:02d} {(minute // 60) % 24:02d}:{minute % 60:02d}"
        out.append(("active", updated, ("proj-a", "proj-b", "", "proj-a")[i % 4]))
        out.append(("idle", updated, "proj-b"))
        out.append(("stale", updated, ""))
    return out


def _expected(rows: list[tuple[str, str, str]], project: str, exclude: str = "") -> list[str]:
    """The rule, restated from docs/board.md without the code: own project's active sessions most
    recent first, then those of unknown project, never another's; five at most."""
    active = [(u, i, p) for i, (s, u, p) in enumerate(rows) if s == "active" and _sid(i) != exclude]
    newest = sorted(active, key=lambda e: (e[0], -e[1]), reverse=True)
    own = [_sid(i) for _, i, p in newest if p == project]
    unknown = [_sid(i) for _, i, p in newest if not p]
    return (own + unknown)[:5]


@pytest.mark.parametrize("active", [5, 20, 200])
@pytest.mark.parametrize("project", ["proj-b", "proj-a", "elsewhere"])
def test_fast_path_and_full_board_offer_the_same_sessions(tmp_path: Path, active: int, project: str) -> None:
    rows = _rows(active)
    v = _build(tmp_path / "v", rows)
    exclude = _sid(3)
    want = _expected(rows, project, exclude)
    doc = it.parse_index(v.index_path.read_text(encoding="utf-8"))
    state = summary.load(v)  # the summary written by a full parse
    again = summary.load(v)  # and read back from board-cache.json: the hook's fast path
    assert state is not None and again is not None
    for board in (doc, state, again):
        got = offered_sessions(v, board, exclude=(exclude,), project_names=(project,))
        assert [h.session_id for h in got] == want
        assert all(h.status == "active" and doc.find(h.session_id) is not None for h in got)


def _listed(ctx: str, n: int) -> list[str]:
    """The board's Session IDs in the order the context lists them."""
    found = [(ctx.index(f"`{_sid(i)}`"), _sid(i)) for i in range(n) if f"`{_sid(i)}`" in ctx]
    return [sid for _, sid in sorted(found)]


def test_a_chat_in_project_b_is_offered_b_first_and_never_a(tmp_path: Path) -> None:
    """20 active rows whose 5 oldest are project B's (the case the fast path got wrong): a new chat
    in B, through the real hook, lists exactly those five; then a board with A's and unknown
    sessions only: B's chat gets the unknown ones, never A's."""
    rows = [("active", f"2026-06-01 10:{i:02d}", "proj-b" if i < 5 else "proj-a") for i in range(20)]
    v = _build(tmp_path / "v", rows)
    ws = tmp_path / "ws" / "proj-b"
    ws.mkdir(parents=True)
    for conv in ("new-b-1", "new-b-2"):  # the second hook runs on the summary the first one left
        proc = run_hook(
            "cursor-session-start", cursor_start(ws, conv=conv), cwd=ws, args=["--vault", str(v.root)], env=hook_env()
        )
        ctx = context_of(answer(proc)) or ""
        assert _listed(ctx, 20) == [_sid(i) for i in (4, 3, 2, 1, 0)], ctx
    rows = [("active", f"2026-06-01 10:{i:02d}", "proj-a" if i % 2 else "") for i in range(20)]
    v = _build(tmp_path / "v2", rows)
    proc = run_hook(
        "cursor-session-start", cursor_start(ws, conv="new-b-3"), cwd=ws, args=["--vault", str(v.root)], env=hook_env()
    )
    ctx = context_of(answer(proc)) or ""
    assert _listed(ctx, 20) == [_sid(i) for i in (18, 16, 14, 12, 10)], ctx


@pytest.mark.parametrize("link", ["hard", "symbolic"])
def test_a_summary_linked_to_the_board_never_destroys_it(tmp_path: Path, link: str) -> None:
    """``ln memory/index.md memory/.agentmem/board-cache.json``, then a sessionStart: the board
    keeps its rows and gains the chat's, and ``list`` still shows them (the summary is replaced by
    temp file + rename, never written through a link)."""
    if link == "symbolic" and os.name == "nt":
        pytest.skip("symbolic links need privileges on Windows")
    v = _build(tmp_path / "v", [("active", "2026-06-01 10:00", "")] * 3)
    cache = summary.cache_path(v)
    if link == "hard":
        os.link(v.index_path, cache)
    else:
        cache.symlink_to(Path("..") / "index.md")
    board = v.index_path.read_bytes()
    for conv in ("linked-1", "linked-2"):
        proc = run_hook("cursor-session-start", cursor_start(v.root, conv=conv), cwd=v.root, env=hook_env())
        assert "Your Memory Session ID is:" in (context_of(answer(proc)) or "")
    after = v.index_path.read_bytes()
    assert after.startswith(board) and len(it.parse_index(after.decode("utf-8")).ids()) == 5
    listed = json.loads(run_cli("list", "--json", vault=v).stdout)
    assert len(listed["rows"] if isinstance(listed, dict) else listed) == 5
    assert not cache.is_symlink() and os.stat(cache).st_ino != os.stat(v.index_path).st_ino


SNAPSHOT = "# Session: {sid}\n\n## Current Context\n\n{body}\n"


def test_the_configured_snapshot_limit_is_the_only_one(vault: Vault) -> None:
    """``max_snapshot_bytes: 3000000``: a 1.5 MB snapshot is taken; a 3.5 MB one is refused by a
    message naming the setting and its value. The default (1,000,000) holds without a config."""
    reg = json.loads(run_cli("register", "--json", vault=vault).stdout)
    sid = reg["session_id"]
    big = SNAPSHOT.format(sid=sid, body="- " + "x" * 1_500_000)
    assert run_cli("update", sid, "--snapshot", "-", vault=vault, input=big).returncode == 1
    vault.config_path.write_text("max_snapshot_bytes: 3000000\n", encoding="utf-8")
    p = run_cli("update", sid, "--snapshot", "-", vault=vault, input=big)
    assert p.returncode == 0, p.stderr
    assert len(vault.session_path(sid).read_bytes()) > 1_500_000
    huge = SNAPSHOT.format(sid=sid, body="- " + "y" * 3_500_000)
    p = run_cli("update", sid, "--snapshot", "-", vault=vault, input=huge)
    assert p.returncode != 0 and "max_snapshot_bytes" in p.stderr and "3,000,000" in p.stderr
    assert "y" * 100 not in vault.session_path(sid).read_text(encoding="utf-8")


@pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")
def test_a_config_cache_linked_to_the_board_is_replaced_not_written_through(tmp_path: Path) -> None:
    """The parsed copy of config.yaml (``.agentmem/cache/config.json``) is a cache file too: one
    linked to the board is replaced, and the board keeps its rows."""
    v = _build(tmp_path / "v", [("active", "2026-06-01 10:00", "")] * 3)
    cache = v.state_dir / "cache" / "config.json"
    cache.parent.mkdir(parents=True)
    cache.symlink_to(Path("..") / ".." / "index.md")
    v.config_path.write_text("stale_days: 30\n", encoding="utf-8")
    board = v.index_path.read_bytes()
    proc = run_hook("cursor-session-start", cursor_start(v.root, conv="cfg"), cwd=v.root, env=hook_env())
    assert "Your Memory Session ID is:" in (context_of(answer(proc)) or "")
    assert v.index_path.read_bytes().startswith(board) and not cache.is_symlink()
    assert json.loads(cache.read_text(encoding="utf-8"))["data"] == {"stale_days": 30}


def test_pair_projects_read_by_byte_search_agree_with_json() -> None:
    """The hook reads each session's project from conversations.jsonl by byte search; it must
    give what parsing every line as JSON gives (escapes, non-ASCII, empty, damaged lines)."""
    import random

    from agentmem_vault.ops.conversations import _json_lines, pair_project, pair_projects

    rng = random.Random(3)
    lines = []
    for i in range(3000):
        e = {
            "time": "t",
            "conversation_id": f"c{i}",
            "session_id": _sid(i % 700),
            "agent": "cursor",
            "source": "startup",
        }
        if rng.random() < 0.5:
            e["project"] = rng.choice(["p1", "p2", "東京", 'q"uote', "back\\slash", ""])
        if rng.random() < 0.3:
            e["workspace"] = '/x/"y"'
        lines.append(json.dumps(e, ensure_ascii=rng.random() < 0.5))
    lines[100:100] = ['{"broken": "project": "x"', '{"session_id": "2026-05-01-0000-x", "project": "cut']
    data = ("\n".join(lines) + "\n").encode("utf-8")
    want = {}
    for obj in _json_lines(data):  # every line as JSON
        sid, proj = obj.get("session_id"), obj.get("project")
        if isinstance(sid, str) and isinstance(proj, str) and proj:
            want[sid] = proj
    assert pair_projects(data) == want and len(want) > 300
    assert all(pair_project(data, _sid(i)) == want.get(_sid(i), "") for i in range(700))


def test_context_offers_the_folders_projects_sessions_then_unknown_never_anothers(tmp_path: Path) -> None:
    """`agentmem context` (and so MCP memory_context, the same build_context) in project B's folder:
    B's active sessions most recent first, then those of unknown project, never A's, whichever is
    newest; --project A and --all-projects widen it (docs/projects.md)."""
    rows = [
        ("active", "2026-06-01 10:05", "proj-a"),
        ("active", "2026-06-01 10:04", "proj-a"),
        ("active", "2026-06-01 10:01", "proj-b"),
        ("active", "2026-06-01 10:03", ""),
        ("active", "2026-06-01 10:02", "proj-b"),
    ]
    v = _build(tmp_path / "v", rows)
    ws = tmp_path / "ws" / "proj-b"
    ws.mkdir(parents=True)

    def offered(*args: str) -> list[str]:
        proc = run_cli("context", "an unrelated task", "--json", *args, vault=v, cwd=ws)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return [s["session_id"] for s in json.loads(proc.stdout)["sessions"]]

    assert offered() == [_sid(4), _sid(2), _sid(3)]
    assert offered("--project", "proj-a") == [_sid(0), _sid(1), _sid(3)]
    assert offered("--all-projects") == [_sid(0), _sid(1), _sid(3)]
