"""Evaluation on labelled conversations (``agentmem eval DIR``).

Fixture (JSON)::

    {"id": "...", "conversation": {"title": "...", "turns": [{"role": "user", "text": "..."}]},
     "expected": [{"must_contain": ["..."], "must_not_contain": ["..."], "category": "..."}]}

Optional labels of an expected memory: ``kind`` (the kind of statement, ``longterm/statement.py``),
``scope`` (project / global) and ``importance_band`` ("0.9-1.0", "0.7-0.9", "0.5-0.7") for the
field rules. A file may hold one fixture or a JSON list of them. A curation fixture has ``chats``
(``[{"at": "YYYY-MM-DDTHH:MM", "turns": [...]}, ...]``, said in that order) instead of
``conversation``: the expected memories are the notes active after curating every chat, and
``retired`` lists memories that must no longer be active (``longterm/eval_curation.py``).

An empty ``expected`` is a noise case. Each expected memory is matched by the first unclaimed
extracted memory whose title + content + keywords contain every ``must_contain`` and none of the
``must_not_contain`` (case-insensitive); unmatched extractions are false positives. Scores are
micro precision / recall / F1 over all fixtures, and the same per category (an expected memory
counts under its labelled category, a false positive under the category it was given) and per
language (``language``: en, zh-TW, zh-CN; inferred from the user's text when absent).

Built-in sets ship inside the package (``agentmem_vault.evalsets``, from ``tests/fixtures/``):
``tuned`` (the fixtures the rules were developed on), ``dev`` (per failure class, for tuning) and
``unseen`` (held out: written before the rules were changed and never used to tune them; see
docs/extraction.md). ``agentmem eval`` reports tuned and unseen separately.

With a key (``ANTHROPIC_API_KEY``) and without ``--offline`` the model pipeline is evaluated:
``ANTHROPIC_API_KEY=... agentmem eval --set all --json``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

from agentmem_vault.errors import AgentmemError, UsageError
from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.llm import MemoryModel, Usage
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn


BUILTIN_SETS: dict[str, str] = {
    "tuned": "eval",
    "dev": "eval-dev",
    "unseen": "eval-unseen",
    "kinds": "eval-kinds",
    "curation": "eval-curation",
    "unseen2": "eval-unseen2",
    "unseen3": "eval-unseen3",
    "unseen4": "eval-unseen4",
    "unseen5": "eval-unseen5",
    "unseen6": "eval-unseen6",
    "unseen7": "eval-unseen7",
    "fields-unseen": "eval-fields-unseen",
    "fields": "eval-fields",
    "fields2": "eval-fields2",
}
# The source's project a fixture is read from when it names none (docs/extraction.md, Evaluation).
DEFAULT_PROJECT = "eval-project"
_CJK = re.compile(r"[\u3400-\u9fff]")


def builtin_set(name: str) -> Traversable:
    """The folder of a built-in fixture set, inside the installed package."""
    if name not in BUILTIN_SETS:
        raise UsageError(f"unknown fixture set {name!r} (one of: {', '.join(BUILTIN_SETS)})")
    return resources.files("agentmem_vault.evalsets") / BUILTIN_SETS[name]


def infer_language(turns: list[Turn]) -> str:
    """en, zh-TW or zh-CN from what the user wrote (Traditional if folding changes it)."""
    from agentmem_vault.model.textnorm import to_simplified

    text = "".join(_CJK.findall(" ".join(t.text for t in turns if t.role == "user")))
    return "en" if not text else "zh-TW" if to_simplified(text) != text else "zh-CN"


@dataclass
class Fixture:
    id: str
    turns: list[Turn]
    expected: list[dict]
    title: str = ""
    language: str = ""
    # a curation fixture: the chats in the order they were said, each (when, turns)
    chats: list[tuple[str, list[Turn]]] = field(default_factory=list)
    retired: list[dict] = field(default_factory=list)
    cls: str = ""  # the fixture's ``class``: what it probes (a kind, "multi", "buried", "noise", ...)
    project: str = DEFAULT_PROJECT  # the source's project ("" = unknown)


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall and F1 (1.0 for what nothing was counted against)."""
    p, r = tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


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
    language: str = ""
    cls: str = ""
    # category -> [tp, fp, fn]
    by_category: dict[str, list[int]] = field(default_factory=dict)
    # kind of statement -> [tp, fp, fn] (an expected memory under its label, a false positive
    # under the kind the extractor gave it)
    by_kind: dict[str, list[int]] = field(default_factory=dict)
    # the found memories' fields against their labels (longterm/fields/evaluation.py)
    fields: dict[str, Any] = field(default_factory=dict)


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
        return _prf(self.tp, self.fp, self.fn)[0]

    @property
    def recall(self) -> float:
        return _prf(self.tp, self.fp, self.fn)[1]

    @property
    def f1(self) -> float:
        return _prf(self.tp, self.fp, self.fn)[2]

    def breakdown(self, by: str) -> dict[str, dict[str, Any]]:
        """Precision / recall / F1 per ``category``, ``kind``, ``class`` or ``language``."""
        counts: dict[str, list[int]] = {}
        for r in self.results:
            if by in ("language", "class"):
                key = r.language if by == "language" else r.cls
                parts: Any = [(key or "?", [r.tp, r.fp, r.fn])]
            else:
                parts = (r.by_kind if by == "kind" else r.by_category).items()
            for key, got in parts:
                counts[key] = [a + b for a, b in zip(counts.get(key, [0, 0, 0]), got, strict=True)]
        out: dict[str, dict[str, Any]] = {}
        for key in sorted(counts):
            tp, fp, fn = counts[key]
            p, r_, f = _prf(tp, fp, fn)
            out[key] = dict(tp=tp, fp=fp, fn=fn, precision=round(p, 4), recall=round(r_, 4), f1=round(f, 4))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "fixtures": len(self.results),
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
            "noise_fixtures": sum(1 for r in self.results if r.noise),
            "noise_false_positives": sum(r.fp for r in self.results if r.noise),
            "by_category": self.breakdown("category"),
            "by_kind": self.breakdown("kind"),
            "by_class": self.breakdown("class"),
            "by_language": self.breakdown("language"),
            "fields": self.field_figures(),
            "usage": self.usage.to_dict(),
            "results": [r.__dict__ for r in self.results],
        }

    def table(self) -> str:
        w = max([len(r.id) for r in self.results] + [7])
        lines = [f"{'fixture':<{w}}  exp  got  tp  fp  fn", f"{'-' * w}  ---  ---  --  --  --"]
        for r in self.results:
            mark = "  (noise)" if r.noise else ""
            lines.append(f"{r.id:<{w}}  {r.expected:>3}  {r.extracted:>3}  {r.tp:>2}  {r.fp:>2}  {r.fn:>2}{mark}")
        lines.append("")
        lines += self.breakdown_lines()
        lines.append(self.summary_line())
        return "\n".join(lines)

    def field_figures(self) -> dict[str, dict[str, Any]]:
        """Category / scope / importance accuracy and bad keyword / scenario / title shares, overall
        and per language, over the memories found."""
        from agentmem_vault.longterm.fields.evaluation import aggregate

        return aggregate([(r.language, r.fields) for r in self.results if r.fields])

    def summary_line(self) -> str:
        noise_fp = sum(r.fp for r in self.results if r.noise)
        return (
            f"{self.mode}: precision {self.precision:.3f}  recall {self.recall:.3f}  F1 {self.f1:.3f}  "
            f"(tp {self.tp}, fp {self.fp}, fn {self.fn}; {len(self.results)} fixtures, "
            f"{sum(1 for r in self.results if r.noise)} noise with {noise_fp} extraction(s))"
        )

    def breakdown_lines(self) -> list[str]:
        lines: list[str] = []
        for by in ("category", "kind", "class", "language"):
            rows = self.breakdown(by)
            w = max([len(k) for k in rows] + [len(by)])
            lines.append(f"{by:<{w}}  precision  recall     F1  tp  fp  fn")
            for k, v in rows.items():
                lines.append(
                    f"{k:<{w}}  {v['precision']:>9.3f}  {v['recall']:>6.3f}  {v['f1']:>5.3f}  {v['tp']:>2}  {v['fp']:>2}  {v['fn']:>2}"
                )
            lines.append("")
        from agentmem_vault.longterm.fields.evaluation import lines as field_lines

        lines += field_lines(self.field_figures()) + [""]
        return lines


