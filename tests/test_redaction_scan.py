"""Which text redaction scans, and that scanning less finds exactly the same (docs/redaction.md
"Which text is scanned when"): the prefilter searched in the lower-cased text answers as
``re.IGNORECASE`` does, also for the characters whose case is odd; a board row that did not change
since the board was stored redacted is not scanned again, and anything else is; redacting the
result again changes nothing."""

from __future__ import annotations

import re
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem_vault import redaction
from agentmem_vault.model import redact as model
from agentmem_vault.model.redact import PatternSet, builtin_patterns, has_word, redact
from tests.redaction_helpers import SECRETS

WORDS = builtin_patterns().prefilter
ODD = "\u0130\u0131\u017f\u212a"  # İ ı ſ K


def _plain_prefilter(text: str, words: tuple[str, ...] = WORDS) -> bool:
    """The reference: one ``(?i)`` alternation of the words, searched in the text as it is."""
    return re.search("(?i)" + "|".join(map(re.escape, words)), text) is not None


def _unfiltered(text: str) -> str:
    """The plain path: no prefilter at all, every pattern and the high-entropy scan on every text."""
    b, run = builtin_patterns(), model._RUN
    model._RUN = b"a" * 256  # every text then has a run of 32 token characters
    try:
        return redact(text, PatternSet(b.patterns, None, b.multiline))
    finally:
        model._RUN = run


def test_the_odd_case_characters_are_exactly_those_that_need_the_slow_search() -> None:
    """Every other character: no ``(?i)`` match with an ASCII letter, one non-ASCII character when
    lower-cased, and the prefilter's caseless words match only themselves either way."""
    assert model._CASE_ODD == ODD
    caseless = "".join(sorted({c for w in WORDS for c in w if not c.isascii()}))
    letter, word_char = re.compile("(?i)[a-z]"), re.compile(f"(?i)[{caseless}]")
    odd = []
    for x in range(0x80, sys.maxunicode + 1):
        c = chr(x)
        if 0xD800 <= x < 0xE000 or c in ODD:
            continue
        lo = c.lower()
        if letter.fullmatch(c) or len(lo) != 1 or lo.isascii():
            odd.append(c)
        if (word_char.fullmatch(c) is not None or lo in caseless) != (c in caseless):
            odd.append(c)
    assert odd == []
    # and each of the four is odd: the lower-cased search alone would miss or misplace it
    for text, word in (("paſsword", "pass"), ("Tſecret", "secret"), ("toKen", "token"), ("credentİal", "credential")):
        assert _plain_prefilter(text, (word,)) and has_word(text, (word,)), text
    assert has_word("prıvate_key", ("private_key",)) and _plain_prefilter("prıvate_key", ("private_key",))


def test_prefilter_words_are_literal_lower_case_and_ascii_or_caseless() -> None:
    """A word is searched as written: no expression (a ``\\S`` lower-cased would mean ``\\s``)."""
    assert all(w == w.lower() and all(c.isascii() or c.lower() == c.upper() for c in w) for w in WORDS)
    pset = model.parse_patterns("@prefilter \\S a.b\nk x", validate=True)
    assert pset.prefilter == ("\\s", "a.b")
    assert has_word("a \\S b", pset.prefilter) and has_word("A.B", pset.prefilter)
    assert not has_word("axb \t x", pset.prefilter)


_SPELT_ODD = [w.replace(a, b) for w in WORDS for a, b in zip("iisk", ODD, strict=True) if a in w]  # paſs, toKen
_LONG = "Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2X"  # 34 token characters, high entropy
_PIECES = [
    _LONG,
    _LONG[:31],
    _LONG[:20] + "é",
    "=" + _LONG[5:],
    *(t for t, _ in SECRETS.values()),
    *(w.upper() for w in WORDS),
    *WORDS,
    *_SPELT_ODD,
    "ß",
    "ẞ",
    "ǅ",
    "Σς",
]
_TEXT = st.lists(
    st.one_of(st.sampled_from(_PIECES), st.text(alphabet=" |=:\n\r\t\x85\u2028\xa0" + ODD + "aSkK0/_-sk", max_size=12)),
    max_size=14,
).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXT)
def test_the_fast_prefilter_answers_as_ignorecase_and_redacts_as_the_plain_path(text: str) -> None:
    assert has_word(text, WORDS) == _plain_prefilter(text)
    out = redact(text)
    assert out == _unfiltered(text)
    assert redact(out) == out


