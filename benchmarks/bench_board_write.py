"""Whole-board writes through the CLI on a 10,000-row board: ``register`` (a new chat's row),
``update <id> --topic ... --snapshot FILE`` (one row rewritten, a snapshot written) and
``organize`` (every idle row deleted), each in a fresh copy of the same vault, wall time of the
real command in a subprocess, and its CPU time (user + system: steadier on a shared machine).

    python benchmarks/bench_board_write.py [--rows 10000] [--repeat 5]
    python benchmarks/bench_board_write.py --compare d85d0a0   # against another commit, same run

``--compare REF`` checks REF out with ``git archive`` into a temporary folder (its own
``templates/`` placed inside its package, so that an editable install of this tree cannot lend it
this tree's data files) and runs the same vaults and commands on both trees, alternately, each
command in a fresh interpreter that imports the package from that tree only (``-P``). It prints
the best and median times of both and the ratio of the best (the figure least disturbed by other
load on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import checkout

HERE = Path(__file__).resolve().parent.parent
COMMANDS = ("register", "update", "organize")
FIGURES = (*COMMANDS, *(c + "_cpu" for c in COMMANDS))


def build(root: Path, rows: int) -> Path:
    """The vault every run starts from: the register benchmark's board, written as plain text."""
    sys.path.insert(0, str(HERE / "benchmarks"))
    from bench_register import make_vault

    return make_vault(root, rows)


def _snapshot(session_id: str) -> str:
    sessions = sorted((HERE / "sample_vault" / "memory" / "sessions").glob("*.md"))
    text = sessions[0].read_text(encoding="utf-8")
    return text.replace(sessions[0].stem, session_id)


def _child_cpu() -> float:
    """User + system CPU seconds of the finished children: steadier than wall time on a loaded machine."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(tree: Path, template: Path, work: Path) -> dict[str, float]:
    """The three commands on a fresh copy of ``template``, with the package of ``tree``."""
    vault = work / "vault"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(template, vault)
    env = dict(os.environ, PYTHONPATH=str(tree), AGENTMEM_CACHE_DIR=str(work / "cache"))
    env["AGENTMEM_CONFIG_DIR"] = str(work / "config")
    env.pop("AGENTMEM_VAULT", None)
    base = [sys.executable, "-P", "-m", "agentmem_vault", "--vault", str(vault)]
    out: dict[str, float] = {}

    def timed(name: str, args: list[str]) -> str:
        t, cpu = time.perf_counter(), _child_cpu()
        p = subprocess.run([*base, *args], env=env, capture_output=True, text=True)
        out[name] = time.perf_counter() - t
        out[name + "_cpu"] = _child_cpu() - cpu
        if p.returncode != 0:
            raise SystemExit(f"{tree}: {name} failed ({p.returncode}): {p.stderr[-500:]}")
        return p.stdout

    sid = re.search(r"\d{4}-\d{2}-\d{2}-\d{4}-\S+", timed("register", ["register"]))
    if sid is None:
        raise SystemExit(f"{tree}: register printed no Session ID")
    snap = work / "snapshot.md"
    snap.write_text(_snapshot(sid.group(0)), encoding="utf-8")
    timed("update", ["update", sid.group(0), "--topic", "parser", "--snapshot", str(snap)])
    timed("organize", ["organize"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--compare", metavar="REF", help="also run the commands on this commit and compare")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        template = build(root / "template", args.rows)
        trees = {"current": HERE}
        label = None
        if args.compare:
            (root / "baseline").mkdir()
            label = f"{args.compare} ({checkout(args.compare, root / 'baseline')})"
            trees = {"baseline": root / "baseline", "current": HERE}
        times: dict[str, dict[str, list[float]]] = {name: {c: [] for c in FIGURES} for name in trees}
        for _ in range(args.repeat):
            for name, tree in trees.items():
                for cmd, s in run_once(tree, template, root / "work").items():
                    times[name][cmd].append(s)
    best = {n: {c: round(min(v), 3) for c, v in cmds.items()} for n, cmds in times.items()}
    med = {n: {c: round(statistics.median(v), 3) for c, v in cmds.items()} for n, cmds in times.items()}
    result: dict[str, object] = {"rows": args.rows, "repeat": args.repeat, "best_seconds": best, "median_seconds": med}
    if label:
        result["baseline_ref"] = label
        result["ratio_current_to_baseline"] = {c: round(best["current"][c] / best["baseline"][c], 2) for c in FIGURES}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
