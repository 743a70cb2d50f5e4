"""The sessionStart hook path stays light: checked through sys.modules in a real subprocess.

Also covers the console script that pip generates (it imports ``agentmem_vault.entry``) via
``-X importtime``, and the warm config path (PyYAML only right after config.yaml changed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem_vault.vault import Vault

from hooks_helpers import RULE, claude_start, cursor_start, hook_env, id_from

HEAVY = {
    "click",
    "yaml",
    "filelock",
    "anthropic",
    "watchdog",
    "frontmatter",
    "httpx",
    "pydantic",
    "hanziconv",
    "rjieba",
}

# Not heavy, but each costs the hook more than its own work (docs/performance.md): the session-start
# path (new chat and known chat, recall index present, board summary warm) never imports them.
SLOW_STDLIB = {
    "dataclasses",
    "typing",
    "hashlib",
    "_hashlib",
    "inspect",
    "_strptime",
    "sqlite3",
    "locale",
    "ast",
    "threading",
    "contextlib",
    "datetime",  # the C classes come from _datetime (agentmem_vault/fastimport.py)
    "ipaddress",  # pathlib is imported without urllib.parse (agentmem_vault/fastimport.py)
    "math",  # a C extension module: only a long token's entropy needs it (model/redact.py)
}

PROBE = r"""
import json, sys
out = sys.argv[1]
sys.argv = ["agentmem"] + sys.argv[2:]
# What the interpreter brought before our code (an editable install's import hook imports
# pathlib, contextlib, urllib.parse...) is forgotten, so that what the hook imports shows.
for name in [m for m in sys.modules if m.split(".")[0] in %r]:
    del sys.modules[name]
from agentmem_vault import entry
try:
    entry.main(sys.argv[1:])  # an argv of its own: no os._exit, so that the probe can write its list
except SystemExit:
    pass
with open(out, "w", encoding="utf-8") as fh:
    json.dump(sorted(sys.modules), fh)
