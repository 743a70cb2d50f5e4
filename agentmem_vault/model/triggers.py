"""Trigger phrases: ``agentmem say "<text>"`` → the command it names. Pure: text in, Route out;
running the routed command is the CLI's job (cli/say_dispatch.py). The table is data
(``templates/triggers.yaml``); the matching rules, and why ``解除引用 memory`` is release and
``整理這個 session`` never ``整理 memory``, are docs/triggers.md.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from agentmem_vault.errors import UsageError
from agentmem_vault.model import template_mapping
from agentmem_vault.model.ids import find_ids
from agentmem_vault.model.negation import negated
from agentmem_vault.model.textnorm import fold

COMMANDS = ("register", "update", "continue", "release", "organize", "archive")
COMMAND_LINES = {
    "register": "agentmem register --manual",
    "update": "agentmem update ID",
    "continue": "agentmem continue SOURCE",
    "release": "agentmem release SOURCE --session ID",
    "organize": "agentmem organize",
    "archive": "agentmem archive ID",
}


class Phrase(NamedTuple):
    command: str
    text: str
    form: str  # "traditional", "simplified" or "english"
    key: str
    variant: bool = False  # an everyday form; the procedure's own phrases win over it
    entry: int = 0  # which table entry (for listing an entry's forms together)


class Route(NamedTuple):
    command: str
    ids: tuple[str, ...]
    phrase: str


def match_key(text: str) -> str:
    """The form phrases are compared in: folded, every whitespace removed."""
    return "".join(fold(text).split())


def phrases_from_table(table: dict) -> list[Phrase]:
    out: list[Phrase] = []
    for command, entries in table.items():
        if command not in COMMANDS:
            raise UsageError(f"templates/triggers.yaml: unknown command {command!r}")
        for n, entry in enumerate(entries or []):
            forms = [(form, str(entry[form])) for form in ("traditional", "simplified") if entry.get(form)]
            eng = entry.get("english") or []
            forms += [("english", str(e)) for e in ([eng] if isinstance(eng, str) else eng)]
            variant = bool(entry.get("variant"))
            for form, text in forms:
                out.append(Phrase(command, text, form, match_key(text), variant, n))
    seen: dict[str, Phrase] = {}
    for p in out:
        other = seen.setdefault(p.key, p)
        if other.command != p.command:
            raise UsageError(
                f"templates/triggers.yaml: {p.text!r} is listed under both {other.command} and {p.command}"
            )
    return out


@lru_cache(maxsize=1)
def load_phrases() -> tuple[Phrase, ...]:
    return tuple(phrases_from_table(template_mapping("triggers.yaml")))


def phrase_groups() -> list[tuple[str, list[list[str]]]]:
    """``[(command line, [[one entry's forms], ...]), ...]`` in table order, for ``say --help``."""
    groups = []
    for cmd in COMMANDS:
        entries: dict[int, list[str]] = {}
        for p in load_phrases():
            if p.command == cmd and p.text not in entries.setdefault(p.entry, []):
                entries[p.entry].append(p.text)
        groups.append((COMMAND_LINES[cmd], [entries[n] for n in sorted(entries)]))
    return groups


def route(text: str, phrases: tuple[Phrase, ...] | None = None) -> Route:
    """Find the command a trigger text means (pure apart from loading the table once).

    Raises UsageError (exit 2) with the phrase list for unknown text, and for text that names two
    different commands."""
    phrases = phrases if phrases is not None else load_phrases()
    folded = fold(text)
    ids = find_ids(folded)
    for sid in ids:
        folded = folded.replace(sid, " ")
    # Phrases are matched without whitespace; where[i] is the key's character i in ``folded``.
    where = [i for i, c in enumerate(folded) if not c.isspace()]
    key = "".join(folded[i] for i in where)
    hits: list[tuple[int, int, Phrase]] = []
    for p in phrases:
        if not p.key:
            continue
        start = key.find(p.key)
        while start != -1:
            hits.append((start, start + len(p.key), p))
            start = key.find(p.key, start + 1)
    if not hits:
        raise UsageError(
            f"unknown trigger phrase {text!r}; the phrases are listed by `agentmem say --help`", code="unknown_phrase"
        )
    # Longest first, then procedure phrases before variants; a match overlapping a kept match is
    # part of that phrase, not its own.
    hits.sort(key=lambda h: (-(h[1] - h[0]), h[2].variant, h[0]))
    kept: list[tuple[int, int, Phrase]] = []
    for h in hits:
        if all(h[1] <= k[0] or h[0] >= k[1] for k in kept):
            kept.append(h)
    commands = list(dict.fromkeys(p.command for _, _, p in kept))
    found = ", ".join(f"{p.text!r} ({p.command})" for _, _, p in kept)
    for start, end, p in kept:
        neg = negated(folded, where[start], where[end - 1] + 1)
        if neg is not None:
            how = "asks about" if neg.kind == "question" else "negates"
            raise UsageError(
                f"{text!r} {how} the trigger phrase {p.text!r} ({p.command}) with {neg.word!r}; nothing was run. "
                f"Understood: {found}. To run it, say the phrase on its own",
                code="negated_phrase",
                details={"phrases": [{"phrase": q.text, "command": q.command} for _, _, q in kept], "word": neg.word},
            )
    if len(commands) > 1:
        raise UsageError(
            f"{text!r} names more than one command: {found}; say one thing at a time", code="ambiguous_phrase"
        )
    first = min(kept, key=lambda h: h[0])
    return Route(commands[0], tuple(ids), _as_typed(text, ids, key, first[0], first[1]) or first[2].text)


def _as_typed(text: str, ids: list[str], key: str, start: int, end: int) -> str | None:
    """The words of ``text`` that matched ``key[start:end]``, as the user typed them (``整理记忆``
    stays Simplified, ``Organize Memory`` keeps its case): each character is folded on its own and
    remembers where it came from. None when that per-character key is not the whole text's key
    (a sequence NFKC only folds as a whole); the caller then names the table's phrase."""
    chars = [(f, i) for i, ch in enumerate(text) for f in fold(ch) or " "]
    folded = "".join(f for f, _ in chars)
    drop: set[int] = set()
    for sid in ids:
        at = folded.find(sid)
        while at != -1:
            drop.update(range(at, at + len(sid)))
            at = folded.find(sid, at + len(sid))
    kept = [(f, i) for n, (f, i) in enumerate(chars) if n not in drop and not f.isspace()]
    if "".join(f for f, _ in kept) != key or not 0 <= start < end <= len(kept):
        return None
    return text[kept[start][1] : kept[end - 1][1] + 1].strip()
