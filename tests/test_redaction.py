"""Redaction before storage, pure part (docs/redaction.md): every kind of secret becomes a marker,
nothing else changes, twice is once, and the user's patterns and exceptions apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmem_vault.model.redact import MARKER_RE, builtin_patterns, has_word, parse_patterns, redact
from tests.redaction_helpers import SECRETS

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_every_kind_of_secret_becomes_a_marker(name: str) -> None:
    text, value = SECRETS[name]
    out = redact(f"before {text} after")
    assert value not in out, out
    assert MARKER_RE.search(out) and out.startswith("before ") and out.endswith(" after")
    assert redact(out) is out  # idempotent: a marker is never a secret


def test_the_name_of_an_assignment_stays_readable() -> None:
    assert redact("db password=Tr0ub4dor&3x") == "db password=[REDACTED:password]"
    assert redact("postgres://app:pw12345@db/x") == "postgres://app:[REDACTED:connection-password]@db/x"
    assert redact("AKIA" + "QYLPMN5HZ3K7XW2V") == "[REDACTED:aws-key]"


@pytest.mark.parametrize(
    "text",
    [
        "Set token = <your-token> or $TOKEN; api_key=${KEY}; ANTHROPIC_API_KEY=sk-ant-...",
        "secret = tmp_path / 'passwd'; the password: is in the vault",
        "commit 3f9c2a1b4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90, uuid 123e4567-e89b-12d3-a456-426614174000",
        "agentmem_vault/model/snapshot_merge/VeryLongModuleName2.py and NODE_OPTIONS=--max-old-space-size=4096",
        "Decisions: token bucket rate limiter, password reset flow, key rotation every 90 days",
    ],
)
def test_text_without_a_secret_is_returned_unchanged(text: str) -> None:
    assert redact(text) is text


def _texts() -> list[Path]:
    out = []
    for base in (ROOT / "tests" / "fixtures", ROOT / "sample_vault"):
        out += [p for p in sorted(base.rglob("*")) if p.is_file()]
    return out


# Fixtures whose chats hold a real credential on purpose: redacting it is right, and only it may change.
TRUE_SECRETS = {
    "v4-zhcn-labelforge-env-reversal.json": ["[REDACTED:connection-password]"],
    **{f"g-probe10.{lang}.json": ["[REDACTED:secret]"] for lang in ("en", "zh-CN", "zh-TW")},
}


def test_no_existing_fixture_or_sample_vault_file_changes() -> None:
    checked = 0
    for p in _texts():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        redacted = redact(text)
        if p.name in TRUE_SECRETS:
            assert MARKER_RE.findall(redacted) == TRUE_SECRETS[p.name], p
        else:
            assert redacted is text, p
        checked += 1
    assert checked > 100


def test_the_builtin_patterns_are_valid_and_the_prefilter_covers_them() -> None:
    path = ROOT / "templates" / "redaction" / "patterns.txt"
    checked = parse_patterns(path.read_text(encoding="utf-8"), validate=True)
    assert checked == builtin_patterns() and checked.prefilter
    for name, (text, _) in SECRETS.items():
        if name != "high-entropy":
            assert has_word(text, checked.prefilter), name  # else the patterns would never run on it


def test_the_prefilter_lets_the_boards_own_field_names_through() -> None:
    """A new chat's journal line names every field of its row (``keywords`` among them): the
    prefilter must not send that through all the patterns on every chat (docs/redaction.md)."""
    import json

    from agentmem_vault.board.rules import idle_row

    row = idle_row("2026-06-01-0930-cursor-main-agent", "cursor-main-agent", "2026-06-01 09:30")
    line = json.dumps({"action": "append_row", "before": None, "after": row.to_dict()}, ensure_ascii=False)
    assert not has_word(line, builtin_patterns().prefilter), line


def test_user_patterns_and_exceptions(monkeypatch, tmp_path: Path) -> None:
    from agentmem_vault.redaction import redact_text

    cfg = Path(tmp_path / "cfg")
    cfg.mkdir()
    monkeypatch.setenv("AGENTMEM_CONFIG_DIR", str(cfg))
    (cfg / "config.yaml").write_text(
        'redaction_patterns: ["acme-token ACME-[0-9]{6}"]\nredaction_allow: ["AKIA0000EXAMPLE00000"]\n',
        encoding="utf-8",
    )
    assert redact_text("id ACME-123456 and AKIA0000EXAMPLE00000") == "id [REDACTED:acme-token] and AKIA0000EXAMPLE00000"
    (cfg / "config.yaml").write_text('redaction_patterns: ["Bad-Kind (unclosed"]\n', encoding="utf-8")
    from agentmem_vault.errors import ConfigError

    with pytest.raises(ConfigError, match="redaction_patterns"):
        redact_text("x")
