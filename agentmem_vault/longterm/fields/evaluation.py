"""Field-level evaluation (docs/extraction.md, Evaluation): for every memory that was found (an
expected memory matched by an extracted one), whether its category, scope and importance band are
the labelled ones, and how many of its keywords are fragments or generic words, how many of its
usage scenarios name nothing of the note, whether its title has a lead-in, a relative time or a
dangling colon. Counted per fixture, summed per language by ``aggregate``."""

from __future__ import annotations

from typing import Any

from agentmem_vault.longterm.fields.checks import bad_keyword, is_template, title_problems
from agentmem_vault.longterm.schema import MemoryObject

BANDS: dict[str, tuple[float, float]] = {"high": (0.9, 1.01), "mid": (0.7, 0.9), "low": (0.5, 0.7)}
COUNTS = ("category", "scope", "importance_band", "keywords", "scenarios", "titles", "title_labels")
# the counts whose first number is a failure (the others count what is right)
FAILURES = ("keywords", "scenarios", "titles")


def band_of(importance: float) -> str:
    return next((name for name, (lo, hi) in BANDS.items() if lo <= importance < hi), "below")


def band_label(label: str) -> str:
    """A band label by name (``high``) or by range (``0.9-1.0``, as some fixtures write it)."""
    text = str(label).strip().lower().replace("–", "-")
    for name, (lo, _) in BANDS.items():
        if text == name or text.startswith(f"{lo}-") or text.startswith(f"{lo:.1f}-"):
            return name
    return text


def scope_of(m: MemoryObject, source_project: str) -> str:
    """project / global / unscoped as the note would be filed, or ``other:<name>`` for a note
    filed under a project that is not the source's."""
    if m.scope == "unscoped" or m.scope == "global" or not m.project:
        return "unscoped" if m.scope == "unscoped" else "global"
    return "project" if m.project == source_project else f"other:{m.project}"


def fixture_counts(pairs: list[tuple[dict, MemoryObject]], source_project: str) -> dict[str, Any]:
    """[right, labelled] for category / scope / importance band / title labels, [bad, total] for
    keywords / scenarios / titles, and the problems found, for the found memories of one fixture."""
    c: dict[str, Any] = {k: [0, 0] for k in COUNTS}
    problems: list[str] = []

    def tally(key: str, ok: bool, what: str) -> None:
        c[key][1] += 1
        c[key][0] += (not ok) if key in FAILURES else ok
        if not ok:
            problems.append(f"{key}: {what}")

    for exp, m in pairs:
        if exp.get("category"):
            tally("category", m.category == exp["category"], f"{m.category} (expected {exp['category']}): {m.title!r}")
        if exp.get("scope"):
            got = scope_of(m, source_project)
            tally("scope", got == exp["scope"], f"{got} (expected {exp['scope']}): {m.title!r}")
        if band := exp.get("importance_band"):
            tally(
                "importance_band",
                band_of(m.importance) == band_label(band),
                f"{m.importance} (expected {band}): {m.title!r}",
            )
        for kw in m.keywords:
            why = bad_keyword(kw, m.content, m.title)
            tally("keywords", not why, f"{kw!r} {why}")
        note_text = " ".join([m.title, m.content, " ".join(m.keywords)])
        for sc in m.usage_scenario:
            tally("scenarios", not is_template(sc, note_text), f"{sc!r} names nothing of the note")
        bad = title_problems(m.title)
        tally("titles", not bad, f"{m.title!r}: {', '.join(bad)}")
        want = [str(s).lower() for s in exp.get("title_contains", [])]
        avoid = [str(s).lower() for s in exp.get("title_not_contains", [])]
        if want or avoid:
            ok = all(w in m.title.lower() for w in want) and not any(a in m.title.lower() for a in avoid)
            tally("title_labels", ok, f"{m.title!r} (expected {want} and none of {avoid})")
    c["problems"] = problems
    return c


def aggregate(per_fixture: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Rates over all fixtures ("all") and per language: accuracy for the labelled counts, the bad
    share for keywords / scenarios / titles; ``None`` where nothing was counted."""
    sums: dict[str, dict[str, list[int]]] = {}
    for lang, counts in per_fixture:
        for key in ("all", lang or "?"):
            s = sums.setdefault(key, {k: [0, 0] for k in COUNTS})
            for k in COUNTS:
                s[k] = [s[k][0] + counts[k][0], s[k][1] + counts[k][1]]
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(sums, key=lambda k: (k != "all", k)):
        row = out[key] = {}
        for k, (n, total) in sums[key].items():
            row[f"{k}_bad_share" if k in FAILURES else f"{k}_accuracy"] = round(n / total, 4) if total else None
            row[f"{k}_counted"] = total
    return out


# the table's column names, in the order of COUNTS
_NAMES = ("category", "scope", "importance", "bad keywords", "template scenarios", "bad titles", "title labels")


def lines(agg: dict[str, dict[str, Any]]) -> list[str]:
    """The field figures as a table, one row per language."""
    cols = [
        (name, f"{k}_bad_share" if k in FAILURES else f"{k}_accuracy") for name, k in zip(_NAMES, COUNTS, strict=True)
    ]
    out = ["fields    " + "  ".join(_NAMES)]
    for key, r in agg.items():
        cells = (("   -" if r[k] is None else f"{100 * r[k]:4.0f}%").rjust(len(name)) for name, k in cols)
        out.append(f"{key:<8}  " + "  ".join(cells))
    return out
