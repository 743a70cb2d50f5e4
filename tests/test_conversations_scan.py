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
