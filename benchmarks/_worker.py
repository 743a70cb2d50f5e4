"""In-venv half of ``benchmarks/run.py``: builds the fixture vaults and times in-process recall.

Run ONLY by run.py, with the benchmark venv's interpreter, so that ``agentmem_vault`` is the
installed (non-editable) package and never the source tree. Prints one JSON object.

    _worker.py board DIR ROWS            a vault whose board has ROWS rows (+ the pairs file, snapshots,
                                         a small recall index with rule notes): the hook / register vault
    _worker.py notes DIR NOTES           a vault with NOTES long-term notes, index built
    _worker.py query DIR REPEAT          in-process recall query latency on that vault (freshness check on)
    _worker.py daemon-query DIR REPEAT   the same while a real daemon runs on the vault and vouches for the index
    _worker.py daemon-start DIR 0        start a daemon on DIR, wait until it vouches, print its pid
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _synth import synth_notes  # noqa: E402

sys.path.remove(str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))  # recall_helpers: note text + labelled queries (stdlib only)
from recall_helpers import load_queries, note_text  # noqa: E402

sys.path.pop(0)

import agentmem_vault  # noqa: E402

NOW = "2026-06-01T09:30"


def _check_installed() -> None:
    here = Path(agentmem_vault.__file__).resolve()
    if BENCH.parent in here.parents:
        raise SystemExit(f"agentmem_vault imported from the source tree ({here}); run benchmarks/run.py")


def _write_notes(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for nt in synth_notes(n):
        (folder / f"{nt['id']} {nt['key']}.md").write_text(note_text(nt), encoding="utf-8")


def build_board(root: Path, rows: int) -> dict:
    """A realistic board between two organizes: ROWS rows (a third each idle/active/stale), one
    conversations.jsonl line per row naming its project, a snapshot per non-idle row, 60 long-term notes (6 of them
    rules) with the recall index built."""
    from agentmem_vault.vault import Vault
    from agentmem_vault.board import table as it
    from agentmem_vault.ops.board import init_vault
    from agentmem_vault.recall.index import reindex

    v = Vault(root)
    root.mkdir(parents=True)
    init_vault(v)
    lines = [it.new_index_text()]
    pairs = []
    projects = [root.name, "shop", "billing", "mobile", "crm"]
    for i in range(rows):
        day = 1 + (i // 1440) % 28
        month = 1 + (i // (1440 * 28)) % 12
        hhmm = f"{(i // 60) % 24:02d}{i % 60:02d}"
        sid = f"2026-{month:02d}-{day:02d}-{hhmm}-cursor-main-agent"
        status = ("idle", "active", "stale")[i % 3]
        ts = f"2026-{month:02d}-{day:02d} {hhmm[:2]}:{hhmm[2:]}"
        row = it.Row(
            sid,
            "cursor-main-agent",
            f"主題 {i} topic",
            f"摘要 summary of session {i}",
            "kw, 關鍵字",
            status,
            "-",
            ts,
            ts,
        )
        lines.append(it.render_row(row) + "\n")
        # As the sessionStart hook writes it (ops/conversations.record_pair): every chat's pair names
        # its project and folder, a fifth of them the benchmark chat's own (the vault's folder).
        project = projects[i % len(projects)]
        pairs.append(
            json.dumps(
                {
                    "time": ts.replace(" ", "T") + ":00",
                    "conversation_id": f"conv-{i:06d}",
                    "session_id": sid,
                    "agent": "cursor",
                    "source": "startup",
                    "project": project,
                    "workspace": str(root if project == root.name else root.parent / project),
                },
                ensure_ascii=False,
            )
            + "\n"
        )
        if status != "idle":
            (v.sessions_dir / f"{sid}.md").write_text(f"# Session: {sid}\n", encoding="utf-8")
    v.index_path.write_text("".join(lines), encoding="utf-8")
    v.state_dir.mkdir(parents=True, exist_ok=True)
    (v.state_dir / "conversations.jsonl").write_text("".join(pairs), encoding="utf-8")
    notes = synth_notes(60, seed=11)
    for nt in notes[:6]:
        nt["importance"], nt["status"] = 0.95, "active"
    v.longterm_dir.mkdir(parents=True, exist_ok=True)
    for nt in notes:
        (v.longterm_dir / f"{nt['id']} {nt['key']}.md").write_text(note_text(nt), encoding="utf-8")
    os.environ["AGENTMEM_NOW"] = NOW
    reindex(v)
    return {"vault": str(root), "rows": rows, "known_conversation": "conv-000000"}


def build_notes(root: Path, n: int) -> dict:
    from agentmem_vault.vault import Vault
    from agentmem_vault.recall.index import reindex

    (root / "memory").mkdir(parents=True)
    (root / "memory" / "index.md").write_text(
        "| Session ID | Agent Name | Topic | Summary | Keywords | Status | Referenced By | Started At | Updated At |\n"
        "|---|---|---|---|---|---|---|---|---|\n",
        encoding="utf-8",
    )
    v = Vault(root)
    t = time.perf_counter()
    _write_notes(v.longterm_dir, n)
    write_s = time.perf_counter() - t
    os.environ["AGENTMEM_NOW"] = NOW
    st = reindex(v)
    return {"vault": str(root), "notes": n, "write_s": round(write_s, 2), "build_s": round(st.seconds, 2)}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1)))))]


def time_queries(root: Path, repeat: int) -> dict:
    """What a long-lived caller (MCP server, a test) pays per query: ``search`` with its freshness
    check, on an open index (with or without a daemon running: see the caller)."""
    from agentmem_vault.vault import Vault
    from agentmem_vault.recall.index import RecallIndex
    from agentmem_vault.recall.rank import search

    os.environ["AGENTMEM_NOW"] = NOW
    v = Vault(root)
    queries = [q["q"] for q in load_queries()]
    idx = RecallIndex(v)
    idx.sync()  # a second check of the folder sets up this process's watch (recall/freshness.py)
    first = idx.sync()
    idx.sync()
    ts: list[float] = []
    vouched = {"daemon": 0, "watch": 0, "checked": 0}
    for _ in range(repeat):
        for q in queries:
            t = time.perf_counter()
            search(v, q, limit=10, index=idx, semantic=None)
            ts.append((time.perf_counter() - t) * 1000)
            st = idx.sync()  # untimed: which way the query's own check went
            vouched["daemon" if st.trusted else "watch" if st.watched else "checked"] += 1
    # What a query without a watch or daemon pays on top (a one-shot process, macOS, Windows, a
    # network folder): the stat of every note, compared with the index's stamps.
    full = []
    for _ in range(20):
        t = time.perf_counter()
        idx.sync(trust_daemon=False)
        full.append((time.perf_counter() - t) * 1000)
    idx.close()
    return {
        "p50_ms": round(_pct(ts, 50), 2),
        "p95_ms": round(_pct(ts, 95), 2),
        "max_ms": round(max(ts), 2),
        "n": len(ts),
        "median_ms": round(statistics.median(ts), 2),
        "daemon_vouched": first.trusted,
        "freshness_by": vouched,
        "full_check_ms": {"p50": round(_pct(full, 50), 2), "p95": round(_pct(full, 95), 2)},
    }


def start_daemon(root: Path) -> subprocess.Popen:
    from agentmem_vault.vault import Vault
    from agentmem_vault.recall.freshness import daemon_vouches

    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(root), "daemon", "run", "--background"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not daemon_vouches(Vault(root)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("the daemon did not start vouching for the recall index")
        time.sleep(0.05)
    return proc


def main() -> None:
    _check_installed()
    what, folder, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    if what == "board":
        out = build_board(folder, n)
    elif what == "notes":
        out = build_notes(folder, n)
    elif what == "query":
        out = time_queries(folder, n)
    elif what == "daemon-query":
        proc = start_daemon(folder)
        try:
            out = time_queries(folder, n)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    elif what == "daemon-start":
        out = {"pid": start_daemon(folder).pid}
    else:
        raise SystemExit(f"unknown worker task {what!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