def _turns(raw: Any) -> list[Turn]:
    return [Turn(str(t["role"]), str(t["text"])) for t in raw]


def _fixture(data: dict, stem: str, labels: dict | None = None) -> Fixture:
    expected = list(data.get("expected") or [])
    retired = list(data.get("retired") or [])
    for e in expected + retired:
        if not isinstance(e.get("must_contain", []), list):
            raise TypeError("must_contain is not a list")
    if "chats" in data:
        chats = [(str(c.get("at") or ""), _turns(c["turns"])) for c in data["chats"]]
        turns = [t for _, ts in chats for t in ts]
        title = ""
    else:
        chats = []
        turns = _turns(data["conversation"]["turns"])
        title = str(data["conversation"].get("title", ""))
    lang = str(data.get("language") or "") or infer_language(turns)
    cls = str(data.get("class") or "")
    fid = str(data.get("id") or stem)
    project = _merge_labels(expected, data, (labels or {}).get("fixtures", {}).get(fid), labels or {})
    return Fixture(fid, turns, expected, title, lang, chats, retired, cls, project)


def _merge_labels(expected: list[dict], data: dict, labelled: dict | None, labels: dict) -> str:
    """Add the field labels of a label file to the fixture's expected memories (matched by
    ``must_contain``; a key the fixture sets itself wins) and return the source's project: the
    fixture's ``project``, else the label file's, else ``DEFAULT_PROJECT`` (``null``: unknown)."""
    for lab in (labelled or {}).get("expected", []):
        for e in expected:
            if e.get("must_contain") == lab.get("must_contain"):
                for k, v in lab.items():
                    e.setdefault(k, v)
                break
    return next(
        (str(src["project"] or "") for src in (data, labelled or {}, labels) if "project" in src), DEFAULT_PROJECT
    )


