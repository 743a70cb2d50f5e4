"""The learned candidate scorer spike (benchmarks/train_candidate_model.py; docs/extraction.md, "A
learned candidate scorer (tried, not used)"): its training is deterministic, its weights file is
read back or refused with the line at fault, and its harness really changes the offline pipeline's
decisions (else every figure it reports would be the rules' own)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.sources import Turn

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "train_candidate_model.py"


@pytest.fixture(scope="module")
def spike() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_candidate_model", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


RULE = "From now on always use pnpm instead of npm in this repo."
CHAT = [Turn("user", RULE), Turn("assistant", "Noted."), Turn("user", "Thanks, looks good. Can you rerun the tests?")]


def _data(spike: ModuleType) -> list:
    said = [
        (RULE, 1),
        ("以后都用 pathlib 处理路径，不要用 os.path 拼字符串。", 1),
        ("Never edit files under `src/generated/` by hand; run make codegen instead.", 1),
        ("Can you look at the failing test in test_parser.py?", 0),
        ("幫我看一下這段程式碼為什麼會拋出 KeyError。", 0),
        ("Thanks, looks good.", 0),
    ]
    return [(i % 2, [(spike.features(text), y)]) for i, (text, y) in enumerate(said)]


def test_training_is_deterministic_and_learns(spike: ModuleType) -> None:
    a = spike.weights_text(spike.Model(spike.train(_data(spike), 1e-2, 1), 0.1, 2.0))
    b = spike.weights_text(spike.Model(spike.train(_data(spike), 1e-2, 1), 0.1, 2.0))
    assert a == b
    model = spike.parse_weights(a)
    assert (model.veto, model.rescue) == (0.1, 2.0)
    rule = model.probability(spike.features("Always use pnpm, never npm."))
    ask = model.probability(spike.features("Can you look at the failing test?"))
    assert rule > 0.5 > ask


@pytest.mark.parametrize(
    "text, fault",
    [
        ("# veto\t0.1\n# rescue\t2.0\ns:bias\tnot-a-number\n", "line 3"),
        ("# veto\t0.1\n# rescue\t2.0\nw:use 0.3\n", "line 3"),
        ("# rescue\t2.0\ns:bias\t0.1\n", "veto"),
        ("# veto\t1.5\n# rescue\t2.0\ns:bias\t0.1\n", "veto"),
        ("# veto\t0.1\n# rescue\t2.0\nw:use\t0.3\n", "s:bias"),
        ("# veto\t0.1\n# rescue\t2.0\ns:bias\tinf\n", "line 3"),
    ],
)
def test_a_malformed_weights_file_is_refused_with_its_fault(spike: ModuleType, text: str, fault: str) -> None:
    with pytest.raises(ValueError, match=fault):
        spike.parse_weights(text)


def test_the_harness_changes_the_pipelines_decisions(spike: ModuleType) -> None:
    story = [Turn("user", "my compose override had `postgres:16` from another project.")]

    def found(turns: list[Turn]) -> list[str]:
        return [m.content for m in memories_from_turns(turns, ref="t")[0]]

    assert len(found(CHAT)) == 1 and "pnpm" in found(CHAT)[0]
    assert found(story) == []  # the rules keep the rule and leave the story
    with spike.scored(spike.Model({"s:bias": -50.0}, veto=0.5)):
        assert found(CHAT) == []  # a veto that finds everything unlikely drops the rule
    with spike.scored(spike.Model({"s:bias": 50.0}, veto=0.0, rescue=0.5)):
        assert found(story) == ["My compose override had `postgres:16` from another project."]  # rescued
    assert found(story) == [] and "pnpm" in found(CHAT)[0]  # restored on exit


def test_the_weights_file_keeps_the_bias_however_many_features_outweigh_it(spike: ModuleType) -> None:
    weights = {f"w:word{i}": 1.0 + i / 1000 for i in range(spike.MAX_FEATURES + 10)} | {"s:bias": -0.01}
    text = spike.weights_text(spike.Model(weights, 0.0, 0.99))
    model = spike.parse_weights(text)
    assert model.weights["s:bias"] == -0.01 and model.rescue == 0.99
    assert len(model.weights) == spike.MAX_FEATURES + 1  # the strongest features, and the bias
