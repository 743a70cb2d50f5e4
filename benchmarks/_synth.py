"""Synthetic long-term notes for the benchmarks (no agentmem_vault import: the benchmark worker
runs it inside the benchmark venv, where only the installed package may be imported)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from recall_helpers import load_corpus  # noqa: E402  (json + re only)


def synth_notes(n: int, seed: int = 7) -> list[dict]:
    """N realistic-looking notes recombined from the labelled corpus's sentences and keywords."""
    rng = random.Random(seed)
    base = load_corpus()
    sentences: list[str] = []
    for b in base:
        for part in b["content"].replace("；", "。").replace("; ", ". ").split("。"):
            if len(part.strip()) > 8:
                sentences.append(part.strip() + ("。" if not part.strip().endswith(".") else ""))
    keywords = sorted({k for b in base for k in b["keywords"]})
    usages = sorted({u for b in base for u in b["usage_scenario"]})
    projects = ["shop", "billing", "mobile", "agentmem", "crm", "ops", ""]
    out = []
    for i in range(n):
        kws = rng.sample(keywords, 3)
        title = f"{kws[0]} {rng.choice(['与', 'and', '的', '和'])} {kws[1]} {rng.choice(['约定', '踩坑', 'notes', '决策', '規範'])} {i}"
        year_day = rng.randint(0, 720)
        month = 1 + (year_day // 30) % 12
        year = 2024 + year_day // 360
        imp = 0.95 if rng.random() < 0.003 else round(rng.uniform(0.2, 0.85), 2)
        out.append(
            {
                "key": f"s{i}",
                "id": f"lt-{i:06x}",
                "title": title,
                "category": rng.choice(["pitfall", "tech_choice", "project_decision", "user_preference"]),
                "keywords": kws,
                "usage_scenario": rng.sample(usages, 2),
                "project": rng.choice(projects),
                "module": "m",
                "importance": imp,
                "status": "deprecated" if rng.random() < 0.05 else "active",
                "updated": f"{year}-{month:02d}-{1 + year_day % 28:02d}T10:00",
                "content": " ".join(rng.sample(sentences, rng.randint(3, 6))),
            }
        )
    return out
