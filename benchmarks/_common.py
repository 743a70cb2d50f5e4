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


REPO = Path(__file__).resolve().parent.parent


def checkout(ref: str, into: Path) -> str:
    """``ref``'s tree extracted into ``into`` with its ``templates/`` placed inside its package, so
    that an editable install of this tree cannot lend the baseline its data files; the short SHA."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    shutil.copytree(into / "templates", into / "agentmem_vault" / "templates")
    probe = "import agentmem_vault, agentmem_vault.templates as t; print(agentmem_vault.__file__, t.__file__)"
    got = subprocess.run(
        [sys.executable, "-P", "-c", probe], env=dict(os.environ, PYTHONPATH=str(into)), capture_output=True, text=True
    ).stdout.split()
    if len(got) != 2 or not all(Path(p).resolve().is_relative_to(into.resolve()) for p in got):
        raise SystemExit(f"the checkout of {ref} does not import from {into}: {got}")
    return subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", ref], check=True, capture_output=True, text=True
    ).stdout.strip()
