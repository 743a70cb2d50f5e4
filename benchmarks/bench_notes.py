"""Note parsing inside the recall index build, at 10,000 notes. Prints JSON.

    python benchmarks/bench_notes.py               # 10,000 notes, 3 runs each
    python benchmarks/bench_notes.py --notes 2000

Same run, same synthetic vault (bench_recall's notes, as the tool writes them):
- ``read_sha_s``: read every file and hash it (the I/O floor of any index build);
- ``parse_s``: the same plus ``model.notes.read_note_bytes`` (the one note reader);
- ``tokens_s``: read + parse + the four token fields (everything the build does but SQLite);
- ``build_s``: a full ``reindex`` (what ``agentmem reindex`` and a first query pay).
The question it answers: is parsing a large enough share of the build to need a fast path?
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from bench_recall import NOW, make_vault, synth_notes
from recall_helpers import note_text

from agentmem_vault.model.notes import read_note_bytes
from agentmem_vault.recall.index import note_tokens, reindex


def _median(fn, runs: int) -> float:
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return round(statistics.median(ts), 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    os.environ["AGENTMEM_NOW"] = NOW
    with tempfile.TemporaryDirectory() as d:
        v = make_vault(Path(d) / "vault")
        for nt in synth_notes(a.notes):
            (v.longterm_dir / f"{nt['id']} {nt['key']}.md").write_text(note_text(nt), encoding="utf-8")
        paths = sorted(v.longterm_dir.glob("*.md"))

        def read_sha() -> None:
            for p in paths:
                hashlib.sha1(p.read_bytes()).hexdigest()

        def parse() -> None:
            for p in paths:
                data = p.read_bytes()
                hashlib.sha1(data).hexdigest()
                read_note_bytes(data, p)

        def tokens() -> None:
            for p in paths:
                data = p.read_bytes()
                hashlib.sha1(data).hexdigest()
                note_tokens(read_note_bytes(data, p))

        res: dict = {"notes": a.notes, "runs": a.runs}
        res["read_sha_s"] = _median(read_sha, a.runs)
        res["parse_s"] = _median(parse, a.runs)
        res["tokens_s"] = _median(tokens, a.runs)
        res["build_s"] = _median(lambda: reindex(v), a.runs)
        parse_only = res["parse_s"] - res["read_sha_s"]
        res["parse_per_note_us"] = round(parse_only / a.notes * 1e6, 1)
        res["parse_share_of_build"] = round(parse_only / res["build_s"], 3) if res["build_s"] else None
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
