"""Crash loop: SIGKILL ``register``, ``update``, ``continue``, ``release``, ``organize`` and
``archive`` at random moments on a 10,000-row board and check that every run leaves old-or-new
files, and that the next writer (``doctor --fix``, or ``archive`` again) leaves the whole vault
old or new: crash safety is a property of the transaction (docs/reliability.md, "Crash safety").

    python benchmarks/crash_loop.py [--runs 100] [--rows 10000] [--seed 11]

Each run starts from a copy of the same board. The "new" state of each operation comes from one
uninterrupted run on another copy (the operations are deterministic: fixed AGENTMEM_NOW, fixed
targets). A killed run passes when every file under memory/ (the index, snapshots, archive) is
the board parses without a bad row. Every run is then resolved by the next writer (``doctor
--fix``; for some archive runs ``archive`` again) and must equal, as a whole, what that writer
makes of the operation's new state or of the original one. Prints the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentmem_vault.board import table as it  # noqa: E402

NOW = "2026-06-20T09:30"
AGENT = "cursor-main-agent"


def sid(n: int) -> str:
    day, minute = divmod(n, 1440)
    return f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}-{minute // 60:02d}{minute % 60:02d}-{AGENT}"


def snapshot(s: str, topic: str, context: str, continues_from: str = "None") -> str:
    return (
        f"# Session: {s}\n\n## Metadata\n| Field | Value |\n|---|---|\n| Session ID | {s} |\n| Agent Name | {AGENT} |\n"
        f"| Topic | {topic} |\n| Status | active |\n| Started At | 2026-06-01 09:00 |\n| Updated At | 2026-06-01 09:00 |\n\n"
        f"## Current Context\n- {context}\n\n## Decisions\n- use pnpm\n\n## Files / Artifacts\nNone\n\n"
        "## Open Questions\nNone\n\n## Next Actions\n- ship it\n\n## Continues From\n"
        + continues_from
        + "\n\n## Superseded / Resolved\nNone\n"
    )


def build(root: Path, rows: int) -> dict[str, str]:
    """A board of ``rows`` rows: every 50th idle placeholder (organize deletes them), every 10th
    active with a snapshot; the rest active with a meaningful Summary."""
    env = base_env(root.parent)
    subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(root), "init"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    lines = []
    snaps = root / "memory" / "sessions"
    for n in range(rows):
        s = sid(n)
        if n % 50 == 0:
            r = it.Row(
                s,
                AGENT,
                "未設定",
                "sessionStart 自動註冊，尚未整理主題。",
                "sessionStart, cursor-agent",
                "idle",
                "-",
                "2026-06-01 09:00",
                "2026-06-01 09:00",
            )
        else:
            r = it.Row(
                s,
                AGENT,
                f"主題 {n}",
                f"摘要 {n}: 做了一些事",
                "k1, k2",
                "active",
                sid(41) if n == 51 else "-",  # 41 continues from 51 (release undoes it)
                "2026-06-19 09:00",
                "2026-06-19 09:00",
            )
            if n % 10 == 1:
                cf = f"- {sid(51)}" if n == 41 else "None"
                (snaps / f"{s}.md").write_text(snapshot(s, f"主題 {n}", f"work {n}", cf), encoding="utf-8")
        lines.append(it.render_row(r) + "\n")
    (root / "memory" / "index.md").write_text(it.new_index_text() + "".join(lines), encoding="utf-8")
    return {"update": sid(11), "archive": sid(21), "continue": sid(31), "release": sid(51), "current": sid(41)}


def base_env(tmp: Path) -> dict:
    env = dict(os.environ)
    env.update(
        AGENTMEM_CACHE_DIR=str(tmp / "cache"),
        AGENTMEM_CONFIG_DIR=str(tmp / "config"),
        AGENTMEM_NOW=NOW,
        AGENTMEM_AGENT=AGENT,
    )
    env.pop("AGENTMEM_VAULT", None)
    return env


def files(root: Path) -> dict[str, bytes]:
    out = {}
    mem = root / "memory"
    for p in mem.rglob("*"):
        rel = p.relative_to(mem).as_posix()
        if rel.startswith(".agentmem") or p.is_dir() or p.name.endswith(".agentmem-tmp"):
            continue
        out[rel] = p.read_bytes()
    return out


def command(op: str, targets: dict[str, str], snap_file: Path) -> list[str]:
    return {
        "register": ["register"],
        "update": ["update", targets["update"], "--snapshot", str(snap_file), "--topic", "更新後的主題"],
        "continue": ["continue", targets["continue"], "--session", targets["update"], "--snapshot", str(snap_file)],
        "release": ["release", targets["release"], "--session", targets["current"]],
        "organize": ["organize"],
        "archive": ["archive", targets["archive"]],
    }[op]


def run(root: Path, args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentmem_vault", "--vault", str(root), *args],
        env=env,
        capture_output=True,
        check=False,
        timeout=600,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = Path(tempfile.mkdtemp(prefix="agentmem-crash-"))
    env = base_env(tmp)
    base = tmp / "base"
    base.mkdir()
    targets = build(base, a.rows)
    snap_file = tmp / "incoming.md"
    snap_file.write_text(snapshot(targets["update"], "更新後的主題", "new context after the update"), encoding="utf-8")
    old = files(base)

    # The new state of each operation, and how long it takes uninterrupted.
    new: dict[str, dict[str, bytes]] = {}
    new_fixed: dict[str, dict[str, bytes]] = {}
    ref_old = tmp / "ref-old"
    shutil.copytree(base, ref_old)
    run(ref_old, ["doctor", "--fix"], env)
    old_fixed = files(ref_old)
    took: dict[str, float] = {}
    ops = ["register", "update", "continue", "release", "organize", "archive"]
    for op in ops:
        ref = tmp / f"ref-{op}"
        shutil.copytree(base, ref)
        t = time.perf_counter()
        p = run(ref, command(op, targets, snap_file), env)
        took[op] = time.perf_counter() - t
        if p.returncode != 0:
            print(f"reference {op} failed: {p.stderr.decode(errors='replace')}")
            return 2
        new[op] = files(ref)
        run(ref, ["doctor", "--fix"], env)  # what the resolver itself makes of the new state
        new_fixed[op] = files(ref)

    counts: Counter = Counter()
    problems: list[str] = []
    for i in range(a.runs):
        op = ops[i % len(ops)]
        v = tmp / f"run-{i}"
        shutil.copytree(base, v)
        # Most of a short command is interpreter start-up: aim most kills at the part that writes.
        delay = took[op] * rng.uniform(0.3, 1.05)
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentmem_vault", "--vault", str(v), *command(op, targets, snap_file)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        finished = proc.poll() is not None
        if not finished:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        counts[f"{op}: runs"] += 1
        counts[f"{op}: killed before it finished" if not finished else f"{op}: finished before the kill"] += 1
        got = files(v)
        for rel in set(old) | set(new[op]) | set(got):
            if got.get(rel) not in (old.get(rel), new[op].get(rel)):
                # a file written twice by one transaction (the board by release): the next writer
                # puts it back with the rest; checked as a whole below
                counts["files at an intermediate version right after the kill"] += 1
        try:
            doc = it.parse_index((v / "memory" / "index.md").read_text(encoding="utf-8"))
            if doc.bad:
                counts["torn boards"] += 1
                problems.append(f"run {i} {op}: bad rows {doc.bad[:1]}")
        except Exception as exc:  # noqa: BLE001 - a torn board is what this loop looks for
            counts["torn boards"] += 1
            problems.append(f"run {i} {op}: {exc}")
        counts["leftover temporary files"] += sum(1 for _ in (v / "memory").rglob("*.agentmem-tmp"))
        state = "new" if got == new[op] else "old" if got == old else "mixed"
        counts[f"{op}: left {state}"] += 1
        # The next writer undoes a transaction the kill cut short; the user asking to archive again
        # then archives anew.
        resolver = ["archive", targets["archive"]] if op == "archive" and i % 12 == 5 else ["doctor", "--fix"]
        p = run(v, resolver, env)
        after = files(v)
        fixed = resolver[0] == "doctor"
        if after == (new_fixed[op] if fixed else new[op]):
            outcome = "new"
        elif after == (old_fixed if fixed else old):
            outcome = "old"
        else:
            outcome = "NEITHER"
            problems.append(
                f"run {i} {op}: after {' '.join(resolver)} the vault is neither old nor new: "
                f"{p.stdout.decode(errors='replace')[-300:]} {p.stderr.decode(errors='replace')[-300:]}"
            )
        counts[f"{op}: left {state}, then {outcome} after {resolver[0]}"] += 1
        counts["killed transactions undone by the next writer"] += "killed halfway" in p.stdout.decode(errors="replace")
        shutil.rmtree(v, ignore_errors=True)

    print(
        json.dumps(
            {
                "rows": a.rows,
                "runs": a.runs,
                "seed": a.seed,
                "uninterrupted_seconds": {k: round(x, 2) for k, x in took.items()},
                "counts": dict(sorted(counts.items())),
            },
            ensure_ascii=False,
            indent=1,
        )
    )
    for p in problems[:20]:
        print("PROBLEM:", p)
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
