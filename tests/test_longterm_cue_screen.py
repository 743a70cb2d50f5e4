"""A cue's screen (longterm/cues.py): the plain words one of which every match of the cue holds,
searched before the cue itself (docs/performance.md, "Extraction speed"). It may let a text through
that the cue then rejects, never hold one back that the cue matches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_vault.longterm import cues
from agentmem_vault.model.textnorm import fold

CUES = Path(__file__).parent.parent / "templates" / "cues"
NAMES = sorted(p.stem for p in CUES.glob("*.txt"))
FIXTURES = Path(__file__).parent / "fixtures"


def _words(rx: str) -> set[str] | None:
    parts = cues._PART.finditer(rx + ")")
    words = cues._needs(parts)
    return words if next(parts, None) is None else None


@pytest.mark.parametrize(
    "rx, words",
    [
        (r"\bfound the (?:cause|culprit)\b", {"found the "}),
        (r"colou?r|\bdoesn'?t (?:see|work)\b", {"colo", "doesn"}),  # an optional character ends a word
        (r"(?:原因|问题)(?:终于)?(?:找到了|查到了)", {"找到了", "查到了"}),  # the longest group needed
        (r"(?:ab)+c|(?:de)?f|g[hi]*", {"c", "f", "g"}),  # a quantified group or set needs nothing
        (r"[?？]\s*$|[^ab]cd|[a-z]x", {"?", "？", "cd", "x"}),  # a plain set: one of its characters
        (r"(?<!\bi )\b(?:always|never)|x(?=abc)yz|(?i:first)y", {"always", "never", "yz", "y"}),  # asides
        (r"(?P<v>[要用])不(?P=v)|e\.g", {"要", "用", "e"}),
        (r"a|b(?:c|)", {"a", "b"}),
        (r"a{2,}b|[]a]bc|a}b]c", {"b", "bc", "a}b]c"}),
        (r"(?:ab)?|c", None),  # an alternative that needs nothing: every text may match
        (r"\x41bc", None),  # forms this reading does not know: no screen
        (r"(?:\x41)|b", None),
        (r"(?>ab)|c", None),
        (r"a{b", None),
        (r"a)|(b", None),  # a line that closes the group the cue wraps it in
    ],
)
def test_the_words_every_match_needs(rx: str, words: set[str] | None) -> None:
    assert _words(rx) == words


def test_most_cues_have_a_screen() -> None:
    unscreened = [n for n in NAMES if not cues._screen(n).pattern]
    assert len(unscreened) <= 4, unscreened


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_a_text_the_cue_matches_passes_its_screen(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(NAMES))
    text = data.draw(st.from_regex(cues.cue(name)))
    assert cues.cue(name).search(text)
    assert cues._screen(name).search(text), (name, text)


def _strings(obj: object) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else []
    return [s for v in values for s in _strings(v)]


def test_has_answers_as_the_cue_on_the_development_chats() -> None:
    texts = {
        fold(line)
        for folder in ("eval-dev", "eval-kinds")
        for p in sorted((FIXTURES / folder).glob("*.json"))
        for s in _strings(json.loads(p.read_text(encoding="utf-8")))
        for line in [s, *s.splitlines()]
    }
    assert len(texts) > 500
    for name in NAMES:
        for f in texts:
            assert cues.has(name, f) == (cues.cue(name).search(f) is not None), (name, f)