""" % sorted(SLOW_STDLIB | {"pathlib", "urllib"})


def _modules(tmp_path: Path, hook: str, payload: dict, cwd: Path) -> tuple[set[str], dict]:
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), "hook", hook],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=cwd,
        env=hook_env(),
    )
    assert proc.returncode == 0, proc.stderr
    mods = set(json.loads(out.read_text(encoding="utf-8")))
    return {m.split(".")[0] for m in mods}, json.loads(proc.stdout)


def test_hook_path_imports_nothing_heavy_cold_and_warm(vault: Vault, tmp_path: Path) -> None:
    vault.config_path.write_text("stale_days: 14\n", encoding="utf-8")  # changed config: cold path
    top, ans = _modules(tmp_path, "cursor-session-start", cursor_start(vault.root, conv="a"), tmp_path)
    assert id_from(ans)
    assert not (top & (HEAVY - {"yaml"})), top & HEAVY
    # warm: the parsed config is cached as JSON, so not even PyYAML is imported
    top, ans = _modules(tmp_path, "claude-session-start", claude_start(vault.root, sid="b"), tmp_path)
    assert id_from(ans)
    assert not (top & HEAVY), top & HEAVY
    top, ans = _modules(
        tmp_path,
        "cursor-session-end",
        {
            "conversation_id": "a",
            "transcript_path": str(Path.home() / ".cursor/projects/p/agent-transcripts/t.jsonl"),
            "workspace_roots": [str(vault.root)],
        },
        tmp_path,
    )
    assert ans == {} and not (top & HEAVY)


def test_failure_path_imports_nothing_heavy(tmp_path: Path) -> None:
    top, ans = _modules(tmp_path, "cursor-session-start", {"workspace_roots": [str(tmp_path)]}, tmp_path)
    assert "no vault found" in ans["additional_context"] and "agentmem setup" in ans["additional_context"]
    assert not (top & HEAVY)


def test_console_script_takes_the_fast_path(vault: Vault, tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "agentmem"
    if not script.is_file():
        found = shutil.which("agentmem")
        if not found:
            pytest.skip("agentmem console script not installed")
        script = Path(found)
    run = lambda: subprocess.run(
        [sys.executable, "-X", "importtime", str(script), "hook", "cursor-session-start"],  # noqa: E731
        input=json.dumps(cursor_start(vault.root, conv="s")).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=hook_env(),
    )
    run()  # warm the config cache
    proc = run()
    assert proc.returncode == 0
    assert id_from(json.loads(proc.stdout)) == "2026-06-01-0930-cursor-main-agent"
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in proc.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert "agentmem_vault" in imported
    assert not (imported & HEAVY), imported & HEAVY


def test_session_start_path_imports_no_slow_stdlib(vault: Vault, tmp_path: Path) -> None:
    from agentmem_vault.recall.index import reindex

    slow = HEAVY | SLOW_STDLIB

    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "rule.md").write_text(
        "---\nid: lt-1\ntitle: Use pnpm\nimportance: 0.95\nstatus: active\nupdated: 2026-05-01T10:00\n---\n"
        "Always use pnpm in this repo.\n",
        encoding="utf-8",
    )
    reindex(vault)
    top, ans = _modules(tmp_path, "cursor-session-start", cursor_start(vault.root, conv="k"), tmp_path)  # new chat
    sid = id_from(ans)
    assert "Use pnpm" in json.dumps(ans, ensure_ascii=False)
    top, ans = _modules(
        tmp_path, "cursor-session-start", cursor_start(vault.root, conv="n2"), tmp_path
    )  # new chat, warm
    assert id_from(ans) != sid
    assert not (top & slow), top & slow
    top, ans = _modules(tmp_path, "cursor-session-start", cursor_start(vault.root, conv="k"), tmp_path)  # known chat
    assert id_from(ans) == sid
    assert "Use pnpm" in json.dumps(ans, ensure_ascii=False)
    assert not (top & slow), top & slow


# The recall part of sessionStart reads the prebuilt index without importing its builder.
BUILDER = {"agentmem_vault.recall.index", "agentmem_vault.model.notes", "agentmem_vault.model.textnorm"}


def _run_start(tmp_path: Path, vault: Vault, conv: str) -> tuple[set[str], dict]:
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), "hook", "cursor-session-start"],
        input=json.dumps(cursor_start(vault.root, conv=conv)).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=hook_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(out.read_text(encoding="utf-8"))), json.loads(proc.stdout)


def test_session_start_recall_does_not_import_the_index_builder(vault: Vault, tmp_path: Path) -> None:
    from agentmem_vault.recall.index import RecallIndex

    mods, ans = _run_start(tmp_path, vault, "no-index")
    assert id_from(ans) and "sqlite3" not in mods and not (mods & BUILDER), mods & BUILDER
    vault.longterm_dir.mkdir(parents=True, exist_ok=True)
    (vault.longterm_dir / "回答語言.md").write_text(RULE, encoding="utf-8")
    RecallIndex(vault).sync()
    mods, ans = _run_start(tmp_path, vault, "with-index")
    assert "以後回答一律用繁體中文" in ans["additional_context"]
    assert not (mods & BUILDER), mods & BUILDER


def test_short_texts_are_redacted_without_compiling_a_pattern() -> None:
    """Every write of the hook is redacted and short: no pattern is compiled for it (the
    prefilter's ~0.5 ms, docs/performance.md), and the answer is the pattern's."""
    from agentmem_vault.model import redact

    redact._words_re.cache_clear()
    redact._searched = 0  # as in a new hook process
    words = redact.builtin_patterns().prefilter
    assert redact.redact("| 2026-06-01-0930-cursor-main-agent | cursor-main-agent | 主題 | idle |") is not None
    assert not redact.has_word("topic: nothing to see", words)
    assert redact.has_word("my API_KEY here", words) and redact.has_word("密碼 是", words)
    assert redact._words_re.cache_info().currsize == 0
    long = "x " * 5000 + "token"
    assert redact.has_word(long, words) and redact._words_re.cache_info().currsize == 1  # a long text: the pattern
    redact._words_re.cache_clear()
    for n in range(100):  # a transcript's many short turns: past 4 kB, the pattern
        assert not redact.has_word(f"turn {n}: nothing to see here, move along now", words)
    assert redact._words_re.cache_info().currsize == 1


@given(st.text(alphabet="apsktoenb_-:/ 密碼金鑰İıſKxyzAPIKEY", max_size=60))
def test_the_short_text_search_answers_as_the_pattern(text: str) -> None:
    from agentmem_vault.model import redact

    redact._searched = 0  # the word-by-word search
    words = redact.builtin_patterns().prefilter
    data = text.encode("utf-8", "surrogatepass").lower()
    want = redact._words_re(words, any(c in text for c in redact._CASE_ODD)).search(
        text if any(c in text for c in redact._CASE_ODD) else data
    )
    assert redact.has_word(text, words) == (want is not None)
