"""``conversations.jsonl`` read in one chunked pass (``ops.conversations.PairScan``): the same
answers as reading the file whole, whatever the chunk boundaries cut, and the sessionStart hook's
registration never holds a whole copy of it (docs/performance.md)."""

from __future__ import annotations

import json
import re
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmem_vault import fs
from agentmem_vault.board import summary
from agentmem_vault.board.register import start_chat
from agentmem_vault.ops.conversations import PairScan, conversations_path, record_pair
from agentmem_vault.vault import Vault

CONVS = ["c1", "c2", "對話-3", 'q"uote', "c1x"]
SIDS = ["2026-06-01-0930-cursor-main-agent", "2026-06-01-0930-cursor-main-agent-2", "2026-06-01-0931-cursor-x"]


def _line(conv: str, sid: str, spaced: bool) -> bytes:
    sep = (", ", ": ") if spaced else (",", ":")
    return json.dumps({"conversation_id": conv, "session_id": sid}, ensure_ascii=False, separators=sep).encode()


def _want(data: bytes, conv: str, prefix: str) -> tuple[dict | None, set[str]]:
    """What the whole file says: the last line that parses as a pair of ``conv``, and every ID
    after a ``"session_id"`` key that starts with ``prefix``, damaged lines included (an ID
    named anywhere is never reused)."""
    pair = None
    for raw in data.split(b"\n"):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if obj.get("conversation_id") == conv and isinstance(obj.get("session_id"), str):
            pair = obj
    key = rb'"session_id": ?"(' + re.escape(prefix.encode()) + rb'[^"\\]*)"'
    return pair, {m.decode() for m in re.findall(key, data)}


lines = st.tuples(st.sampled_from(CONVS), st.sampled_from(SIDS), st.booleans(), st.sampled_from(["", "junk"]))


@given(
    st.lists(lines, max_size=12),
    st.integers(1, 40),
    st.sampled_from(CONVS),
    st.sampled_from(["2026-06-01-0930-cursor", "2026-06-01-0931", "2026-07"]),
    st.booleans(),
    st.integers(0, 400),
)
def test_one_chunked_pass_answers_as_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory, drawn: list, chunk: int, conv: str, prefix: str, torn: bool, cut: int
) -> None:
    """Lines cut anywhere by the chunks (a chunk of one byte, a line longer than a chunk), damaged
    lines, a torn last line: the pass finds the latest pair and every ID the whole file holds, and
    its CRCs are those of the file and of its first ``split`` bytes."""
    v = Vault(tmp_path_factory.mktemp("v"))
    data = b"".join(_line(c, s, sp) + (junk.encode() if junk else b"") + b"\n" for c, s, sp, junk in drawn)
    if torn:
        data += b'{"conversation_id": "c1", "session_'
    conversations_path(v).parent.mkdir(parents=True)
    conversations_path(v).write_bytes(data)
    split = min(cut, len(data))
    PairScan.CHUNK = chunk
    try:
        scan = PairScan(v, conversation_id=conv, prefix=prefix).read(split)
    finally:
        PairScan.CHUNK = 1 << 16
    pair, ids = _want(data, conv, prefix)
    assert (scan.pair, scan.ids) == (pair, ids)
    assert (scan.size, scan.crc, scan.head, scan.tail) == (
        len(data),
        zlib.crc32(data),
        zlib.crc32(data[:split]),
        data[split:],
    )
    assert scan.whole_lines == (not split or data[split - 1 : split] == b"\n")
    assert PairScan(v, data, conv, prefix).read(split).pair == pair  # the bytes given instead: the same answers


