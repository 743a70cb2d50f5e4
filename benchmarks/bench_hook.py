"""Wall time of the real sessionStart hook vs a bare interpreter, measured in the same run.

    python benchmarks/bench_hook.py [--runs 20] [--rows 1000]

Builds a vault with a ``--rows``-row memory/index.md in a temporary folder, then times (median of
``--runs`` runs each, interleaved so that machine noise hits every variant alike):

- ``python -c pass``                      (the baseline; target: hook within 2.5x at 1,000 rows, docs/performance.md)
- ``python -c "import click"``            (what dispatching through click would cost)
- ``agentmem hook cursor-session-start``  (the pip console script)
- ``python -m agentmem_vault hook cursor-session-start``

By default the runs use a bytecode cache (as an installed package has); ``--no-bytecode-cache``
measures the compile-from-source case (``PYTHONDONTWRITEBYTECODE=1`` with no .pyc present).

Each hook run registers a real row (a new conversation ID each time). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentmem_vault.model import index_table as it
from agentmem_vault.ops.board import init_vault
from agentmem_vault.config import Vault


def build_vault(root: Path, n_rows: int) -> Vault:
    v = Vault(root)
    root.mkdir(parents=True)
    init_vault(v)
    lines = [it.new_index_text()]
    for i in range(n_rows):
        day = 1 + i % 28
        sid = f"2026-05-{day:02d}-{i % 24:02d}{i % 60:02d}-cursor-main-agent-{i}"
        status = ("idle", "active", "stale")[i % 3]
        row = it.Row(
            sid,
            "cursor-main-agent",
            f"主題 {i} topic",
            f"摘要 summary of session {i}",
            "kw, 關鍵字",
            status,
            "-",
            f"2026-05-{day:02d} 10:00",
            f"2026-05-{day:02d} 11:00",
        )
        lines.append(it.render_row(row) + "\n")
    v.index_path.write_text("".join(lines), encoding="utf-8")
    return v


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every module from source on each run (as with PYTHONDONTWRITEBYTECODE=1 and no .pyc)",
    )
    a = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="agentmem-bench-hook-"))
    try:
        vault = build_vault(tmp / "我的雲端硬碟 Agent", a.rows)
        env = dict(os.environ)
        env["AGENTMEM_CACHE_DIR"] = str(tmp / "cache")
        env["AGENTMEM_CONFIG_DIR"] = str(tmp / "config")
        for k in ("AGENTMEM_VAULT", "AGENTMEM_NOW", "AGENTMEM_AGENT"):
            env.pop(k, None)
        if a.no_bytecode_cache:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env.pop("PYTHONPYCACHEPREFIX", None)
        else:
            # An installed package has .pyc files; keep ours outside the repo.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        script = Path(sys.executable).parent / "agentmem"
        if not script.is_file():
            script = Path(shutil.which("agentmem") or "")
        variants: dict[str, list[str] | None] = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import click'": [sys.executable, "-c", "import click"],
            "agentmem hook (console script)": [str(script), "hook", "cursor-session-start"]
            if script.is_file()
            else None,
            "python -m agentmem_vault hook": [sys.executable, "-m", "agentmem_vault", "hook", "cursor-session-start"],
        }
        times: dict[str, list[float]] = {k: [] for k, v in variants.items() if v}
        counter = 0

        def payload() -> bytes:
            nonlocal counter
            counter += 1
            return json.dumps(
                {
                    "conversation_id": f"bench-{counter}",
                    "session_id": f"bench-{counter}",
                    "hook_event_name": "sessionStart",
                    "workspace_roots": [str(vault.root)],
                    "is_background_agent": False,
                    "composer_mode": "agent",
                    "cursor_version": "2.1.32",
                    "model": "gpt-5",
                    "transcript_path": None,
                }
            ).encode()

        # one warm-up each (page cache, the config's JSON cache)
        for cmd in variants.values():
            if cmd:
                subprocess.run(cmd, input=payload(), capture_output=True, cwd=tmp, env=env, check=True)
        ok = True
        for _ in range(a.runs):
            for name, cmd in variants.items():
                if not cmd:
                    continue
                data = payload()
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, input=data, capture_output=True, cwd=tmp, env=env)
                times[name].append(time.perf_counter() - t0)
                if "hook" in name and b"Your Memory Session ID is:" not in proc.stdout:
                    ok = False
        med = {k: round(statistics.median(v) * 1000, 1) for k, v in times.items()}
        base = med["python -c pass"]
        rows_after = len(it.parse_index(vault.index_path.read_text(encoding="utf-8")).row_list())
        print(
            json.dumps(
                {
                    "runs": a.runs,
                    "bytecode_cache": not a.no_bytecode_cache,
                    "index_rows_at_start": a.rows,
                    "index_rows_at_end": rows_after,
                    "median_ms": med,
                    "ratio_to_python_pass": {k: round(v / base, 2) for k, v in med.items()},
                    "target_ratio": 2.5,
                    "within_target": all(v / base <= 2.5 for k, v in med.items() if "hook" in k),
                    "every_hook_run_registered": ok,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
