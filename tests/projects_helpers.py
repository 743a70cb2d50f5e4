"""The multi-project fixture (tests/fixtures/projects/notes.json) as a vault, and its metrics:
leak rate (memories of another project shown at sessionStart or by `context`) and recall@5 within
the task's own scope. Used by tests/test_projects.py and benchmarks/bench_projects.py."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from agentmem_vault.vault import Vault

FIXTURE = Path(__file__).parent / "fixtures" / "projects" / "notes.json"


def load_fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def build_vault(root: Path, fixture: dict | None = None) -> Vault:
    from agentmem_vault.ops.board import init_vault

    fixture = fixture or load_fixture()
    v = Vault(root)
    root.mkdir(parents=True, exist_ok=True)
    init_vault(v)
    v.longterm_dir.mkdir(parents=True, exist_ok=True)
    for n in fixture["notes"]:
        fm = {
            "id": n["id"],
            "title": n["title"],
            "category": n["category"],
            "keywords": n["keywords"],
            "project": n["project"],
            "importance": n["importance"],
            "score": 4,
            "status": "active",
            "created": "2026-11-01T10:00",
            "updated": "2026-11-01T10:00",
            "tags": ["agent-memory/long-term"],
        }
        if n.get("scope"):
            fm["scope"] = n["scope"]
        text = "---\n" + yaml.safe_dump(fm, allow_unicode=True, sort_keys=False) + "---\n" + n["content"] + "\n"
        (v.longterm_dir / f"{n['id']}.md").write_text(text, encoding="utf-8")
    return v


def evaluate(vault: Vault, fixture: dict | None = None, *, scoped: bool = True) -> dict:
    """Metrics over every task; ``scoped=False`` measures the behaviour before project scoping
    (every project's memories, as `--all-projects` does)."""
    from agentmem_vault.recall.context import build_context
    from agentmem_vault.recall.rank import search
    from agentmem_vault.recall.session_start import session_start_context

    fixture = fixture or load_fixture()
    project_of = {n["id"]: ("" if n.get("scope") == "global" else n["project"]) for n in fixture["notes"]}
    title_of = {n["id"]: n["title"] for n in fixture["notes"]}
    build_context(vault, "warm the index", project=None)
    shown = leaked = tasks_with_leak = 0
    found = total = 0
    per_project: dict[str, list[int]] = {}
    leaks: list[dict] = []
    for t in fixture["tasks"]:
        proj = t["project"]
        names = [proj.casefold()] if scoped else None
        start = session_start_context(vault, budget=4000, project_names=tuple(names) if names is not None else None)
        ids_start = {nid for nid, title in title_of.items() if title in start}
        res = build_context(vault, t["task"], project=names)
        ids_ctx = {h.id for h in res.rules + res.full + res.brief}
        bad = sorted(i for i in ids_start | ids_ctx if project_of.get(i) and project_of[i] != proj)
        shown += len(ids_start) + len(ids_ctx)
        leaked += len([i for i in ids_start if i in bad]) + len([i for i in ids_ctx if i in bad])
        if bad:
            tasks_with_leak += 1
            leaks.append({"task": t["task"], "project": proj, "leaked": bad})
        hits = [h.id for h in search(vault, t["task"], limit=5, project=names)]
        got = len(set(hits) & set(t["relevant"]))
        found += got
        total += len(t["relevant"])
        pp = per_project.setdefault(proj, [0, 0])
        pp[0] += got
        pp[1] += len(t["relevant"])
    return {
        "tasks": len(fixture["tasks"]),
        "projects": len({n["project"] for n in fixture["notes"] if n["project"]}),
        "leak_rate": round(leaked / shown, 4) if shown else 0.0,
        "tasks_with_leak": tasks_with_leak,
        "recall_at_5": round(found / total, 4) if total else 0.0,
        "recall_at_5_by_project": {p: round(a / b, 4) for p, (a, b) in sorted(per_project.items())},
        "leaks": leaks[:10],
    }
