"""Helpers shared by the benchmarks: same-run baselines and timing of real commands."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def agentmem_cmd() -> list[str]:
    exe = shutil.which("agentmem")
    return [exe] if exe else [sys.executable, "-m", "agentmem_vault"]


def time_cmd(cmd: list[str], runs: int, *, env: dict | None = None, input: bytes | None = None) -> dict:
    """Median and p90 wall time (ms) of a command run ``runs`` times."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, input=input, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 2),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
        "runs": runs,
    }


def baselines(runs: int = 20) -> dict:
    return {
        "python_c_pass": time_cmd([sys.executable, "-c", "pass"], runs),
        "python_import_click": time_cmd([sys.executable, "-c", "import click"], runs),
    }


def bench_env(tmp: Path) -> dict:
    env = dict(os.environ)
    env["AGENTMEM_CACHE_DIR"] = str(tmp / "cache")
    env["AGENTMEM_CONFIG_DIR"] = str(tmp / "config")
    env.pop("AGENTMEM_VAULT", None)
    return env
