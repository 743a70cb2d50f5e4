"""Evaluation on labelled conversations (``agentmem eval DIR``).

Fixture (JSON)::

    {"id": "...", "conversation": {"title": "...", "turns": [{"role": "user", "text": "..."}]},
     "expected": [{"must_contain": ["..."], "must_not_contain": ["..."], "category": "..."}]}

An empty ``expected`` is a noise case. Each expected memory is matched by the first unclaimed
extracted memory whose title + content + keywords contain every ``must_contain`` and none of the
``must_not_contain`` (case-insensitive); unmatched extractions are false positives. Scores are
micro precision / recall / F1 over all fixtures.

With a key (``ANTHROPIC_API_KEY``) and without ``--offline`` the model pipeline is evaluated:
``ANTHROPIC_API_KEY=... agentmem eval tests/fixtures/eval --json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmem_vault.errors import UsageError
from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.llm import MemoryModel, Usage
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn


@dataclass
class Fixture:
    id: str
    turns: list[Turn]
    expected: list[dict]
    title: str = ""


@dataclass
class FixtureResult:
    id: str
    expected: int
    extracted: int
    tp: int
    fp: int
    fn: int
    noise: bool
    extracted_titles: list[str] = field(default_factory=list)
    missed: list[list[str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class EvalReport:
    mode: str
    results: list[FixtureResult]
    usage: Usage = field(default_factory=Usage)

    @property
    def tp(self) -> int:
        return sum(r.tp for r in self.results)

    @property
    def fp(self) -> int:
        return sum(r.fp for r in self.results)

    @property
    def fn(self) -> int:
        return sum(r.fn for r in self.results)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "fixtures": len(self.results),
            "tp": self.tp, "fp": self.fp, "fn": self.fn,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "noise_fixtures": sum(1 for r in self.results if r.noise),
            "noise_false_positives": sum(r.fp for r in self.results if r.noise),
            "usage": self.usage.to_dict(),
            "results": [r.__dict__ for r in self.results],
        }

    def table(self) -> str:
        w = max([len(r.id) for r in self.results] + [7])
        lines = [f"{'fixture':<{w}}  exp  got  tp  fp  fn", f"{'-' * w}  ---  ---  --  --  --"]
        for r in self.results:
            mark = "  (noise)" if r.noise else ""
            lines.append(f"{r.id:<{w}}  {r.expected:>3}  {r.extracted:>3}  {r.tp:>2}  {r.fp:>2}  {r.fn:>2}{mark}")
        lines.append(
            f"\n{self.mode}: precision {self.precision:.3f}  recall {self.recall:.3f}  F1 {self.f1:.3f}  "
            f"(tp {self.tp}, fp {self.fp}, fn {self.fn}; {len(self.results)} fixtures)"
        )
        return "\n".join(lines)


def load_fixture(path: Path) -> Fixture:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        conv = data["conversation"]
        turns = [Turn(str(t["role"]), str(t["text"])) for t in conv["turns"]]
        expected = list(data.get("expected") or [])
        for e in expected:
            if not isinstance(e.get("must_contain", []), list):
                raise TypeError("must_contain is not a list")
        return Fixture(str(data.get("id") or path.stem), turns, expected, str(conv.get("title", "")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path}: not a valid eval fixture ({exc})") from exc


def load_fixtures(folder: Path) -> list[Fixture]:
    if not folder.is_dir():
        raise UsageError(f"eval fixtures folder not found: {folder}")
    paths = sorted(p for p in folder.glob("*.json") if p.name != "baseline.json")
    if not paths:
        raise UsageError(f"no *.json fixtures in {folder}")
    return [load_fixture(p) for p in paths]


def _matches(m: MemoryObject, exp: dict) -> bool:
    blob = m.search_text().lower()
    return all(str(s).lower() in blob for s in exp.get("must_contain", [])) and not any(
        str(s).lower() in blob for s in exp.get("must_not_contain", [])
    )


def score_fixture(fx: Fixture, extracted: list[MemoryObject]) -> FixtureResult:
    claimed: set[int] = set()
    tp = 0
    missed: list[list[str]] = []
    for exp in fx.expected:
        hit = next((i for i, m in enumerate(extracted) if i not in claimed and _matches(m, exp)), None)
        if hit is None:
            missed.append(list(exp.get("must_contain", [])))
        else:
            claimed.add(hit)
            tp += 1
    return FixtureResult(
        id=fx.id, expected=len(fx.expected), extracted=len(extracted), tp=tp, fp=len(extracted) - len(claimed),
        fn=len(fx.expected) - tp, noise=not fx.expected, extracted_titles=[m.title for m in extracted], missed=missed,
    )


def evaluate(fixtures: list[Fixture], *, model: MemoryModel | None = None, min_score: int = 4) -> EvalReport:
    report = EvalReport(mode="offline" if model is None else f"model {model.model}", results=[])
    for fx in fixtures:
        kept, _, errors, usage = memories_from_turns(fx.turns, model=model, ref=f"eval:{fx.id}", min_score=min_score)
        report.usage.add(usage)
        r = score_fixture(fx, kept)
        r.errors = errors
        report.results.append(r)
    return report
