"""Time a CLI `agentmem register` on indexes of 100, 1,000 and 10,000 rows.

Target (docs/performance.md): on 10,000 rows within 2x of `python -c "import click"` measured in the same run.
Run: python benchmarks/bench_register.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import agentmem_cmd, baselines, bench_env, time_cmd  # noqa: E402

from agentmem_vault.board import table as it


def make_vault(root: Path, n: int) -> Path:
    v = root / f"vault-{n}"
    (v / "memory" / "sessions").mkdir(parents=True)
    rows = "".join(
        it.render_row(
            it.Row(
                f"2026-0{1 + i % 9}-{1 + i % 28:02d}-{i // 60 % 24:02d}{i % 60:02d}-agent-{i}",
                "cursor-main-agent",
                f"主題 {i} topic",
                "sessionStart 自動註冊，尚未整理主題。",
                "sessionStart, cursor-agent",
                "idle",
                "-",
                "2026-05-25 13:18",
                "2026-05-25 13:18",
            )
        )
        + "\n"
        for i in range(n)
    )
    (v / "memory" / "index.md").write_text(it.new_index_text() + rows, encoding="utf-8")
    return v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = bench_env(root)
        base = baselines(args.runs)
        out: dict = {"baseline": base, "register": {}}
        for n in (100, 1000, 10000):
            v = make_vault(root, n)
            out["register"][str(n)] = time_cmd(agentmem_cmd() + ["--vault", str(v), "register"], args.runs, env=env)
        click_ms = base["python_import_click"]["median_ms"]
        out["ratio_10000_vs_import_click"] = round(out["register"]["10000"]["median_ms"] / click_ms, 2)
        out["target_ratio"] = 2.0
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
