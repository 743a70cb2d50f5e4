"""Benchmark: organize over 10,000 rows and 5,000 snapshots.

Prints JSON. Baselines measured in the same run on the same files:
- ``floor_read``: read + parse memory/index.md and read every snapshot (what any organize must do);
- ``naive_per_row``: the by-hand way, one locked remove/update per row (BoardWriter.remove_row
  / update_row), timed on a sample of rows and extrapolated to the whole plan.

Usage: python benchmarks/bench_organize.py [--rows 10000] [--snapshots 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentmem_vault.board import table as it
from agentmem_vault.vault import Vault
from agentmem_vault.ops.lifecycle import organize
from agentmem_vault.board.rules import DEFAULT_KEYWORDS, DEFAULT_SUMMARY
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import read_text

NOW = datetime(2026, 6, 1, 9, 30)


def sid(n: int) -> str:
    day = 1 + n % 28
    return f"2026-{1 + (n // 28) % 5:02d}-{day:02d}-{n // 60 % 24:02d}{n % 60:02d}-agent-{n}"


def build(vault: Vault, rows: int, snapshots: int) -> str:
    (vault.sessions_dir).mkdir(parents=True)
    vault.archive_dir.mkdir()
    lines = []
    snap_ids: list[str] = []
    for n in range(rows):
        s = sid(n)
        kind = n % 10
        if kind < 4:  # 40% idle
            status, summary, updated = "idle", DEFAULT_SUMMARY, "2026-05-30 10:00"
        elif kind < 9:  # 50% active, half of them older than 14 days
            status, summary = "active", f"工作摘要 {n} organize benchmark"
            updated = "2026-05-01 10:00" if n % 2 else "2026-05-31 10:00"
        else:
            status, summary, updated = "stale", f"舊工作 {n}", "2026-03-01 10:00"
        refs = sid(n + 1) if n % 37 == 0 else "-"
        lines.append(
            it.render_row(
                it.Row(s, f"agent-{n}", "主題", summary, DEFAULT_KEYWORDS, status, refs, "2026-01-01 10:00", updated)
            )
        )
        if status != "idle" or n % 40 == 0:
            snap_ids.append(s)
    snap_ids = snap_ids[:snapshots]
    for k, s in enumerate(snap_ids):
        cf = f"- [[{sid(k * 7 % rows)}]]" if k % 5 == 0 else "None"
        (vault.sessions_dir / f"{s}.md").write_text(
            f"# Session: {s}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Session ID | {s} |\n\n"
            f"## Current Context\n進行中的工作 {k}。\n\n## Decisions\n- 決定 {k}\n\n## Files / Artifacts\nNone\n\n"
            f"## Open Questions\nNone\n\n## Next Actions\n- 下一步\n\n## Continues From\n{cf}\n\n"
            f"## Superseded / Resolved\nNone\n",
            encoding="utf-8",
        )
    text = it.new_index_text() + "\n".join(lines) + "\n"
    vault.index_path.write_text(text, encoding="utf-8")
    return text


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--snapshots", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-sample", type=int, default=50)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="agentmem-bench-"))
    os.environ["AGENTMEM_CACHE_DIR"] = str(tmp / "cache")
    os.environ["AGENTMEM_CONFIG_DIR"] = str(tmp / "config")
    try:
        vault = Vault(tmp / "vault")
        (vault.memory).mkdir(parents=True)
        original = build(vault, args.rows, args.snapshots)
        n_snaps = len(os.listdir(vault.sessions_dir))

        def floor() -> None:
            doc = it.parse_index(read_text(vault.index_path) or "")
            assert len(doc.rows) == args.rows
            for name in os.listdir(vault.sessions_dir):
                read_text(vault.sessions_dir / name)

        def reset() -> None:
            vault.index_path.write_text(original, encoding="utf-8")
            if vault.journal_path.exists():
                vault.journal_path.unlink()

        floor_t, dry_t, apply_t, second_t = [], [], [], []
        plan = None
        for _ in range(args.repeat):
            reset()
            floor_t.append(timed(floor))
            dry_t.append(timed(lambda: organize(vault, dry_run=True, now=NOW)))
            box = {}
            apply_t.append(timed(lambda: box.setdefault("p", organize(vault, now=NOW))))
            plan = box["p"]
            second_t.append(timed(lambda: box.__setitem__("q", organize(vault, now=NOW))))
            assert not box["q"].deleted and not box["q"].marked_stale

        # Naive baseline: one locked, verified whole-file rewrite per row (sampled, extrapolated).
        reset()
        sample = plan.deleted[: args.naive_sample // 2] + plan.marked_stale[: args.naive_sample // 2]
        t = time.perf_counter()
        with BoardWriter(vault, "bench-naive") as w:
            for s in sample:
                if s in plan.deleted:
                    w.remove_row(s)
                else:
                    w.update_row(s, lambda r: r.with_(status="stale"))
        per_row = (time.perf_counter() - t) / max(1, len(sample))
        changes = len(plan.deleted) + len(plan.marked_stale)

        med = statistics.median
        result = {
            "rows": args.rows,
            "snapshots": n_snaps,
            "index_bytes": len(original.encode("utf-8")),
            "plan": {k: len(v) for k, v in plan.to_dict().items()},
            "repeat": args.repeat,
            "seconds": {
                "organize_apply": round(med(apply_t), 4),
                "organize_dry_run": round(med(dry_t), 4),
                "organize_second_run_no_change": round(med(second_t), 4),
                "baseline_floor_read": round(med(floor_t), 4),
                "baseline_naive_per_row_extrapolated": round(per_row * changes, 2),
            },
            "naive_seconds_per_row": round(per_row, 5),
            "apply_vs_floor": round(med(apply_t) / med(floor_t), 2),
            "naive_vs_apply": round(per_row * changes / med(apply_t), 1),
        }
        print(json.dumps(result, ensure_ascii=False, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
