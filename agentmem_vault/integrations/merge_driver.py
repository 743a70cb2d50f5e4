"""git merge drivers for a vault kept in git (``agentmem merge-driver KIND %O %A %B %P``; the
protocol, exit status and rules: docs/sync.md, "The merge rules"). The merge rules are pure
functions in ``model/merge3.py``; this module only reads the files, runs ``git merge-file`` for the
text git would have merged itself, and writes nothing but %A.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agentmem_vault.errors import AgentmemError, Unmergeable, UsageError
from agentmem_vault.model import merge3
from agentmem_vault.fs import atomic_write_bytes, read_bytes, write_cache_file

KINDS = ("index", "snapshot", "note")


@dataclass
class DriverResult:
    exit_code: int
    messages: list[str] = field(default_factory=list)


def _git_merge_file(ours: Path, base: Path, theirs: Path, label: str) -> tuple[bytes, int]:
    """git's own three-way line merge, on stdout. Returns (output, number of conflicts)."""
    cmd = ["git", "merge-file", "-L", f"ours:{label}", "-L", "base", "-L", f"theirs:{label}", "-p"]
    cmd += [str(ours), str(base), str(theirs)]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentmemError(f"could not run git merge-file: {exc}", code="git_failed") from exc
    if proc.returncode < 0 or proc.returncode > 127:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise AgentmemError(f"git merge-file failed: {err or proc.returncode}", code="git_failed")
    return proc.stdout, proc.returncode


def git_line_merge(label: str) -> merge3.LineMerge:
    """A ``LineMerge`` that runs ``git merge-file`` on temporary copies (outside the vault)."""

    def merge(base: str, ours: str, theirs: str) -> tuple[str, bool]:
        with tempfile.TemporaryDirectory(prefix="agentmem-merge-") as tmp:
            paths = []
            for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
                p = Path(tmp) / name
                write_cache_file(p, text.encode("utf-8"))  # a private folder: no fsync needed
                paths.append(p)
            out, conflicts = _git_merge_file(paths[0], paths[1], paths[2], label)
        return out.decode("utf-8"), conflicts == 0

    return merge


def _read(path: Path, what: str) -> bytes:
    if path.is_symlink():
        raise UsageError(f"{what} file {path} is not a regular file; refusing to merge it")
    try:  # git's temporary files; missing: an add/add merge's empty ancestor
        return read_bytes(path) or b""
    except AgentmemError as exc:
        raise UsageError(f"cannot merge {what} file {path}: {exc.message}") from exc


def run_merge_driver(
    kind: str, base: str | os.PathLike, ours: str | os.PathLike, theirs: str | os.PathLike, pathname: str = ""
) -> DriverResult:
    """Merge per ``kind`` and leave the result in ``ours`` (the only file written)."""
    if kind not in KINDS:
        raise UsageError(f"unknown merge driver kind {kind!r}: expected one of {', '.join(KINDS)}")
    o_path, a_path, b_path = Path(base), Path(ours), Path(theirs)
    label = pathname or a_path.name
    raw = [_read(o_path, "base"), _read(a_path, "ours"), _read(b_path, "theirs")]
    if raw[1] == raw[2] or raw[0] == raw[2]:
        return DriverResult(0, [])  # theirs adds nothing: ours is the result
    if raw[0] == raw[1]:
        atomic_write_bytes(a_path, raw[2])  # only theirs changed
        return DriverResult(0, [])
    try:
        texts = [r.decode("utf-8") for r in raw]
        outcome = _merge(kind, texts, label)
    except (UnicodeDecodeError, Unmergeable) as exc:
        reason = "a side is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.message
        why = f"{label}: cannot merge by key ({reason})"
        try:
            merged, conflicts = _git_merge_file(a_path, o_path, b_path, label)
        except AgentmemError as git_exc:
            return DriverResult(
                2, [f"{why} nor line by line ({git_exc.message}); kept ours unchanged: resolve it by hand"]
            )
        atomic_write_bytes(a_path, merged)
        if conflicts:
            return DriverResult(1, [f"{why}; left git's line merge with conflict markers for you to resolve"])
        return DriverResult(0, [f"{why}; git's line merge was clean"])
    if outcome.text.encode("utf-8") != raw[1]:
        atomic_write_bytes(a_path, outcome.text.encode("utf-8"))
    return DriverResult(0 if outcome.clean else 1, [f"{label}: {m}" for m in outcome.reports])


def _merge(kind: str, texts: list[str], label: str) -> merge3.MergeOutcome:
    base, ours, theirs = texts
    if kind == "index":
        return merge3.merge_board(base, ours, theirs, git_line_merge(label))
    if kind == "snapshot":
        return merge3.merge_snapshot_texts(base, ours, theirs)
    return merge3.merge_note_texts(base, ours, theirs, git_line_merge(label))
