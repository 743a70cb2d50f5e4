"""Reliability: snapshot input has a size limit, checked before the vault lock is taken; the
merge stays near-linear in the number of items (docs/reliability.md)."""

from __future__ import annotations

import json

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.locking import exclusive_lock

from conftest import run_cli as _run_cli


def run_cli(*args, **kw):  # noqa: ANN002, ANN003 - real processes: crashes, hangs and disks are real here
    kw.setdefault("process", True)
    return _run_cli(*args, **kw)


NOW = {"AGENTMEM_NOW": "2026-06-01T09:30"}


def _manual(vault: Vault) -> str:
    p = run_cli("register", "--manual", "--topic", "t", "--json", vault=vault, env=NOW, input=b"")
    return json.loads(p.stdout)["session_id"]


@pytest.mark.parametrize("how", ["stdin", "file"])
def test_oversized_snapshot_is_refused_without_taking_the_lock(vault: Vault, tmp_path, how: str) -> None:
    sid = _manual(vault)
    big = ("# Session: x\n\n## Current Context\n" + "- 很長的內容 line\n" * 200_000).encode("utf-8")  # ~4.6 MB
    before = {p: p.read_bytes() for p in vault.memory.rglob("*.md")}
    # Hold the vault lock: a command that took it would time out (lock_timeout 1 s) instead of
    # refusing the input; the refusal proves the size is checked first.
    vault.config_path.write_text("lock_timeout: 1\n", encoding="utf-8")
    with exclusive_lock(vault.lock_path("index"), 5):
        if how == "stdin":
            p = run_cli("update", sid, "--snapshot", "-", vault=vault, env=NOW, input=big)
        else:
            f = tmp_path / "big.md"
            f.write_bytes(big)
            p = run_cli("update", sid, "--snapshot", str(f), vault=vault, env=NOW)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "max_snapshot_bytes" in p.stderr and "lock" not in p.stderr.lower(), p.stderr
    assert {p: p.read_bytes() for p in vault.memory.rglob("*.md")} == before


def test_limit_is_configurable(vault: Vault) -> None:
    sid = _manual(vault)
    vault.config_path.write_text("max_snapshot_bytes: 2000\n", encoding="utf-8")
    text = "# Session: x\n\n## Current Context\n" + "- item\n" * 400
    p = run_cli("update", sid, "--snapshot", "-", vault=vault, env=NOW, input=text)
    assert p.returncode == 1 and "2,000" in p.stderr
    vault.config_path.write_text("max_snapshot_bytes: 100000\n", encoding="utf-8")
    ok = run_cli("update", sid, "--snapshot", "-", vault=vault, env=NOW, input=text)
    assert ok.returncode == 0, ok.stderr


def test_merge_of_many_near_identical_items_scores_a_bounded_number_of_candidates(monkeypatch) -> None:
    """Count work, not time: the number of similarity scores grows linearly with the items."""
    from agentmem_vault.model import snapshot_merge as sm
    from agentmem_vault.model.snapshot import parse_snapshot

    calls = {"n": 0}
    real = sm._revision_score

    def counting(*a, **kw):
        calls["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(sm, "_revision_score", counting)

    def snap(n: int, off: int) -> str:
        return "# Session: x\n\n## Decisions\n" + "".join(
            f"- item {i + off} decided to use tool {i * 7 + off} for module m{i}\n" for i in range(n)
        )

    n = 1600
    sm.merge_snapshots(parse_snapshot(snap(n, 0)), parse_snapshot(snap(n, n // 2)), updated_at="2026-06-01 10:00")
    # ~20 scores per text with the candidate cap; scoring every candidate took ~200 per text here
    # (and grew with n): 350,000+ scores, minutes under the vault lock for a large paste
    assert calls["n"] <= sm.MAX_CANDIDATES * n, calls
