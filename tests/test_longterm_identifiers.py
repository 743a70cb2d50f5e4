"""Facts that differ only by an identifier (a number, a code token, a name) are different
knowledge: de-duplication keeps both and curation does not fold one into the other's note."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem_vault.longterm.curate import plan_curation
from agentmem_vault.longterm.dedupe import dedupe_batch, identifiers
from agentmem_vault.model.notes import Note
from agentmem_vault.longterm.schema import MemoryObject

from longterm_helpers import memory_object


def m(title: str, content: str, **kw) -> MemoryObject:
    return memory_object(title, content, **{"category": "project_environment_configuration", **kw})


@pytest.mark.parametrize(
    "a,b",
    [
        (
            m("Log location", "service-3 logs go to /var/log/app/current.log and rotate daily at midnight."),
            m("Log location", "service-7 logs go to /var/log/app/current.log and rotate daily at midnight."),
        ),
        (
            m("Logs of service-3", "service-3 logs go to /var/log/app/current.log and rotate daily at midnight."),
            m("Logs of service-7", "service-7 logs go to /var/log/app/current.log and rotate daily at midnight."),
        ),
        (
            m("服務日誌", "服務3的日誌寫到 /var/log/app/current.log，每天午夜輪替。"),
            m("服務日誌", "服務7的日誌寫到 /var/log/app/current.log，每天午夜輪替。"),
        ),
        (
            m("Billing owner", "The billing service is owned by Alice; page her for billing incidents at night."),
            m("Billing owner", "The billing service is owned by Bob; page her for billing incidents at night."),
        ),
    ],
)
def test_dedupe_keeps_facts_that_differ_only_by_an_identifier(a: MemoryObject, b: MemoryObject) -> None:
    kept, dropped = dedupe_batch([a, b])
    assert [k.content for k in kept] == [a.content, b.content] and dropped == []


def test_dedupe_still_merges_paraphrases_and_supersets() -> None:
    short = m("pnpm", "Use pnpm 9 instead of npm in this repo.", sources=["a"])
    long = m(
        "Use pnpm", "Use pnpm 9 instead of npm in this repo; CI runs pnpm install --frozen-lockfile.", sources=["b"]
    )
    kept, dropped = dedupe_batch([short, long])
    assert [k.title for k in kept] == ["Use pnpm"] and len(dropped) == 1
    same = m("Logs", "Service-3 logs go to /var/log/app/current.log and rotate daily at midnight.")
    again = m("Logs", "service-3 logs go to /var/log/app/current.log and rotate daily at midnight!")
    assert len(dedupe_batch([same, again])[0]) == 1  # case and a sentence-initial capital are no names


def test_identifiers_are_digits_code_tokens_and_mid_sentence_names() -> None:
    ids = identifiers("Use pnpm 9 with sms.verify and billing_events; ask Alice. Then run it.")
    assert ids == {"9", "sms.verify", "billing_events", "alice"}
    assert identifiers("服務3的日誌") == {"3"}


def test_curation_does_not_fold_a_different_identifier_into_an_existing_note(tmp_path: Path) -> None:
    old = "service-3 logs go to /var/log/app/current.log and rotate daily at midnight."
    ex = Note(id="lt-aaaaaa", title="Logs of service-3", content=old, path=tmp_path / "Logs of service-3.md")
    new = m("Logs of service-7", "service-7 logs go to /var/log/app/current.log and rotate daily at midnight.")
    acts = plan_curation([new], [ex], now="2026-11-29T16:00", folder=tmp_path)
    assert [a.kind for a in acts] == ["create"] and acts[0].note.content == new.content
    # Same title, other identifier: the note is updated (old text kept in its History), not ignored.
    same_title = m("Logs of service-3", "service-7 logs go to /var/log/app/current.log and rotate daily at midnight.")
    acts = plan_curation([same_title], [ex], now="2026-11-29T16:00", folder=tmp_path)
    assert [a.kind for a in acts] == ["update"] and acts[0].note.history[0].text == old
