"""Learn the category scorer's counts (docs/notes.md, Category) from labelled development sets and
write ``templates/fields/category_model.tsv``.

    python scripts/train_categories.py                 # the default development sets
    python scripts/train_categories.py --sets tuned dev kinds --out /tmp/m.tsv
    python scripts/train_categories.py --explain "日志统一用 structlog" --kind rule
    python scripts/train_categories.py --held-out unseen5 unseen4 fields2   # leave one set out

``--held-out X ...``: for each X, the counts learned from every development set but X, and the
category accuracy of ``agentmem eval --offline --set X`` with them, per language, with the
confusions (expected -> got); the shipped model file is not touched. A set trained on scores
its own memories (memorised); this is the honest figure.

Every labelled expected memory gives one example: when the offline extractor finds it, the words
the field rules read its category from (``derive.category_text``) and the kind of statement the
extractor gave it; else the user's turn that says it and its labelled kind. A held-out set is never trained on: ``unseen6``, ``unseen7`` (and any set not
named in ``DEVELOPMENT``) are refused.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem_vault.longterm.evaluate import _matches, builtin_set, load_fixtures, text_matches  # noqa: E402
from agentmem_vault.longterm.extract import memories_from_turns  # noqa: E402
from agentmem_vault.longterm.fields import category  # noqa: E402
from agentmem_vault.longterm.fields.derive import category_text  # noqa: E402
from agentmem_vault.longterm.schema import CATEGORIES  # noqa: E402
from agentmem_vault.longterm.statement import KINDS  # noqa: E402

DEVELOPMENT = ("tuned", "dev", "unseen", "kinds", "unseen2", "unseen3", "unseen4", "fields-unseen", "fields", "fields2", "unseen5")
OUT = ROOT / "templates" / "fields" / "category_model.tsv"
MIN_DOCS = int(__import__("os").environ.get("MIN_DOCS", "1"))


def examples(sets: list[str]) -> list[tuple[str, str, str]]:
    """(text, kind, category) of every labelled memory found in ``sets``, each once."""
    seen: set[tuple[str, str, str]] = set()
    for name in sets:
        for fx in load_fixtures(builtin_set(name)):
            if fx.chats:
                from agentmem_vault.longterm.eval_curation import curated_memories

                kept, _, _ = curated_memories(fx.id, fx.chats, model=None, min_score=4)
            else:
                kept, _, _, _ = memories_from_turns(fx.turns, model=None, ref=f"eval:{fx.id}", project=fx.project)
            claimed: set[int] = set()
            for exp in fx.expected:
                hit = next((i for i, m in enumerate(kept) if i not in claimed and _matches(m, exp)), None)
                if not exp.get("category"):
                    continue
                if hit is not None:
                    claimed.add(hit)
                    m = kept[hit]
                    st = m.statement
                    if st is not None and getattr(fx.turns[st.order], "section", "") in ("decision", "superseded"):
                        continue  # a snapshot's Decisions item is a decision whatever its words say
                    kind = st.kind if st is not None else m.signal
                    seen.add((category_text(m), kind, str(exp["category"])))
                elif said := [t.text for t in fx.turns if t.role == "user" and text_matches(t.text, exp)]:
                    # not found by the extractor (yet): the user's turn that says it, as a statement
                    # of its labelled kind
                    kind = str(exp.get("kind") or "rule")
                    seen.add((said[-1], kind if kind in KINDS else "rule", str(exp["category"])))
    return sorted(seen)


def counts(data: list[tuple[str, str, str]]) -> tuple[Counter[str], dict[str, Counter[str]]]:
    docs: Counter[str] = Counter()
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for text, kind, cat in data:
        docs[cat] += 1
        for f, k in category.features(text, kind).items():
            per[f][cat] += k
    return docs, per


def keep(feature: str, by_category: Counter[str]) -> bool:
    """A word said in fewer than ``MIN_DOCS`` examples is the subject of a fixture ("webhook",
    "Idempotency-Key"), not evidence of a category: it is left out."""
    if any(ch.isspace() for ch in feature) or feature.startswith("#"):
        return False
    return ":" in feature or sum(by_category.values()) >= MIN_DOCS


def write(docs: Counter[str], per: dict[str, Counter[str]], sets: list[str], out: Path) -> None:
    def cells(c: Counter[str]) -> str:
        return "\t".join(f"{k}={n}" for k, n in sorted(c.items()))

    lines = [
        "# Counts of the category scorer (docs/notes.md, Category): per feature (a word, kind:<kind>,",
        "# cue:<category>) how often it occurs in the labelled memories of each category. Written by",
        f"# scripts/train_categories.py from the sets: {' '.join(sets)}. Do not edit by hand.",
        "@docs\t" + cells(docs),
        *(f"{f}\t{cells(c)}" for f, c in sorted(per.items()) if keep(f, c)),
    ]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def held_out(names: list[str]) -> None:
    import tempfile

    from agentmem_vault.longterm.evaluate import evaluate

    per_set = {s: examples([s]) for s in DEVELOPMENT}
    shipped = category._lines
    for x in names:
        train = sorted({e for s, ex in per_set.items() if s != x for e in ex})
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "model.tsv"
            write(*counts(train), [s for s in DEVELOPMENT if s != x], out)
            text = out.read_text(encoding="utf-8")
        rows = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
        category._lines = lambda name, rows=rows: rows if name == category.MODEL else shipped(name)  # type: ignore[assignment]
        category.model.cache_clear()
        category.category_for.cache_clear()
        report = evaluate(load_fixtures(builtin_set(x)))
        right: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        confused: Counter[tuple[str, str, str]] = Counter()
        for r in report.results:
            for lang in ("all", r.language):
                right[lang][0] += r.fields["category"][0]
                right[lang][1] += r.fields["category"][1]
            for p in r.fields["problems"]:
                if m := re.match(r"category: (\S+) \(expected (\S+)\)", p):
                    confused[(r.language, m[2], m[1])] += 1
        cells = "  ".join(f"{lang} {n / t:.2f} ({n}/{t})" for lang, (n, t) in sorted(right.items()) if t)
        print(f"{x:14s} trained on {len(train)} examples of the others: {cells}")
        for (lang, want, got), n in sorted(confused.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"    {n} x {lang:5s} {want} -> {got}")
    category._lines = shipped  # type: ignore[assignment]
    category.model.cache_clear()
    category.category_for.cache_clear()


def explain(text: str, kind: str) -> None:
    """Each feature's pull towards the winning category, most telling first."""
    prior, logp, unseen = category.model()
    feats = [(f, k) for f, k in category.features(text, kind).items() if f in logp]
    got = category.category_for(text, kind)
    print(f"category: {got}")
    for f, k in sorted(feats, key=lambda fk: -fk[1] * (logp[fk[0]].get(got, unseen[got]))):
        best = max(prior, key=lambda c: logp[f].get(c, unseen[c]))
        print(f"  {f:30s} x{k}  favours {best}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", nargs="+", default=list(DEVELOPMENT))
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--explain", metavar="TEXT")
    ap.add_argument("--kind", default="rule")
    ap.add_argument("--held-out", nargs="+", metavar="SET", help="leave each set out in turn and score it")
    args = ap.parse_args()
    if args.held_out:
        if refused := [s for s in args.held_out if s not in DEVELOPMENT]:
            print(f"refused: {' '.join(refused)} (held out or unknown)", file=sys.stderr)
            return 2
        held_out(args.held_out)
        return 0
    if args.explain:
        explain(args.explain, args.kind)
        return 0
    refused = [s for s in args.sets if s not in DEVELOPMENT]
    if refused:
        print(f"refused: {' '.join(refused)} (held out or unknown; train on {' '.join(DEVELOPMENT)})", file=sys.stderr)
        return 2
    if not OUT.exists():  # the extractor reads the model: start from one that knows nothing
        OUT.write_text("@docs\t" + "\t".join(f"{c}=1" for c in sorted(CATEGORIES)) + "\n", encoding="utf-8")
    data = examples(args.sets)
    docs, per = counts(data)
    write(docs, per, args.sets, args.out)
    print(f"{len(data)} examples, {len(per)} features -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
