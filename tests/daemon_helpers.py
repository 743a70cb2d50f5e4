"""Helpers for the daemon tests: snapshot/index text builders and a fake clock."""

from __future__ import annotations

from agentmem_vault.board import table as it


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


def snapshot_text(
    sid: str,
    *,
    topic: str = "主題",
    status: str = "active",
    started: str = "2026-06-01 09:30",
    updated: str = "2026-06-01 09:45",
    context: str = "- Working on the daemon.",
    agent: str = "cursor-main-agent",
) -> str:
    return (
        f"# Session: {sid}\n\n## Metadata\n| Field | Value |\n|---|---|\n"
        f"| Session ID | {sid} |\n| Agent Name | {agent} |\n| Topic | {topic} |\n| Status | {status} |\n"
        f"| Started At | {started} |\n| Updated At | {updated} |\n\n"
        f"## Current Context\n{context}\n\n## Decisions\nNone\n\n## Files / Artifacts\nNone\n\n"
        "## Open Questions\nNone\n\n## Next Actions\nNone\n\n## Continues From\nNone\n\n## Superseded / Resolved\nNone\n"
    )


def row(
    sid: str,
    *,
    topic: str = "主題",
    status: str = "active",
    updated: str = "2026-06-01 09:45",
    refs: str = "-",
    summary: str = "summary",
    started: str = "2026-06-01 09:30",
) -> it.Row:
    return it.Row(sid, "cursor-main-agent", topic, summary, "k1, k2", status, refs, started, updated)


def index_text(rows: list[it.Row], *, preamble: str = "# Memory Index\n\n") -> str:
    return preamble + it.header_lines() + "".join(it.render_row(r) + "\n" for r in rows)


def sid(n: int, agent: str = "cursor-main-agent") -> str:
    return (
        f"2026-06-01-{n // 60 % 24:02d}{n % 60:02d}-{agent}"
        if n < 1440
        else f"2026-06-02-{(n - 1440) // 60 % 24:02d}{n % 60:02d}-{agent}"
    )


# -- a real daemon process -------------------------------------------------------------------------

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


def wait_for(pred, timeout: float, interval: float = 0.01):
    """Poll ``pred`` until it returns something truthy; returns (value, seconds) or (None, timeout)."""
    t0 = time.monotonic()
    while True:
        v = pred()
        if v:
            return v, time.monotonic() - t0
        if time.monotonic() - t0 >= timeout:
            return None, time.monotonic() - t0
        time.sleep(interval)


def read_status(vault) -> dict:
    try:
        return json.loads((vault.state_dir / "daemon-status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class DaemonProc:
    """``agentmem daemon run`` as a real child process on a vault."""

    def __init__(self, vault, *args: str, env: dict | None = None) -> None:
        self.vault = vault
        self.args = list(args)
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "DaemonProc":
        self.err = open(self.vault.root.parent / f"daemon-{time.monotonic_ns()}.stderr", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentmem_vault", "--vault", str(self.vault.root), "daemon", "run", *self.args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            env=self.env,
        )
        ok, _ = wait_for(
            lambda: (
                (lambda s: s.get("pid") == self.proc.pid and s.get("state") == "running")(read_status(self.vault))
                or self.proc.poll() is not None
            ),
            20,
        )
        assert ok and self.proc.poll() is None, f"daemon did not start: {self.stderr()}"
        return self

    def stderr(self) -> str:
        self.err.flush()
        return Path(self.err.name).read_text(encoding="utf-8", errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> float:
        """Send ``sig``; return the seconds until the process had exited."""
        assert self.proc is not None
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        self.proc.wait(timeout=10)
        return time.monotonic() - t0

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.err.close()