def field_labels(folder: Path | Traversable) -> dict:
    """The field labels of a fixture folder: ``../fields/<folder name>.json`` when it exists
    (kept apart from the fixtures so that both can be edited at once), else none."""
    try:
        f: Path | Traversable | None = (
            folder / ".." / "fields" / f"{folder.name}.json" if isinstance(folder, Path) else None
        )
        if f is None:
            parent = resources.files("agentmem_vault.evalsets") / "fields" / f"{folder.name}.json"
            f = parent if parent.is_file() else None
        if f is None or not f.is_file():
            return {}
        data = json.loads(_text_of(f))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, AgentmemError) as exc:
        raise UsageError(f"field labels of {folder}: not valid JSON ({exc})") from exc


def load_fixture_file(path: Path | Traversable, labels: dict | None = None) -> list[Fixture]:
    """The fixtures of one file: a fixture object, or a JSON list of them; ``labels``: the
    folder's field labels (``field_labels``)."""
    try:
        data = json.loads(_text_of(path))
        stem = path.name.rsplit(".", 1)[0]
        if isinstance(data, list):
            return [_fixture(d, f"{stem}-{i + 1}", labels) for i, d in enumerate(data)]
        return [_fixture(data, stem, labels)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, AgentmemError) as exc:
        raise UsageError(f"{path}: not a valid eval fixture ({getattr(exc, 'message', exc)})") from exc


def _text_of(f: Path | Traversable) -> str:
    """A fixture file's text: a file the user names through fs (a FIFO is refused, never waited
    on), a packaged one through importlib.resources."""
    if isinstance(f, Path):
        from agentmem_vault.fs import read_bytes

        return (read_bytes(f) or b"").decode("utf-8-sig")
    return f.read_text(encoding="utf-8-sig")


