"""Project scoping benchmark: leak rate and recall@5 within scope on the labelled multi-project
fixture (tests/fixtures/projects/notes.json), scoped (the default) against unscoped (the behaviour
before scoping, as `--all-projects`). Prints JSON.

    python benchmarks/bench_projects.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from projects_helpers import build_vault, evaluate  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="agentmem-projects-") as tmp:
        vault = build_vault(Path(tmp) / "vault")
        scoped = evaluate(vault, scoped=True)
        unscoped = evaluate(vault, scoped=False)
    print(
        json.dumps(
            {
                "scoped": scoped,
                "unscoped": {k: unscoped[k] for k in ("leak_rate", "tasks_with_leak", "recall_at_5")},
                "targets": {"leak_rate": 0.0, "recall_at_5": f">= unscoped ({unscoped['recall_at_5']})"},
                "met": scoped["leak_rate"] == 0.0 and scoped["recall_at_5"] >= unscoped["recall_at_5"],
            },
            ensure_ascii=False,
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
