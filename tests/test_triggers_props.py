"""Property tests of the pure phrase router (model/triggers.py): any text routes to a known command
or is refused with a usage error; a known phrase routes the same however it is spaced or cased,
and the Session IDs around it become arguments in order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem_vault.errors import UsageError
from agentmem_vault.model.triggers import COMMANDS, load_phrases, route

PHRASES = load_phrases()
IDS = st.builds(
    lambda d, h, a: f"2026-06-{d:02d}-{h:02d}00-{a}",
    st.integers(1, 28),
    st.integers(0, 23),
    st.sampled_from(["cursor-main-agent", "claude-main-agent", "x"]),
)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_routes_to_a_command_or_is_a_usage_error(text: str) -> None:
    try:
        r = route(text)
    except UsageError as exc:
        assert exc.exit_code == 2
        return
    assert r.command in COMMANDS


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(PHRASES), st.sampled_from(["", " ", "  ", "\t"]), st.booleans(), st.lists(IDS, max_size=2))
def test_a_phrase_routes_alike_spaced_cased_and_with_ids(phrase, pad: str, upper: bool, ids: list[str]) -> None:
    expected = route(phrase.text)
    text = phrase.text.upper() if upper else phrase.text
    text = pad + pad.join(text.split(" ")) + pad  # more or less space between the words
    r = route(" ".join([text, *ids]))
    assert r.command == expected.command
    assert list(r.ids) == list(dict.fromkeys(ids))
