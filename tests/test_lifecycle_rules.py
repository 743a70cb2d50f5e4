"""The agent instruction file and install-rules."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from agentmem_vault.errors import UsageError
from agentmem_vault.integrations.rules import BEGIN, END, merge_block, template_text, with_command
from agentmem_vault.model.triggers import load_phrases, route


def test_mdc_frontmatter_and_content():
    text = template_text("agent-memory.mdc")
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert m
    front = yaml.safe_load(m.group(1))
    assert front["alwaysApply"] is True and front["description"]
    for needle in (
        "agentmem update",
        "--snapshot - <<'EOF'",
        "'@ | agentmem update",
        "agentmem whoami --conversation",
        "agentmem register --manual",
        "agentmem organize",
        "agentmem archive",
        "agentmem release",
        "agentmem continue",
        'agentmem say "',
        "整理這個 session",
        "Never edit anything under `memory/` by hand",
    ):
        assert needle in text, needle


@pytest.mark.parametrize("name", ["agent-memory.mdc", "agents-snippet.md"])
def test_every_traditional_phrase_is_in_the_instructions(name):
    text = template_text(name)
    for p in load_phrases():
        if p.form == "traditional":
            assert p.text in text, p.text


@pytest.mark.parametrize("name", ["agent-memory.mdc", "agents-snippet.md"])
def test_table_rows_name_the_command_the_router_picks(name):
    """Each row of the phrase table runs the command `say` would route its phrases to."""
    text = template_text(name)
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "`agentmem " in ln]
    assert len(rows) == 6
    for ln in rows:
        phrases, command = ln.split("|")[1], ln.split("|")[2]
        cmd = re.search(r"`agentmem (\w+)", command).group(1)
        for ph in phrases.split("·"):
            ph = re.sub(r"\(.*?\)|<ID>|\*", "", ph).strip()
            assert route(ph).command == cmd, ph


def test_snippet_keeps_snapshot_headings_inside_code():
    text = template_text("agents-snippet.md")
    assert "\n## Current Context\n" in text and "\n## Agent Memory (agentmem)\n" in text
    assert "alwaysApply" not in text


def test_install_rules_fresh_unchanged_and_user_modified(tmp_path, cli):
    proj = tmp_path / "我的 專案"
    proj.mkdir()
    proc = cli("install-rules", "--project", str(proj), "--agents-md", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [f["status"] for f in out["files"]] == ["installed", "installed"]
    rule = proj / ".cursor" / "rules" / "agent-memory.mdc"
    assert rule.read_text(encoding="utf-8") == with_command(template_text("agent-memory.mdc"))  # + how to run it
    assert (proj / "AGENTS.md").read_text(encoding="utf-8").startswith(BEGIN)

    again = json.loads(cli("install-rules", "--project", str(proj), "--agents-md", "--json").stdout)
    assert [f["status"] for f in again["files"]] == ["unchanged", "unchanged"]

    rule.write_text("my own edits\n", encoding="utf-8")
    proc = cli("install-rules", "--project", str(proj))
    assert proc.returncode == 0 and "backup" in proc.stdout
    backups = list(rule.parent.glob("agent-memory.mdc.agentmem-backup-*"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == "my own edits\n"
    assert rule.read_text(encoding="utf-8") == with_command(template_text("agent-memory.mdc"))  # + how to run it


def test_agents_md_block_merge_keeps_the_rest():
    block = "## Agent Memory\nrun agentmem\n"
    existing = "# My project\r\n\r\nOur rules.\r\n"
    merged = merge_block(existing, block)
    assert merged.startswith(existing) and f"{BEGIN}\r\n## Agent Memory\r\nrun agentmem\r\n{END}\r\n" in merged
    again = merge_block(merged + "Tail.\r\n", "## Agent Memory\r\nnew text\n")
    assert again.startswith(existing) and again.endswith(f"{END}\r\nTail.\r\n") and "new text" in again
    assert "run agentmem" not in again
    with pytest.raises(UsageError):
        merge_block(f"x\n{BEGIN}\nhalf", block)


def test_install_rules_refuses_missing_project(tmp_path, cli):
    proc = cli("install-rules", "--project", str(tmp_path / "nope"))
    assert proc.returncode == 2
