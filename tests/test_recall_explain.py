"""`agentmem context TASK --explain`: every memory weighed, with its score parts, where it applies
and the rule that put it in or kept it out; `--session ID` records the answer in the audit."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.recall.index import reindex
from recall_helpers import write_filler_notes, write_note

TASK = "how are billing webhook retries configured"


@pytest.fixture
def notes(vault: Vault) -> Vault:
    rows = [
        ("lt-a00001", "Billing webhook retries in shop", ["billing", "webhook", "retries"], "shop", 0.5),
        ("lt-a00002", "Billing webhook retries backoff in shop", ["billing", "webhook", "retries"], "shop", 0.5),
        ("lt-b00003", "Billing webhook retries in legacy", ["billing", "webhook", "retries"], "legacy", 0.5),
        ("lt-c00004", "Always log every webhook attempt", ["webhook", "logging"], "", 0.95),
        ("lt-d00005", "Billing address format", ["billing", "address"], "shop", 0.5),
    ]
    for nid, title, kws, proj, imp in rows:
        write_note(
            vault.longterm_dir,
            {
                "id": nid,
                "title": title,
                "keywords": kws,
                "content": f"{title}: details " + "and more words " * 20,
                "project": proj,
                "importance": imp,
            },
        )
    write_filler_notes(vault.longterm_dir)
    reindex(vault)
    return vault


def _explain(cli, vault: Vault, *args: str) -> dict:
    proc = cli("context", TASK, "--explain", "--json", *args, vault=vault)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_explain_says_why_each_memory_is_in_or_out(cli, notes: Vault) -> None:
    got = _explain(cli, notes, "--project", "shop")
    ex = got["explain"]
    by_id = {m["id"]: m for m in ex["memories"]}
    assert by_id["lt-c00004"]["decision"] == "rule" and "always first" in by_id["lt-c00004"]["reason"]
    assert by_id["lt-a00001"]["decision"] == "full" and by_id["lt-a00001"]["applies"] == "project shop"
    legacy = by_id["lt-b00003"]
    assert legacy["decision"] == "left out" and "another project's (legacy)" in legacy["reason"]
    assert "lt-b00003" not in got["markdown"]
    for m in ex["memories"]:
        assert {"score", "relevance", "bm25", "coverage", "recency", "importance", "reason"} <= set(m)
        assert (m["id"] in got["markdown"]) == (m["decision"] != "left out"), m
    assert ex["chars"] == len(got["markdown"]) and ex["budget"] == 4000 and ex["scope"]["project"] == "shop"
    assert set(ex["formula"]) == {"relevance", "recency", "importance"}


def test_explain_names_the_budget_and_the_limit(cli, notes: Vault) -> None:
    tight = _explain(cli, notes, "--project", "shop", "--budget", "200")["explain"]
    reasons = {m["id"]: m["reason"] for m in tight["memories"] if m["decision"] == "left out"}
    assert reasons["lt-a00002"] == "selected, but over the budget of 200 characters", reasons
    assert reasons["lt-c00004"] == "a rule, but over the rules' share of the budget", reasons
    one = _explain(cli, notes, "--project", "shop", "--limit", "1")["explain"]
    assert any(m["reason"] == "over --limit 1" for m in one["memories"]), one["memories"]
    human = cli("context", TASK, "--explain", "--project", "shop", vault=notes).stdout
    assert "Why these memories (project shop;" in human and "another project's (legacy)" in human


def test_context_with_a_session_is_recorded(cli, notes: Vault) -> None:
    sid = "2026-06-01-0930-cursor-main-agent"
    res = json.loads(cli("context", TASK, "--project", "shop", "--session", sid, "--json", vault=notes).stdout)
    got = json.loads(cli("injected", sid, "--json", vault=notes).stdout)
    (entry,) = got["entries"]
    assert entry["source"] == "context" and entry["chars"] == len(res["markdown"])
    assert set(got["note_ids"]) == {h["id"] for k in ("rules", "memories_full", "memories_brief") for h in res[k]}
    human = cli("injected", sid, vault=notes).stdout  # the same, one block per injection
    assert human.startswith(f"{sid}: 1 injection(s), {len(res['markdown'])} characters in all")
    assert f"context  {len(res['markdown'])}/4000 chars, project shop" in human
    assert all(f"  note     {i}" in human for i in got["note_ids"])
    bad = cli("context", TASK, "--session", "../x", "--json", vault=notes)
    assert bad.returncode != 0 and json.loads(bad.stdout)["error"]["code"]


def test_explain_names_an_unscoped_note_unscoped(cli, notes: Vault) -> None:
    (notes.longterm_dir / "loose.md").write_text(
        "---\nid: lt-e00006\ntitle: Billing webhook retries of an unknown repo\nkeywords: [billing, webhook, retries]\n"
        "scope: unscoped\nimportance: 0.5\nstatus: active\nupdated: 2026-01-01T00:00\n---\n"
        "Billing webhook retries of an unknown repo: details.\n",
        encoding="utf-8",
    )
    loose = next(m for m in _explain(cli, notes, "--project", "shop")["explain"]["memories"] if m["id"] == "lt-e00006")
    assert loose["decision"] == "left out" and loose["applies"] == "unscoped" and "unknown" in loose["reason"]
