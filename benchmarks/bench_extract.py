"""Offline long-term extraction over 200 generated transcripts of 50 turns.

Prints JSON: interpreter start-up and import baselines measured in the same run, then the time
and notes written for a first run, an unchanged re-run (incremental state), a forced re-run
(curation finds everything known), and the same first run through the CLI in a subprocess.

    python benchmarks/bench_extract.py [--transcripts 200] [--turns 50]
    python benchmarks/bench_extract.py --compare main   # against another commit, in the same run

``--compare REF`` checks REF out with ``git archive`` into a temporary folder and runs the same
workload (this script's transcripts) on both trees, alternately, ``--repeat`` times each, each run
in a fresh interpreter; it prints the best and median first-run and unchanged re-run times of
both, and of the offline detection pass alone (``--detection-only``: parsed transcripts, no
reading, redaction, field rules or curation), and their ratio; the same for the CPU time of those
runs (``time.process_time``: what other load on a shared machine disturbs least).

``--distinct`` makes every filler turn a text of its own (the rules stay the same words, as a user
restates them): the default workload repeats a handful of filler texts across all 200 chats, which
flatters any cache keyed on text; real chats rarely repeat themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RULES = [
    "記住：以後回答一律用繁體中文，程式碼註解維持英文。",
    "From now on always use pnpm instead of npm in this repo.",
    "以后都用 pathlib 处理路径，不要用 os.path 拼字符串。",
    "Never edit files under src/generated/ by hand; run make codegen instead.",
    "不對，時間在資料庫裡一律存 UTC，顯示時再轉成本地時區。",
    "I prefer small functions: keep them under 40 lines.",
    "Please use unified diffs when you show me code changes, not whole files.",
    "下次不要再直接 git push --force 到 main 分支了，一律開 PR。",
]
FILLER_USER = [
    "Can you look at the failing test in test_parser.py?",
    "幫我看一下這段程式碼為什麼會拋出 KeyError。",
    "Rename the variable in this function to something clearer.",
    "好，繼續。",
    "What does this stack trace mean?\nTraceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'user'",
    "這次先把端口改成 8081 試試。",
    "Thanks, looks good.",
]
FILLER_ASSISTANT = [
    "I looked at the code: the dictionary lookup fails because the request has no 'user' key. " * 3,
    "已修改，測試通過。commit 9f2c1e4b7a0d3c5e8f1a2b3c4d5e6f708192a3b4",
    "Here is the diff:\n```diff\n- a = 1\n+ a = 2\n```",
]


def make_transcripts(folder: Path, n: int, turns: int, seed: int = 7, distinct: bool = False) -> list[Path]:
    rnd = random.Random(seed)
    paths = []
    for i in range(n):
        lines = []
        for t in range(turns):
            if t % 2 == 0:
                text = rnd.choice(RULES) if rnd.random() < 0.06 else rnd.choice(FILLER_USER)
                # a unique rule now and then, so that runs create new notes too
                if rnd.random() < 0.01:
                    text = f"Remember: service-{i} logs go to /var/log/service-{i}/app.log, rotated daily."
                if distinct and text in FILLER_USER:
                    text = f"{text} (chat {i}, turn {t})"
                lines.append(
                    json.dumps(
                        {
                            "role": "user",
                            "message": {"content": [{"type": "text", "text": f"<user_query>\n{text}\n</user_query>"}]},
                        },
                        ensure_ascii=False,
                    )
                )
            else:
                tail = f" (chat {i}, turn {t})" if distinct else ""
                lines.append(
                    json.dumps(
                        {
                            "role": "assistant",
                            "message": {"content": [{"type": "text", "text": rnd.choice(FILLER_ASSISTANT) + tail}]},
                        },
                        ensure_ascii=False,
                    )
                )
        p = folder / ".cursor" / "projects" / "home-me-shop" / "agent-transcripts" / f"t{i:04d}" / f"t{i:04d}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


def _median_run(cmd: list[str], env: dict, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transcripts", type=int, default=200)
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--compare", metavar="REF", help="also run the workload on this commit and compare")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tree with --compare")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess run")
    ap.add_argument("--detection-only", action="store_true", help="time only the offline detection pass")
    ap.add_argument("--distinct", action="store_true", help="every filler turn a text of its own")
    args = ap.parse_args()
    if args.detection_only:
        detection_only(args.transcripts, args.turns, args.distinct)
        return
    if args.compare:
        compare(args.compare, args.transcripts, args.turns, args.repeat, args.distinct)
        return

    from agentmem_vault.vault import Vault
    from agentmem_vault.longterm.extract import extract_sources
    from agentmem_vault.longterm.sources import source_for_transcript

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = dict(
            os.environ, AGENTMEM_CACHE_DIR=str(base / "cache"), AGENTMEM_CONFIG_DIR=str(base / "config"), HOME=str(base)
        )
        env.pop("ANTHROPIC_API_KEY", None)
        os.environ.update({k: env[k] for k in ("AGENTMEM_CACHE_DIR", "AGENTMEM_CONFIG_DIR")})
        os.environ.pop("ANTHROPIC_API_KEY", None)
        startup = _median_run([sys.executable, "-c", "pass"], env)
        import_time = _median_run([sys.executable, "-c", "import agentmem_vault.longterm.extract"], env)
        files = make_transcripts(base, args.transcripts, args.turns, distinct=args.distinct)
        chars = sum(p.stat().st_size for p in files)

        def fresh_vault(name: str) -> Vault:
            v = Vault(base / name)
            (v.memory).mkdir(parents=True)
            (v.memory / "index.md").write_text("", encoding="utf-8")
            return v

        v = fresh_vault("vault")
        sources = [source_for_transcript(p) for p in files]
        runs = {}
        for label, kw in (("first", {}), ("unchanged", {}), ("forced", {"force": True})):
            t0, c0 = time.perf_counter(), time.process_time()
            rep = extract_sources(v, sources, offline=True, **kw)
            runs[label] = {
                "seconds": round(time.perf_counter() - t0, 3),
                "cpu_seconds": round(time.process_time() - c0, 3),
                "notes_written": rep.written,
                "created": rep.count("create"),
                "updated": rep.count("update"),
                "ignored": rep.count("ignore"),
                "sources_processed": sum(1 for s in rep.sources if s["status"] == "processed"),
            }
        notes_on_disk = len(list(v.longterm_dir.glob("*.md")))

        if args.no_cli:
            print(json.dumps({"in_process": runs, "notes_on_disk": notes_on_disk}))
            return
        v2 = fresh_vault("vault-cli")
        cmd = [sys.executable, "-m", "agentmem_vault", "--vault", str(v2.root), "extract", "--offline", "--json"]
        for p in files:
            cmd += ["--file", str(p)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        cli_seconds = time.perf_counter() - t0
        cli_out = json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-500:]}

    print(
        json.dumps(
            {
                "transcripts": args.transcripts,
                "turns_per_transcript": args.turns,
                "input_chars": chars,
                "baseline_interpreter_startup_s": round(startup, 3),
                "baseline_import_extract_module_s": round(import_time, 3),
                "in_process": runs,
                "notes_on_disk": notes_on_disk,
                "cli_first_run_s": round(cli_seconds, 3),
                "cli_first_run_minus_startup_s": round(cli_seconds - startup, 3),
                "cli_created": cli_out.get("created"),
                "per_transcript_ms": round(1000 * runs["first"]["seconds"] / max(1, args.transcripts), 2),
            },
            indent=2,
        )
    )


def detection_only(transcripts: int, turns: int, distinct: bool = False) -> None:
    """The offline detection pass alone: the transcripts parsed in memory (no file reading, no
    redaction, no field rules, no curation), ``extract_offline`` over every one."""
    import inspect

    from agentmem_vault.longterm import offline
    from agentmem_vault.longterm.sources import parse_cursor_jsonl

    with tempfile.TemporaryDirectory() as tmp:
        files = make_transcripts(Path(tmp), transcripts, turns, distinct=distinct)
        parsed = [parse_cursor_jsonl(p.read_text(encoding="utf-8")).turns for p in files]
    # the field rules leave the pass where the tree allows it (they are another stage)
    kw = {"fields": False} if "fields" in inspect.signature(offline.extract_offline).parameters else {}
    t0, c0 = time.perf_counter(), time.process_time()
    n = sum(len(offline.extract_offline(ts, **kw)) for ts in parsed)
    took = {"seconds": round(time.perf_counter() - t0, 3), "cpu_seconds": round(time.process_time() - c0, 3)}
    print(json.dumps({**took, "candidates": n}))


def compare(ref: str, transcripts: int, turns: int, repeat: int, distinct: bool = False) -> None:
    """The workload on ``ref`` and on this tree, alternately, each run in a fresh interpreter
    that imports the package from that tree only (``-P``: not from the script's folder)."""
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        from _common import checkout  # the parent only: the timed children run with -P

        base = Path(tmp) / "baseline"
        base.mkdir()
        sha = checkout(ref, base)  # its own templates/, never this tree's through the editable install
        times: dict[str, dict[str, list[float]]] = {"baseline": {}, "current": {}}
        cpu: dict[str, dict[str, list[float]]] = {"baseline": {}, "current": {}}
        notes: dict[str, int] = {}
        for _ in range(repeat):
            for label, root in (("baseline", base), ("current", here)):
                env = dict(os.environ, PYTHONPATH=str(root))
                cmd = [sys.executable, "-P", __file__, "--transcripts", str(transcripts), "--turns", str(turns)]
                cmd += ["--distinct"] if distinct else []
                out = subprocess.run([*cmd, "--no-cli"], env=env, check=True, capture_output=True, text=True).stdout
                got = json.loads(out)
                notes[label] = got["notes_on_disk"]
                for run in ("first", "unchanged"):
                    times[label].setdefault(run, []).append(got["in_process"][run]["seconds"])
                    cpu[label].setdefault(run, []).append(got["in_process"][run]["cpu_seconds"])
                out = subprocess.run(
                    [*cmd, "--detection-only"], env=env, check=True, capture_output=True, text=True
                ).stdout
                times[label].setdefault("detection", []).append(json.loads(out)["seconds"])
                cpu[label].setdefault("detection", []).append(json.loads(out)["cpu_seconds"])
    # the best of the runs is the figure least disturbed by other load on a shared machine
    best = {lab: {run: min(v) for run, v in runs.items()} for lab, runs in times.items()}
    med = {lab: {run: statistics.median(v) for run, v in runs.items()} for lab, runs in times.items()}
    best_cpu = {lab: {run: min(v) for run, v in runs.items()} for lab, runs in cpu.items()}
    print(
        json.dumps(
            {
                "transcripts": transcripts,
                "turns_per_transcript": turns,
                "distinct_filler": distinct,
                "baseline_ref": f"{ref} ({sha})",
                "repeat": repeat,
                "best_seconds": best,
                "median_seconds": med,
                "ratio_current_to_baseline": {
                    run: round(best["current"][run] / best["baseline"][run], 2)
                    for run in ("first", "unchanged", "detection")
                },
                "best_cpu_seconds": best_cpu,
                "ratio_cpu_current_to_baseline": {
                    run: round(best_cpu["current"][run] / best_cpu["baseline"][run], 2)
                    for run in ("first", "unchanged", "detection")
                },
                "notes_on_disk": notes,
                "all_runs_seconds": times,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