def test_a_split_past_the_end_has_no_head(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A pairs file shorter than the summary's prefix (truncated, replaced): nothing to compare."""
    v = Vault(tmp_path_factory.mktemp("v"))
    conversations_path(v).parent.mkdir(parents=True)
    conversations_path(v).write_bytes(_line("c1", SIDS[0], True) + b"\n")
    assert PairScan(v).read(10_000).head is None
    assert PairScan(v).read().head == 0 and PairScan(Vault(tmp_path_factory.mktemp("none"))).read().size == 0


def test_registration_never_reads_the_pairs_file_whole(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new chat and a known one on a board with a summary: conversations.jsonl is read in
    chunks only (a whole copy of a big file cost the hook more than searching it), and the answers
    are those of the whole file: the known chat's latest pair, a new ID for a new chat."""
    first = start_chat(vault, "cursor-main-agent", command="hook", conversation_id="conv-a", client="cursor", timeout=5)
    with open(conversations_path(vault), "ab") as fh:
        fh.write(b"".join(_line(f"other-{i}", SIDS[0][:-5] + f"-{i}", True) + b"\n" for i in range(300)))
    summary.load(vault)  # the summary now covers those pairs: what follows reads only what it must
    whole: list[str] = []
    real = fs.read_bytes
    monkeypatch.setattr(fs, "read_bytes", lambda p, **kw: (whole.append(p.name), real(p, **kw))[1])
    monkeypatch.setattr(PairScan, "CHUNK", 4096)
    again = start_chat(vault, "cursor-main-agent", command="hook", conversation_id="conv-a", client="cursor", timeout=5)
    assert again[:2] == (first[0], True)
    new = start_chat(vault, "cursor-main-agent", command="hook", conversation_id="conv-b", client="cursor", timeout=5)
    assert new[1] is False and new[0] != first[0]
    assert "conversations.jsonl" not in whole


def test_an_id_named_only_by_a_pair_across_chunks_is_never_issued(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ID of a deleted row, named only by a pair whose line the chunks cut: a new chat of that
    minute never gets it (docs/reliability.md: IDs are never reused)."""
    monkeypatch.setenv("AGENTMEM_NOW", "2026-06-01T09:30")
    start_chat(vault, "cursor-main-agent", command="hook", conversation_id="warm", client="cursor", timeout=5)
    for i in range(40):
        record_pair(vault, f"pad-{i}", f"2026-05-01-0000-cursor-main-agent-{i}", agent="cursor")
    record_pair(vault, "gone", "2026-06-01-0930-cursor-main-agent-2", agent="cursor")
    vault.issued_ids_path.write_text("", encoding="utf-8")  # the ledger lost: the pairs still name it
    monkeypatch.setattr(PairScan, "CHUNK", 97)
    got = start_chat(vault, "cursor-main-agent", command="hook", conversation_id="new", client="cursor", timeout=5)
    assert got[0] not in ("2026-06-01-0930-cursor-main-agent", "2026-06-01-0930-cursor-main-agent-2")


NOW_ID = "2026-06-01-0930-cursor-main-agent"


def _chat(vault: Vault, conv: str) -> str:
    return start_chat(vault, "cursor-main-agent", command="hook", conversation_id=conv, client="cursor", timeout=5)[0]


def test_this_minutes_ids_come_from_the_summary_and_the_tail_only(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pairs the summary read (their CRC checked) are not searched again for this minute's IDs:
    the summary's ``pair_stamp`` names them. An ID named only there, or only in a pair appended
    since, is never issued, the ledger lost (docs/reliability.md)."""
    import agentmem_vault.ops.conversations as conv

    monkeypatch.setenv("AGENTMEM_NOW", "2026-06-01T09:30")
    _chat(vault, "warm")
    for i in range(40):
        record_pair(vault, f"pad-{i}", f"2026-05-01-0000-cursor-main-agent-{i}", agent="cursor")
    record_pair(vault, "gone", NOW_ID + "-2", agent="cursor")  # its row deleted long ago
    summary.load(vault)  # rewritten: 41 pairs appended
    assert json.loads(summary.cache_path(vault).read_text(encoding="utf-8"))["data"]["pair_stamp"][0] == NOW_ID[:15]
    record_pair(vault, "gone-too", NOW_ID + "-3", agent="cursor")  # after the summary: the tail
    vault.issued_ids_path.write_text("", encoding="utf-8")
    searched: list[int] = []
    real = conv._ids_with_prefix
    monkeypatch.setattr(conv, "_ids_with_prefix", lambda data, *a: (searched.append(len(data)), real(data, *a))[1])
    got = {_chat(vault, f"new-{i}") for i in range(3)}
    assert not got & {NOW_ID, NOW_ID + "-2", NOW_ID + "-3"} and len(got) == 3
    assert max(searched) < 2000, searched  # the tail, never the whole file


@pytest.mark.parametrize("damage", ["edited", "truncated", "replaced", "stamp-junk", "stamp-forged"])
def test_a_changed_pairs_file_or_a_bad_stamp_falls_back_to_the_whole_file(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """The pairs the summary read changed since (a hand edit of the same size, cut short, another
    machine's copy synced in), or a summary whose ``pair_stamp`` is junk: this minute's IDs come
    from the whole file, the ledger lost. A stamp forged to name none of them (its CRC right)
    is no authority either: the ledger still holds them."""
    monkeypatch.setenv("AGENTMEM_NOW", "2026-06-01T09:30")
    _chat(vault, "warm")
    path = conversations_path(vault)
    for i in range(20):
        record_pair(vault, f"pad-{i}", f"2026-05-01-0000-cursor-main-agent-{i}", agent="cursor")
    if damage.startswith("stamp"):
        record_pair(vault, "gone", NOW_ID + "-4", agent="cursor")
    summary.load(vault)
    data = path.read_bytes()
    ledger = vault.issued_ids_path.read_text(encoding="utf-8")
    if damage == "edited":  # one old pair's ID becomes this minute's, same size
        path.write_bytes(data.replace(b'2026-05-01-0000-cursor-main-agent-1"', NOW_ID.encode() + b'-4"', 1))
    elif damage in ("truncated", "replaced"):
        keep = data[: len(data) // 2] if damage == "truncated" else b""
        path.write_bytes(keep + _line("synced", NOW_ID + "-4", True) + b"\n")
    else:
        cache = json.loads(summary.cache_path(vault).read_text(encoding="utf-8"))
        assert cache["data"]["pair_stamp"] == [NOW_ID[:15], [NOW_ID, NOW_ID + "-4"]]
        cache["data"]["pair_stamp"] = "junk" if damage == "stamp-junk" else [NOW_ID[:15], []]
        summary.cache_path(vault).write_text(json.dumps(cache), encoding="utf-8")
    vault.issued_ids_path.write_text(ledger + NOW_ID + "-4\n" if damage == "stamp-forged" else "", encoding="utf-8")
    got = {_chat(vault, f"new-{i}") for i in range(5)}
    assert NOW_ID + "-4" not in got and NOW_ID not in got and len(got) == 5
