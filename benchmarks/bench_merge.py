"""Benchmark: merge of two 2,000-item snapshots (target < 1 s), against parse+render of the same text.

Usage: python benchmarks/bench_merge.py [--items 2000] [--runs 5]

Scenarios (same old snapshot each time, 2,000 items over all sections):
  mixed      incoming = 40 % verbatim copies, 20 % restatements (old text + a clause), 10 % marked
             old items ([superseded]/[resolved]/[done], half in Chinese), 30 % new items
  all_new    2,000 new items that share vocabulary with the old ones (the restatement search
             finds candidates but no match: worst case for the candidate filter)
  restated   every incoming item restates an old one (every item goes through the near-duplicate path)
Each figure is the median wall time of ``runs`` runs, with the memo caches cleared between runs.
The merge figure includes the verification step; ``end_to_end`` = parse both + merge + render.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentmem_vault.model import snapshot_merge
from agentmem_vault.model.snapshot import SECTIONS, Snapshot, parse_snapshot, render_snapshot
from agentmem_vault.model.snapshot_merge import merge_snapshots

SID = "2026-06-01-0930-cursor-main-agent"
WORDS = (
    "index parser lock vault snapshot merge session archive hook daemon watcher sync cloud folder table row "
    "journal verify atomic rename retry windows linux cache config agent cursor claude codex obsidian wiki "
    "memory longterm extract recall rank token bigram fold simplified traditional test benchmark fixture"
).split()
CJK = "鎖檔同步資料夾索引解析快照合併會話封存驗證測試雲端硬碟長期記憶檢索排序"
SHARE = {
    "Current Context": 0.10,
    "Decisions": 0.30,
    "Files / Artifacts": 0.20,
    "Open Questions": 0.10,
    "Next Actions": 0.20,
    "Continues From": 0.05,
    "Superseded / Resolved": 0.05,
}
MARK = {
    "Decisions": ("[superseded]", "[已取代]"),
    "Open Questions": ("[resolved]", "[已解決]"),
    "Next Actions": ("[done]", "[已完成]"),
    "Files / Artifacts": ("[superseded]", "[已取代]"),
}


def sentence(rng: random.Random, n: int) -> str:
    parts = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.3:
        parts.insert(rng.randrange(len(parts)), "".join(rng.choice(CJK) for _ in range(rng.randint(3, 8))))
    return " ".join(parts) + f" #{rng.randrange(10**6)}"


def item(rng: random.Random, section: str, n: int) -> str:
    if section == "Files / Artifacts":
        return f"`src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{n}.py`"
    if section == "Continues From":
        return f"2026-05-{1 + n % 28:02d}-{n // 60 % 24:02d}{n % 60:02d}-agent-{n}"
    if section == "Superseded / Resolved":
        return f"[done] (Next Actions) {sentence(rng, 6)}"
    return sentence(rng, 14 if section == "Current Context" else 8)


def build_old(rng: random.Random, total: int) -> Snapshot:
    s = Snapshot(
        title=SID,
        metadata={
            "Session ID": SID,
            "Agent Name": "cursor-main-agent",
            "Topic": "bench",
            "Status": "active",
            "Started At": "2026-06-01 09:30",
            "Updated At": "2026-06-01 09:30",
        },
    )
    n = 0
    for sec in SECTIONS:
        for _ in range(int(total * SHARE[sec])):
            s.sections[sec].append(item(rng, sec, n))
            n += 1
    return s


def build_incoming(rng: random.Random, old: Snapshot, total: int, mode: str) -> Snapshot:
    s = Snapshot(title=SID)
    n = 10**6
    for sec in SECTIONS:
        olds = old.sections[sec]
        for _ in range(int(total * SHARE[sec])):
            r = rng.random() if mode == "mixed" else (0.65 if mode == "restated" else 0.99)
            src = rng.choice(olds)
            if r < 0.40:
                new = src
            elif r < 0.60 or (mode == "restated"):
                new = (
                    src
                    if sec in ("Files / Artifacts", "Continues From", "Superseded / Resolved")
                    else f"{src}, {sentence(rng, 3)}"
                )
            elif r < 0.70 and sec in MARK:
                new = f"{rng.choice(MARK[sec])} {src}"
            else:
                new = item(rng, sec, n)
                n += 1
            s.sections[sec].append(new)
    return s


def clear_caches() -> None:
    for f in (snapshot_merge.tokens, snapshot_merge.item_key, snapshot_merge.path_key):
        f.cache_clear()


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        clear_caches()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return round(statistics.median(times), 4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(20260601)
    old = build_old(rng, args.items)
    old_text = render_snapshot(old)
    out: dict = {"items_per_snapshot": args.items, "runs": args.runs, "target_seconds": 1.0, "scenarios": {}}
    for mode in ("mixed", "all_new", "restated"):
        inc = build_incoming(rng, old, args.items, mode)
        inc_text = render_snapshot(inc)
        old_p, inc_p = parse_snapshot(old_text), parse_snapshot(inc_text)
        merged = merge_snapshots(old_p, inc_p, updated_at="2026-06-02 10:00")

        def parse_render() -> None:
            render_snapshot(parse_snapshot(old_text))
            render_snapshot(parse_snapshot(inc_text))

        def merge_only() -> None:
            merge_snapshots(old_p, inc_p, updated_at="2026-06-02 10:00")

        def end_to_end() -> None:
            render_snapshot(
                merge_snapshots(parse_snapshot(old_text), parse_snapshot(inc_text), updated_at="2026-06-02 10:00")
            )

        merge_s = median_time(merge_only, args.runs)
        base_s = median_time(parse_render, args.runs)
        out["scenarios"][mode] = {
            "incoming_items": sum(len(v) for v in inc.sections.values()),
            "merged_items": sum(len(v) for v in merged.sections.values()),
            "merge_seconds": merge_s,
            "end_to_end_seconds": median_time(end_to_end, args.runs),
            "baseline_parse_render_both_seconds": base_s,
            "merge_vs_baseline": round(merge_s / base_s, 2) if base_s else None,
            "under_target": merge_s < 1.0,
        }
    out["text_bytes"] = {"old": len(old_text.encode("utf-8"))}
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
