"""Cut a conversation into chunks of about 20,000 characters with 2,000 overlap, at turn
boundaries (docs/extraction.md), so that each model call sees whole turns."""

from __future__ import annotations

from dataclasses import dataclass

from agentmem_vault.longterm.noise import strip_noise
from agentmem_vault.longterm.sources import Turn

CHUNK_CHARS = 20_000
OVERLAP_CHARS = 2_000


@dataclass(frozen=True)
class Chunk:
    text: str
    first_turn: int  # index of the first turn in the chunk (overlap turns included)
    last_turn: int  # index of the last turn (inclusive)


def render_turn(turn: Turn) -> str:
    label = "User" if turn.role == "user" else "Assistant"
    return f"{label}: {turn.text}"


def render_turns(turns: list[Turn]) -> str:
    return "\n\n".join(render_turn(t) for t in turns)


def _split_long(text: str, size: int) -> list[str]:
    """A single turn larger than a chunk: cut at paragraph, then line, then hard boundaries."""
    parts: list[str] = []
    while len(text) > size:
        cut = max(text.rfind("\n\n", 0, size), text.rfind("\n", 0, size))
        if cut < size // 2:
            cut = size
        parts.append(text[:cut])
        text = text[cut:].lstrip("\n")
    if text:
        parts.append(text)
    return parts


def chunk_turns(turns: list[Turn], size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    pieces: list[tuple[int, str]] = []  # (turn index, rendered text)
    for i, t in enumerate(turns):
        rendered = render_turn(Turn(t.role, strip_noise(t.text)))
        for part in _split_long(rendered, size):
            pieces.append((i, part))
    chunks: list[Chunk] = []
    start = 0
    while start < len(pieces):
        end = start
        total = 0
        while end < len(pieces) and (end == start or total + len(pieces[end][1]) + 2 <= size):
            total += len(pieces[end][1]) + 2
            end += 1
        chunks.append(Chunk("\n\n".join(p[1] for p in pieces[start:end]), pieces[start][0], pieces[end - 1][0]))
        if end >= len(pieces):
            break
        # Step back over whole pieces worth at most `overlap` characters, but always move forward.
        back = end
        kept = 0
        while back - 1 > start and kept + len(pieces[back - 1][1]) <= overlap:
            back -= 1
            kept += len(pieces[back][1]) + 2
        start = back
    return chunks
