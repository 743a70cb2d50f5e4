"""What a chat was given (the injection audit, `agentmem injected`) and recall at the prompt (the
`UserPromptSubmit` hooks of Claude Code and Codex): real hook processes fed real JSON, a real
vault with real notes, the audit read back through the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.recall import audit
from agentmem_vault.recall.index import reindex
from hooks_helpers import answer, claude_start, run_hook
from recall_helpers import write_note

NOTES = [
    {
        "id": "lt-aaa001",
        "title": "Always run ruff format before every commit",
        "keywords": ["ruff", "format", "commit"],
        "content": "Run ruff format before every commit; CI rejects unformatted code.",
        "importance": 0.95,
        "updated": "2026-05-20T10:00",
    },
    {
        "id": "lt-bbb002",
        "title": "Billing webhooks are retried three times",
        "keywords": ["billing", "webhook", "retry"],
        "content": "The billing service retries a failed webhook three times with exponential backoff (1s, 4s, 16s).",
        "project": "shop",
        "updated": "2026-05-21T10:00",
    },
    {
        "id": "lt-ccc003",
        "title": "Billing webhooks in the old system were never retried",
        "keywords": ["billing", "webhook", "retry"],
        "content": "In the other project, billing webhooks are fire-and-forget, never retried.",
        "project": "legacy",
        "updated": "2026-05-21T10:00",
    },
    {
        "id": "lt-ddd004",
        "title": "Use pnpm for JavaScript packages",
        "keywords": ["pnpm", "npm", "packages"],
        "content": "Install JavaScript packages with pnpm, never npm or yarn.",
        "updated": "2026-05-22T10:00",
    },
]
PROMPT = "How often does billing retry a webhook that failed?"


@pytest.fixture
def shop(vault: Vault, tmp_path: Path) -> tuple[Vault, Path]:
    for n in NOTES:
        write_note(vault.longterm_dir, n)
    reindex(vault)
    folder = tmp_path / "shop"
    folder.mkdir()
    return vault, folder


def _start(vault: Vault, folder: Path, conv: str) -> tuple[str, str]:
    proc = run_hook(
        "claude-session-start", claude_start(folder, sid=conv), cwd=folder, args=["--vault", str(vault.root)]
    )
    text = answer(proc)["hookSpecificOutput"]["additionalContext"]
    return re.search(r"Session ID is: (\S+)", text).group(1), text  # type: ignore[union-attr]


def _prompt(vault: Vault, folder: Path, conv: str, prompt: str, agent: str = "claude", **extra) -> dict:
    payload = {
        "session_id": conv,
        "transcript_path": None,
        "cwd": str(folder),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        **extra,
    }
    proc = run_hook(f"{agent}-user-prompt", payload, cwd=folder, args=["--vault", str(vault.root)])
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return answer(proc)


def _injected(vault: Vault, key: str) -> dict:
    from conftest import run_process

    proc = run_process(["--vault", str(vault.root), "injected", key, "--json"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_injected_lists_exactly_what_the_start_gave(shop: tuple[Vault, Path], cli) -> None:
    vault, folder = shop
    for topic in ("Checkout page redesign", "Billing webhook outage"):
        reg = cli("register", "--manual", "--topic", topic, "--summary", f"working on {topic}", vault=vault, cwd=folder)
        assert reg.returncode == 0, reg.stderr  # registered in this project: offered to its new chats
    sid, text = _start(vault, folder, "conv-1")
    shown_notes = set(re.findall(r"`(lt-[0-9a-f]{6})`", text))
    shown_sessions = set(re.findall(r"`(\d{4}-\d{2}-\d{2}-\d{4}-[a-z0-9-]+)`", text))
    assert shown_notes == {"lt-aaa001", "lt-ddd004"} or shown_notes >= {"lt-aaa001"}
    assert len(shown_sessions) == 2

    got = _injected(vault, sid)
    (entry,) = got["entries"]
    assert entry["source"] == "session-start" and entry["session_id"] == sid and entry["conversation_id"] == "conv-1"
    assert set(got["note_ids"]) == shown_notes and set(got["session_ids"]) == shown_sessions
    assert entry["budget"] == 1500 and 0 < entry["chars"] <= 1500 and entry["chars"] == len(text.split("\n\n", 1)[1])
    assert all(isinstance(n["score"], float) and n["shown"] in ("rule", "title") for n in entry["notes"])
    assert _injected(vault, "conv-1")["entries"] == got["entries"]  # the agent's own ID finds it too
    assert _injected(vault, "2026-01-01-0000-nobody")["entries"] == []
    recent = json.loads(cli("injected", "--json", vault=vault).stdout)["chats"]  # no ID: whom to ask about
    assert [c["session_id"] for c in recent] == [sid] and recent[0]["notes"] == len(shown_notes)
    assert sid in cli("injected", vault=vault).stdout


def test_prompt_adds_what_is_relevant_and_new_once(shop: tuple[Vault, Path]) -> None:
    vault, folder = shop
    sid, start = _start(vault, folder, "conv-2")
    assert "lt-aaa001" in start  # the rule came at the start

    got = _prompt(vault, folder, "conv-2", PROMPT)
    ctx = got["hookSpecificOutput"]["additionalContext"]
    assert got["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "lt-bbb002" in ctx and "three times" in ctx
    assert "lt-ccc003" not in ctx  # another project's memory: never here
    assert "lt-aaa001" not in ctx  # already given at the start
    assert len(ctx) <= 800

    assert _prompt(vault, folder, "conv-2", PROMPT) == {}  # given once: not again
    assert _prompt(vault, folder, "conv-2", "What is the weather like on Mars today?") == {}  # nothing relevant
    for bare in ("ok", "?", "👍", "..."):  # nothing to match: not the most important notes either
        assert _prompt(vault, folder, "conv-2b", bare) == {}, bare

    entries = _injected(vault, sid)["entries"]
    assert [e["source"] for e in entries] == ["session-start", "prompt"]
    assert [n["id"] for n in entries[1]["notes"]] == ["lt-bbb002"] and entries[1]["chars"] == len(ctx)
    # Another chat in the same project has not been given it.
    assert (
        "lt-bbb002"
        in _prompt(vault, folder, "conv-3", PROMPT, agent="codex")["hookSpecificOutput"]["additionalContext"]
    )


def test_prompt_stays_within_its_budget(shop: tuple[Vault, Path]) -> None:
    vault, folder = shop
    for i in range(12):
        write_note(
            vault.longterm_dir,
            {
                "id": f"lt-e{i:05d}",
                "title": f"Billing webhook rule {i}",
                "keywords": ["billing", "webhook", "retry"],
                "content": f"Billing webhook retry detail number {i}: " + "padding words " * 40,
                "project": "shop",
            },
        )
    reindex(vault)
    (vault.state_dir / "config.yaml").write_text("hook_prompt_budget: 300\n", encoding="utf-8")
    ctx = _prompt(vault, folder, "conv-4", PROMPT)["hookSpecificOutput"]["additionalContext"]
    assert 0 < len(ctx) <= 300
    (e,) = audit.entries(vault, "conv-4")
    assert e["budget"] == 300 and e["chars"] == len(ctx) and e["session_id"] is None  # no sessionStart seen


def test_prompt_never_breaks(shop: tuple[Vault, Path], tmp_path: Path) -> None:
    vault, folder = shop
    log = vault.state_dir / "hooks.log"
    for bad in (b"", b"not json", b"[1, 2]"):
        proc = run_hook("claude-user-prompt", bad, cwd=folder, args=["--vault", str(vault.root)])
        assert proc.returncode == 0 and answer(proc) == {} and not proc.stderr
    assert log.read_text(encoding="utf-8").count("claude-user-prompt") == 3
    # A damaged index: nothing added, a log line, and the hook does not spend the prompt rebuilding it.
    db = vault.state_dir / "recall" / "index.sqlite3"
    db.write_bytes(b"this is not a database" * 100)
    assert _prompt(vault, folder, "conv-5", PROMPT) == {}
    assert db.read_bytes().startswith(b"this is not a database")
    # No vault at all.
    proc = run_hook("claude-user-prompt", {"session_id": "x", "cwd": str(tmp_path), "prompt": PROMPT}, cwd=tmp_path)
    assert proc.returncode == 0 and answer(proc) == {}
    # Switched off.
    reindex(vault)
    (vault.state_dir / "config.yaml").write_text("hook_prompt_recall: false\n", encoding="utf-8")
    assert _prompt(vault, folder, "conv-6", PROMPT) == {}


def test_a_note_edited_since_indexing_is_left_out_not_shown_stale(shop: tuple[Vault, Path]) -> None:
    vault, folder = shop
    p = vault.longterm_dir / "Billing webhooks are retried three times.md"
    p.write_text(p.read_text(encoding="utf-8").replace("three times", "five times"), encoding="utf-8")
    got = _prompt(vault, folder, "conv-7", PROMPT)
    assert "three times with exponential" not in json.dumps(got)


def test_the_audit_is_bounded(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit, "ROTATE_BYTES", 4000)
    for i in range(200):
        assert audit.record(vault, "prompt", session_id=f"s-{i}", budget=800, chars=10, notes=[])
    cur, old = audit.audit_paths(vault)
    assert cur.stat().st_size <= 4000 + 400 and old.stat().st_size <= 4000 + 400
    assert audit.entries(vault, "s-199") and not audit.entries(vault, "s-0")


def test_install_hook_adds_the_prompt_hook_for_claude_and_codex(vault: Vault, tmp_path: Path, cli) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    for agent, event_file in (("claude", ".claude/settings.json"), ("codex", ".codex/hooks.json")):
        assert cli("install-hook", agent, "--project", str(proj), vault=vault).returncode == 0
        doc = json.loads((proj / event_file).read_text(encoding="utf-8"))
        (group,) = doc["hooks"]["UserPromptSubmit"]
        assert f" hook {agent}-user-prompt --vault " in group["hooks"][0]["command"]
    assert cli("install-hook", "cursor", "--project", str(proj), vault=vault).returncode == 0
    cursor = json.loads((proj / ".cursor/hooks.json").read_text(encoding="utf-8"))
    assert "beforeSubmitPrompt" not in cursor["hooks"]  # it cannot add context (docs/recall.md)


def test_the_prompt_hook_path_stays_light(shop: tuple[Vault, Path], tmp_path: Path) -> None:
    """What keeps it within its budget (docs/performance.md): no CLI, YAML, SDK, segmenter, and not
    `dataclasses` (a sixth of its time, once)."""
    import subprocess
    import sys

    from hooks_helpers import hook_env

    vault, folder = shop
    out = tmp_path / "modules.json"
    probe = (
        "import json, sys\n"
        "sys.argv = ['agentmem'] + sys.argv[2:]\n"
        "from agentmem_vault import entry\n"
        "try:\n    entry.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "import os\n"
        "with open(os.environ['PROBE_OUT'], 'w', encoding='utf-8') as fh:\n    json.dump(sorted(sys.modules), fh)\n"
    )
    _prompt(vault, folder, "conv-warm", "anything")  # the config's parsed copy is cached: no PyYAML from here on
    payload = {"session_id": "conv-light", "cwd": str(folder), "prompt": PROMPT}
    proc = subprocess.run(
        [sys.executable, "-c", probe, "x", "hook", "claude-user-prompt", "--vault", str(vault.root)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=folder,
        env=hook_env({"PROBE_OUT": str(out)}),
    )
    assert proc.returncode == 0 and "lt-bbb002" in proc.stdout.decode(), proc.stdout + proc.stderr
    top = {m.split(".")[0] for m in json.loads(out.read_text(encoding="utf-8"))}
    heavy = {"click", "yaml", "filelock", "anthropic", "watchdog", "frontmatter", "pydantic", "rjieba", "dataclasses"}
    assert not (top & heavy), top & heavy