def test_a_key_whose_tail_is_another_secret_is_redacted_in_one_call() -> None:
    """The key's marker leaves a 33-character high-entropy tail in view: one call redacts both."""
    text = "key " + "sk-" + "Hq2Wm8Zr4Tx6Yv1Bn3Kc5L" + "/Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2X end"
    out = redact(text)
    assert out == "key [REDACTED:openai-key][REDACTED:high-entropy] end"
    assert redact(out) is out


# -- the board: unchanged pieces are not scanned again -----------------------------------------

_LINES = [
    "| 2026-06-01-0930-a | agent | topic | summary | k | active | - | 2026-06-01 09:30 | 2026-06-01 09:30 |",
    "|x|https://u|",
    "|p:w3x@h|",
    "| ends with token |",
    "password =",
    "= hunter2abc9",
    "token",
    "Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2",
    "-----BEGIN RSA PRIVATE KEY-----",
    "MIIEowIBAAKCAQEA7bq9XkT3mQpZ",
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\n| a row inside |\nMIIEowIBAAKCAQEA7bq9XkT3mQpZ\n-----END RSA PRIVATE KEY-----",
    "token\nZx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2",
    "password =\nhunter2abc9 |",
    "password =\n \nhunter2abc9 |",
    "",
    "  ",
    "\x85",
    "| a |\r",
    "# prose | with a pipe",
    *(t.replace("\n", " ") for t, _ in SECRETS.values()),
]
_BOARD = st.lists(st.sampled_from(_LINES), max_size=12)


def _edit(lines: list[str], edits: list[tuple[int, int, str]]) -> list[str]:
    out = list(lines)
    for op, at, line in edits:
        i = at % (len(out) + 1)
        if op == 0:
            out.insert(i, line)
        elif out and op == 1:
            del out[i % len(out)]
        elif out:
            out[i % len(out)] = line
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BOARD, st.lists(st.tuples(st.integers(0, 2), st.integers(0, 20), st.sampled_from(_LINES)), max_size=5))
def test_scanning_only_the_new_pieces_of_a_clean_board_redacts_as_the_whole(
    lines: list[str], edits: list[tuple[int, int, str]]
) -> None:
    clean = redact("\n".join(lines))
    assert redact(clean) == clean
    text = "\n".join(_edit(clean.split("\n"), edits))
    only = redaction.new_pieces(clean, text)
    assert redact(text, only=only) == redact(text) == _unfiltered(text)


def test_a_row_edit_scans_only_that_row() -> None:
    """Pieces are cut after each row; an unchanged row is no new piece, an edited one is."""
    rows = [f"| 2026-06-01-0930-a{i} | agent | topic {i} | s | k | idle | - | t | t |" for i in range(50)]
    clean = "# Board\n\n" + "\n".join(rows) + "\n"
    edited = clean.replace("topic 7 |", "topic seven |")
    assert [edited[a:b] for a, b in redaction.new_pieces(clean, edited)] == [rows[7].replace("topic 7", "topic seven")]
    assert redaction.new_pieces(clean, clean + rows[1] + "\n") == []
    assert redaction.new_pieces(clean, clean.replace(rows[3] + "\n", "")) == []


class _Counting:
    """``has_word`` that counts the characters it is given: every scan asks it once, with the
    whole text or the pieces scanned."""

    def __init__(self) -> None:
        self.chars, self.has_word = 0, model.has_word

    def __call__(self, text: str, *args: object) -> bool:
        self.chars += len(text)
        return self.has_word(text, *args)


def _board(vault, rows: int) -> list[str]:
    from agentmem_vault.board import table as it

    ids = [f"2026-06-01-{i // 60:02d}{i % 60:02d}-agent-{i}" for i in range(rows)]
    lines = [
        it.render_row(it.Row(s, "agent", f"topic {i}", "s", "k", "idle", "-", "t", "t")) for i, s in enumerate(ids)
    ]
    vault.memory.mkdir(parents=True, exist_ok=True)
    vault.index_path.write_text(it.new_index_text() + "\n".join(lines) + "\n", encoding="utf-8")
    return ids


