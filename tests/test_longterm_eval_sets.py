"""The evaluation's fixture formats: a file holding a list of fixtures, labels per kind of
statement, and curation fixtures whose chats are curated in order (reversal, supplement)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_vault.longterm.evaluate import BUILTIN_SETS, builtin_set, evaluate, load_fixtures, score_fixture
from agentmem_vault.longterm.schema import CATEGORIES, MemoryObject
from agentmem_vault.longterm.statement import KINDS
from conftest import run_cli


def _write(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def test_a_file_may_hold_a_list_of_fixtures(tmp_path: Path) -> None:
    one = {"conversation": {"turns": [{"role": "user", "text": "記住：一律用 pnpm。"}]}, "expected": []}
    _write(tmp_path / "a.json", [dict(one, id="x"), dict(one, id="y")])
    _write(tmp_path / "b.json", dict(one, id="z"))
    assert [f.id for f in load_fixtures(tmp_path)] == ["x", "y", "z"]


def test_breakdown_by_kind_and_class() -> None:
    fx = load_fixtures(builtin_set("kinds"))[0]
    got = [MemoryObject("create", "t", "nothing useful", "user_behavior", signal="preference")]
    r = score_fixture(fx, got)
    kinds = {e["kind"] for e in fx.expected}
    assert set(r.by_kind) == kinds | {"preference"} and r.cls


def test_every_builtin_set_loads_with_labelled_kinds() -> None:
    for name in BUILTIN_SETS:
        fixtures = load_fixtures(builtin_set(name))
        assert fixtures, name
        if name in ("kinds", "curation", "unseen2", "unseen3", "unseen4", "unseen5", "unseen6", "unseen7"):
            for f in fixtures:
                assert f.cls, f.id
                for e in f.expected:
                    assert e["kind"] in KINDS, (f.id, e)


@pytest.mark.parametrize(
    ("name", "per_language", "noise"),
    [("unseen3", 8, 2), ("unseen4", 10, 2), ("unseen5", 10, 2), ("unseen6", 10, 2), ("unseen7", 12, 2)],
)
def test_held_out_sets_label_every_memory_and_balance_their_languages(name: str, per_language: int, noise: int) -> None:
    """The held-out sets of docs/extraction.md: every memory fully labelled, the same number of
    chats per language with noise chats in each, the ids are the file stems, and every
    ``must_contain`` token is in the user's own words (a token no user said cannot be fair)."""
    folder = builtin_set(name)
    fixtures = load_fixtures(folder)
    assert sorted(f.id for f in fixtures) == sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))
    for lang in ("en", "zh-TW", "zh-CN"):
        mine = [f for f in fixtures if f.language == lang]
        assert len(mine) == per_language and sum(1 for f in mine if not f.expected and f.cls == "noise") >= noise, lang
    for f in fixtures:
        assert f.project and f.cls and (f.cls == "noise") == (not f.expected), f.id
        said = " ".join(t.text for t in f.turns if t.role == "user").lower()
        for e in f.expected:
            assert 2 <= len(e["must_contain"]) <= 3 and e["kind"] in KINDS and e["category"] in CATEGORIES, (f.id, e)
            assert e["scope"] in ("project", "global") and e["importance_band"] in ("0.9-1.0", "0.7-0.9", "0.5-0.7")
            assert all(str(t).lower() in said for t in e["must_contain"]), (f.id, e)
    assert sum(1 for f in fixtures for e in f.expected if e["scope"] == "global") >= 3


def test_eval_offers_every_builtin_set_without_importing_the_evaluation(monkeypatch) -> None:
    """``--set`` takes the names of BUILTIN_SETS (and "all"), read when needed: importing the CLI
    does not import the evaluation (real subprocess), and a set added to BUILTIN_SETS is offered."""
    probe = "import sys, agentmem_vault.cli.longterm_cmds; print('agentmem_vault.longterm.evaluate' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
    monkeypatch.setitem(BUILTIN_SETS, "probe-set", "eval-dev")
    help_text = run_cli("eval", "--help").stdout
    assert all(n in help_text for n in [*BUILTIN_SETS, "all"]), help_text
    bad = run_cli("eval", "--set", "no-such-set")
    assert bad.returncode == 2 and "probe-set" in bad.stderr and "unseen4" in bad.stderr, bad.stderr


def test_curation_fixture_counts_a_contradicting_note_as_wrong(tmp_path: Path) -> None:
    chat = lambda at, text: {"at": at, "turns": [{"role": "user", "text": text}]}  # noqa: E731
    _write(
        tmp_path / "c.json",
        {
            "id": "rev",
            "class": "reversal",
            "chats": [
                chat("2026-11-01T10:00", "From now on always run `yarn lint` before you finish."),
                chat("2026-11-02T10:00", "From now on always run `npm run verify` before you finish."),
            ],
            "expected": [{"must_contain": ["npm run verify"], "kind": "reversal"}],
            "retired": [{"must_contain": ["yarn lint"], "must_not_contain": ["npm run verify"]}],
        },
    )
    (fx,) = load_fixtures(tmp_path)
    assert len(fx.chats) == 2 and fx.chats[1][0] == "2026-11-02T10:00"
    both = [
        MemoryObject("create", "a", "Always run `yarn lint` before you finish.", "user_behavior"),
        MemoryObject("create", "b", "Always run `npm run verify` before you finish.", "user_behavior"),
    ]
    assert (score_fixture(fx, both).tp, score_fixture(fx, both).fp) == (1, 1)
    merged = [MemoryObject("create", "b", "Run `npm run verify` (not yarn lint any more).", "user_behavior")]
    assert score_fixture(fx, merged).fp == 0
    report = evaluate([fx])  # the chats are extracted and curated in order, offline
    assert report.results[0].expected == 1


def test_the_training_scripts_never_train_on_a_held_out_set(tmp_path: Path) -> None:
    """The held-out sets are built in (so ``--sets`` names a real set), yet scripts/train_categories.py
    refuses each one by name and writes nothing, and benchmarks/train_candidate_model.py's training
    sets hold none of them (real subprocesses: the scripts as a user runs them)."""
    root = Path(__file__).resolve().parent.parent
    held_out = ("unseen6", "unseen7")  # unseen5 is a development set now
    assert set(held_out) <= set(BUILTIN_SETS)
    out = tmp_path / "m.tsv"
    script = root / "scripts" / "train_categories.py"
    for how in ("--sets", "--held-out"):  # training on them, or scoring them left out of training
        p = subprocess.run(
            [sys.executable, str(script), how, "tuned", *held_out, "--out", str(out)],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
        )
        refused = p.stderr.split("(")[0]
        assert p.returncode == 2 and all(n in refused for n in held_out) and "tuned" not in refused, (how, p.stderr)
        assert not out.exists()
    probe = (
        "import importlib.util, sys; spec = importlib.util.spec_from_file_location('m', sys.argv[1]); "
        "m = importlib.util.module_from_spec(spec); sys.modules['m'] = m; spec.loader.exec_module(m); "
        "print(' '.join(m.TRAIN_SETS))"
    )
    bench = root / "benchmarks" / "train_candidate_model.py"
    got = subprocess.run([sys.executable, "-c", probe, str(bench)], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and got.stdout.split(), got.stderr
    assert not set(held_out) & set(got.stdout.split())
