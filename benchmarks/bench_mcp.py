"""MCP server benchmark. Prints JSON.

    python benchmarks/bench_mcp.py                 # 10,000 notes, 7 starts, 20 context calls
    python benchmarks/bench_mcp.py --notes 2000 --runs 3

- start: wall time from spawning `agentmem mcp --vault V` to the answer of `initialize` (raw
  JSON-RPC over the pipes, as a client sends it), against `python -c "import mcp"` (the SDK's own
  import) and `python -c pass`, interleaved in this run. The baselines include interpreter exit
  (tearing down the SDK's modules), the server figure stops when the answer arrives.
- context: `memory_context` over the server on a vault of N synthetic notes (bench_recall's
  generator): the first call (index build) and warm calls, against the same `build_context` call
  in-process, so the difference is the protocol's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from _common import agentmem_cmd, bench_env
from bench_recall import NOW, make_vault, synth_notes
from recall_helpers import note_text

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
TASKS = [
    "鎖檔要放在哪裡",
    "how do we deploy the billing service",
    "測試 mock 規範",
    "release checklist for mobile",
    "pnpm workspace 設定",
    "sessionStart hook must be fast",
]


class Server:
    """`agentmem mcp` driven with raw JSON-RPC lines (no client library in the measurement)."""

    def __init__(self, vault: Path, env: dict) -> None:
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen(
            [*agentmem_cmd(), "mcp", "--vault", str(vault)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 1

    def send(self, obj: dict) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write((json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))
        self.p.stdin.flush()

    def answer(self, want_id: int) -> dict:
        assert self.p.stdout is not None
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("the server closed its stdout")
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return msg

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.answer(self.next_id)

    def initialize(self) -> float:
        self.send(INIT)
        self.answer(1)
        ms = (time.perf_counter() - self.t0) * 1000
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return ms

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {
        "median_ms": round(statistics.median(xs), 1),
        "min_ms": round(xs[0], 1),
        "max_ms": round(xs[-1], 1),
        "runs": len(xs),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=7, help="server starts (and baseline runs)")
    ap.add_argument("--calls", type=int, default=20, help="warm memory_context calls")
    a = ap.parse_args()
    out: dict = {"python": sys.version.split()[0], "notes": a.notes}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        env = bench_env(tmp)
        env["AGENTMEM_NOW"] = NOW
        os.environ.update({k: v for k, v in env.items() if k.startswith("AGENTMEM_")})
        v = make_vault(tmp / "vault")
        # Interleaved, so that a change of machine load hits the baselines and the server alike.
        runs: dict[str, list[float]] = {"python_c_pass": [], "python_import_mcp": [], "start_to_initialize": []}
        for _ in range(a.runs):
            for name, cmd in (
                ("python_c_pass", [sys.executable, "-c", "pass"]),
                ("python_import_mcp", [sys.executable, "-c", "import mcp"]),
            ):
                t = time.perf_counter()
                subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                runs[name].append((time.perf_counter() - t) * 1000)
            s = Server(v.root, env)
            runs["start_to_initialize"].append(s.initialize())
            s.close()
        out["baseline"] = {k: stats(runs[k]) for k in ("python_c_pass", "python_import_mcp")}
        out["start_to_initialize"] = stats(runs["start_to_initialize"])
        base = out["baseline"]["python_import_mcp"]["median_ms"]
        out["start_vs_import_mcp"] = round(out["start_to_initialize"]["median_ms"] / base, 2)

        t = time.perf_counter()
        for nt in synth_notes(a.notes):
            (v.longterm_dir / f"{nt['id']} {nt['key']}.md").write_text(note_text(nt), encoding="utf-8")
        out["write_notes_s"] = round(time.perf_counter() - t, 1)

        s = Server(v.root, env)
        s.initialize()
        t = time.perf_counter()
        first = s.request("tools/call", {"name": "memory_context", "arguments": {"task": TASKS[0]}})
        out["context_first_call_ms"] = round((time.perf_counter() - t) * 1000, 1)
        assert not first["result"].get("isError"), first
        warm = []
        for i in range(a.calls):
            t = time.perf_counter()
            r = s.request("tools/call", {"name": "memory_context", "arguments": {"task": TASKS[i % len(TASKS)]}})
            warm.append((time.perf_counter() - t) * 1000)
            assert not r["result"].get("isError"), r
        s.close()
        out["context_warm_over_mcp"] = stats(warm)

        from agentmem_vault.vault import Vault
        from agentmem_vault.recall.context import build_context

        vv = Vault(v.root)
        build_context(vv, TASKS[0])
        inproc = []
        for i in range(a.calls):
            t = time.perf_counter()
            build_context(vv, TASKS[i % len(TASKS)])
            inproc.append((time.perf_counter() - t) * 1000)
        out["context_warm_in_process"] = stats(inproc)
        out["context_mcp_overhead_ms"] = round(
            out["context_warm_over_mcp"]["median_ms"] - out["context_warm_in_process"]["median_ms"], 1
        )
        out["context_warm_vs_import_mcp"] = round(out["context_warm_over_mcp"]["median_ms"] / base, 2)
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