def test_a_board_write_scans_once_then_only_what_changed_and_a_pasted_secret_still_goes(vault, monkeypatch) -> None:
    from agentmem_vault.board.store import BoardWriter

    ids = _board(vault, 400)
    size = len(vault.index_path.read_text(encoding="utf-8"))
    spy = _Counting()
    monkeypatch.setattr(model, "has_word", spy)

    def update(sid: str, topic: str) -> int:
        spy.chars = 0
        with BoardWriter(vault, "test") as w:
            w.update_row(sid, lambda r: r.with_(topic=topic))
        return spy.chars

    assert size < update(ids[0], "first write") < 1.3 * size  # no record yet: the whole board, once
    assert update(ids[1], "second write") < 2_000  # the changed row and the journal line
    key, value = SECRETS["openai-key"]
    text = vault.index_path.read_text(encoding="utf-8")
    vault.index_path.write_text(text.replace("topic 5 |", f"topic 5 {key} |"), encoding="utf-8")  # by hand
    assert update(ids[2], "after a hand edit") > size
    assert value not in vault.index_path.read_text(encoding="utf-8")

    def append_by_hand(n: int, topic: str) -> None:
        with vault.index_path.open("a", encoding="utf-8") as fh:
            fh.write(f"| 2026-06-02-000{n}-by-hand | agent | {topic} | s | k | idle | - | t | t |\n")

    append_by_hand(0, "plain")
    assert update(ids[3], "after a row appended by hand") < 2_000  # the board as stored, and one new piece
    append_by_hand(1, SECRETS["github-token"][0])
    update(ids[4], "after a row with a key appended by hand")
    board = vault.index_path.read_text(encoding="utf-8")
    assert SECRETS["github-token"][1] not in board and "[REDACTED:github-token]" in board


def test_a_changed_exception_in_the_user_config_scans_the_whole_board_again(vault, tmp_path, monkeypatch) -> None:
    from agentmem_vault.board.store import BoardWriter

    cfg = tmp_path / "cfg"
    cfg.mkdir()
    monkeypatch.setenv("AGENTMEM_CONFIG_DIR", str(cfg))
    (cfg / "config.yaml").write_text('redaction_allow: ["AKIA0000EXAMPLE00000"]\n', encoding="utf-8")
    ids = _board(vault, 20)
    spy = _Counting()
    monkeypatch.setattr(model, "has_word", spy)
    for n, topic in enumerate(("AKIA0000EXAMPLE00000", "other")):
        spy.chars = 0
        with BoardWriter(vault, "test") as w:
            w.update_row(ids[n], lambda r, t=topic: r.with_(topic=t))
    assert spy.chars < 1_000  # the same rules: the unchanged rows were not scanned again
    assert "AKIA0000EXAMPLE00000" in vault.index_path.read_text(encoding="utf-8")
    (cfg / "config.yaml").write_text("redaction_allow: []\n", encoding="utf-8")
    with BoardWriter(vault, "test") as w:
        w.update_row(ids[2], lambda r: r.with_(topic="third"))
    board = vault.index_path.read_text(encoding="utf-8")
    assert "AKIA0000EXAMPLE00000" not in board and "[REDACTED:aws-key]" in board


def test_a_board_write_without_the_redaction_source_file_still_works(vault, monkeypatch, tmp_path) -> None:
    """A frozen install has no ``model/redact.py`` to hash into the record: its version stands for it."""
    from agentmem_vault.board.store import BoardWriter

    monkeypatch.setattr(model, "__file__", str(tmp_path / "gone" / "redact.py"))
    ids = _board(vault, 5)
    for n in range(2):
        with BoardWriter(vault, "test") as w:
            w.update_row(ids[n], lambda r, n=n: r.with_(topic=f"topic {n} {SECRETS['github-token'][0]}"))
    board = vault.index_path.read_text(encoding="utf-8")
    assert SECRETS["github-token"][1] not in board and board.count("[REDACTED:github-token]") == 2
