"""What the field rules cost at extraction (docs/notes.md, Fields): the Chinese word segmenter's
import and first use, and the derivation of every field per memory.

Prints JSON, each figure the median of ``--repeat`` fresh interpreters (start-up measured in the
same run, so that the differences are what the segmenter adds):

- ``interpreter_startup_s``: ``python -c pass``;
- ``import_rjieba_s``: ``import rjieba`` alone;
- ``segmenter_first_use_s``: the first ``keywords_for`` of a Chinese sentence in a fresh
  interpreter, imports included (rjieba, its dictionary, our technical terms taught to it),
  minus start-up: what the first extraction of a run pays once;
- ``derive_per_memory_ms``: all fields of one offline memory (title, category, importance,
  keywords, scenarios), averaged over the built-in ``dev`` fixtures' memories, warm.

The sessionStart hook never imports the segmenter (tests/test_hooks_imports.py).

    python benchmarks/bench_fields.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

FIRST_USE = (
    "import time; t = time.perf_counter();"
    "from agentmem_vault.longterm.fields.keywords import keywords_for;"
    "keywords_for('對外 webhook 一律帶 Idempotency-Key，接收端以此去重。');"
    "print(time.perf_counter() - t)"
)


def _wall(code: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - t


def _inner(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return float(out.strip())


def _derive_ms() -> tuple[float, int]:
    from agentmem_vault.longterm.assess import assess_all_offline
    from agentmem_vault.longterm.evaluate import builtin_set, load_fixtures
    from agentmem_vault.longterm.fields.derive import derive_offline
    from agentmem_vault.longterm.offline import extract_offline

    batches = []
    for fx in load_fixtures(builtin_set("dev")):
        batches.append((fx.turns, assess_all_offline(extract_offline(fx.turns))))
    n = sum(len(ms) for _, ms in batches)
    derive_offline(batches[0][1][0], turns=batches[0][0]) if n else None  # warm the segmenter
    t = time.perf_counter()
    for turns, ms in batches:
        for m in ms:
            derive_offline(m, turns=turns)
    return 1000 * (time.perf_counter() - t) / max(n, 1), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    startup = statistics.median(_wall("pass") for _ in range(a.repeat))
    rjieba = statistics.median(
        _inner("import time; t = time.perf_counter(); import rjieba; print(time.perf_counter() - t)")
        for _ in range(a.repeat)
    )
    first = statistics.median(_inner(FIRST_USE) for _ in range(a.repeat))
    per, n = _derive_ms()
    print(
        json.dumps(
            {
                "interpreter_startup_s": round(startup, 4),
                "import_rjieba_s": round(rjieba, 4),
                "segmenter_first_use_s": round(first, 4),
                "derive_per_memory_ms": round(per, 3),
                "memories": n,
                "repeat": a.repeat,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
