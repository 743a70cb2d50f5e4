"""What the extractor knows about the statement a memory came from (docs/extraction.md).

Detection (``longterm/offline.py`` and the model path) decides *which* memories a conversation
holds and what kind of statement each one is; the field rules (scope, category, importance,
title, ...) decide how the note is filed. This small value is the seam between the two: the
extractor fills it, the field rules read it, neither re-derives what the other knows.

- ``kind``: one of ``KINDS`` (what the user did when they said it).
- ``scope_words``: the words of the statement that set its reach, exactly as written
  ("這個專案", "every project", "for now", "in this file"); ``reach`` is their reading:
  ``project`` / ``all_projects`` / ``file`` / ``temporary``, or "" when the words say nothing.
- ``said_at``: when the statement was made (``YYYY-MM-DDTHH:MM[:SS]``): the transcript turn's
  time where the format records one, the snapshot's Updated At; "" when unknown (the source
  file's time is then the last resort, chosen by the pipeline).
- ``order``: the turn's index inside its source, so that two statements of one source with the
  same time still have an order (a later turn is newer).
- ``reason``: the reason or condition clause kept with the rule ("because …", "不然 …").
- ``alternatives``: for a decision, what was considered and not chosen ("不用 Redis 鎖").
- ``names``: for a reversal or supplement, the words that name the earlier rule it changes
  ("yarn lint" in "之前那條『完成前要跑 yarn lint』作廢").
- ``recorded``: the statement comes from a session snapshot (the agent's record), not a chat.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS: tuple[str, ...] = (
    "explicit",  # "remember …", "記住 …", "from now on …"
    "rule",  # must / should / always / never / use X instead / only X / X not Y; 要 / 必須 / 一律 / 不要 / 改用
    "preference",  # "I prefer …", a dislike ("我真的很受不了 …")
    "correction",  # the user corrects the assistant ("不對，…", "No, …")
    "decision",  # a decision, with its alternatives and reason when given
    "pitfall",  # a symptom with its cause and fix
    "environment",  # an environment / setup fact the user asks to keep
    "convention",  # a convention stated as a plan ("Going to make it a convention: …")
    "reversal",  # takes back or replaces an earlier rule ("X 那條作廢", "we switched from X to Y")
    "supplement",  # adds to an earlier rule ("補充 X 那條：…", "also for X: …")
)
REACHES: tuple[str, ...] = ("", "project", "all_projects", "file", "temporary")


@dataclass(frozen=True)
class Statement:
    kind: str
    scope_words: tuple[str, ...] = ()
    reach: str = ""
    said_at: str = ""
    order: int = 0
    reason: str = ""
    alternatives: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    recorded: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown statement kind {self.kind!r}")
        if self.reach not in REACHES:
            raise ValueError(f"unknown reach {self.reach!r}")