def load_fixtures(folder: Path | Traversable) -> list[Fixture]:
    if not folder.is_dir():
        raise UsageError(f"eval fixtures folder not found: {folder}")
    paths = sorted(
        (p for p in folder.iterdir() if p.name.endswith(".json") and p.name != "baseline.json"), key=lambda p: p.name
    )
    if not paths:
        raise UsageError(f"no *.json fixtures in {folder}")
    labels = field_labels(folder)
    return [fx for p in paths for fx in load_fixture_file(p, labels)]


def _matches(m: MemoryObject, exp: dict) -> bool:
    return text_matches(m.search_text(), exp)


def text_matches(text: str, exp: dict) -> bool:
    """``text`` holds every ``must_contain`` and none of the ``must_not_contain`` (any case)."""
    blob = text.lower()
    return all(str(s).lower() in blob for s in exp.get("must_contain", [])) and not any(
        str(s).lower() in blob for s in exp.get("must_not_contain", [])
    )


def score_fixture(fx: Fixture, extracted: list[MemoryObject]) -> FixtureResult:
    from agentmem_vault.longterm.fields.evaluation import fixture_counts

    claimed: set[int] = set()
    pairs: list[tuple[dict, MemoryObject]] = []
    tp = 0
    missed: list[list[str]] = []
    by_cat: dict[str, list[int]] = {}
    by_kind: dict[str, list[int]] = {}
    for exp in fx.expected:
        hit = next((i for i, m in enumerate(extracted) if i not in claimed and _matches(m, exp)), None)
        cat = str(exp.get("category") or (extracted[hit].category if hit is not None else "(unlabelled)"))
        c = by_cat.setdefault(cat, [0, 0, 0])
        k = by_kind.setdefault(str(exp.get("kind") or "(unlabelled)"), [0, 0, 0])
        if hit is None:
            missed.append(list(exp.get("must_contain", [])))
            c[2] += 1
            k[2] += 1
        else:
            claimed.add(hit)
            pairs.append((exp, extracted[hit]))
            tp += 1
            c[0] += 1
            k[0] += 1
    for i, m in enumerate(extracted):
        if i not in claimed:
            by_cat.setdefault(m.category, [0, 0, 0])[1] += 1
            by_kind.setdefault(kind_of(m), [0, 0, 0])[1] += 1
    # a retired rule that is still said by a memory counted as right is a contradiction: wrong too
    contradicting = [i for i in claimed if any(_matches(extracted[i], r) for r in fx.retired)]
    for i in contradicting:
        by_cat.setdefault(extracted[i].category, [0, 0, 0])[1] += 1
        by_kind.setdefault(kind_of(extracted[i]), [0, 0, 0])[1] += 1
    return FixtureResult(
        id=fx.id,
        expected=len(fx.expected),
        extracted=len(extracted),
        tp=tp,
        fp=len(extracted) - len(claimed) + len(contradicting),
        fn=len(fx.expected) - tp,
        noise=not fx.expected,
        extracted_titles=[m.title for m in extracted],
        missed=missed,
        language=fx.language,
        cls=fx.cls,
        by_category=by_cat,
        by_kind=by_kind,
        fields=fixture_counts(pairs, fx.project),
    )


def kind_of(m: MemoryObject) -> str:
    """The kind of statement the extractor gave a memory (its signal for older candidates)."""
    return m.statement.kind if m.statement is not None else (m.signal or "(unlabelled)")


def evaluate(fixtures: list[Fixture], *, model: MemoryModel | None = None, min_score: int = 4) -> EvalReport:
    report = EvalReport(mode="offline" if model is None else f"model {model.model}", results=[])
    for fx in fixtures:
        if fx.chats:
            from agentmem_vault.longterm.eval_curation import curated_memories

            kept, errors, usage = curated_memories(fx.id, fx.chats, model=model, min_score=min_score)
        else:
            kept, _, errors, usage = memories_from_turns(
                fx.turns, model=model, ref=f"eval:{fx.id}", project=fx.project, min_score=min_score
            )
        report.usage.add(usage)
        r = score_fixture(fx, kept)
        r.errors = errors
        report.results.append(r)
    return report
