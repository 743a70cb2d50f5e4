"""The seam between detection and the field rules: what the extractor knows of a statement."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.longterm.statement import KINDS, Statement


def test_statement_kinds_cover_the_seed_kinds() -> None:
    for kind in ("explicit", "rule", "preference", "correction", "decision", "pitfall", "environment"):
        assert kind in KINDS
    with pytest.raises(ValueError):
        Statement("todo")
    with pytest.raises(ValueError):
        Statement("rule", reach="somewhere")


def test_memory_object_carries_its_statement_into_json() -> None:
    st = Statement("decision", scope_words=("這個專案",), reach="project", said_at="2026-12-01T10:00", reason="因為 …")
    m = MemoryObject("create", "t", "content here", "important_decision_experience", statement=st)
    d = json.loads(json.dumps(dataclasses.asdict(m), ensure_ascii=False))
    assert d["statement"]["kind"] == "decision"
    assert d["statement"]["scope_words"] == ["這個專案"]
    assert d["statement"]["said_at"] == "2026-12-01T10:00"
    assert MemoryObject("create", "t", "c", "user_behavior").statement is None


def test_turn_records_when_it_was_said() -> None:
    assert Turn("user", "x").at == ""
    assert Turn("user", "x", "2026-12-01T10:00:05").at == "2026-12-01T10:00:05"
