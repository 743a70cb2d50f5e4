"""Optional semantic signal behind a small interface; off by default.

The offline embedding models on PyPI are English-only, so Chinese recall must never depend on one:
the keyword path is complete on its own and a backend only re-scores the keyword candidates.
Choose one with ``recall_semantic: ngram`` in memory/.agentmem/config.yaml or the environment variable
``AGENTMEM_RECALL_SEMANTIC`` (``none`` | ``ngram``). A real embedding backend implements
``SemanticBackend`` and registers itself in ``BACKENDS``; nothing here downloads anything.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from typing import Callable, Protocol, Sequence

from agentmem_vault.vault import Vault
from agentmem_vault.model.textnorm import fold


class SemanticBackend(Protocol):
    name: str

    def similarity(self, query: str, docs: Sequence[tuple[int, str]]) -> dict[int, float]:
        """Similarity in [0, 1] of ``query`` to each ``(key, text)``; keys missing count as 0."""
        ...


class CharNgramBackend:
    """Cosine of character-trigram counts of the folded texts: language-agnostic, model-free.

    Catches shared stems and partial overlaps the token match misses ("rebasing" ~ "rebase"); it is
    a stand-in that proves the interface, not an understanding of meaning.
    """

    name = "ngram"

    def __init__(self, n: int = 3):
        self.n = n

    def _vec(self, text: str) -> Counter:
        t = fold(text)
        return Counter(t[i : i + self.n] for i in range(max(0, len(t) - self.n + 1)))

    def similarity(self, query: str, docs: Sequence[tuple[int, str]]) -> dict[int, float]:
        q = self._vec(query)
        qn = math.sqrt(sum(v * v for v in q.values())) or 1.0
        out: dict[int, float] = {}
        for key, text in docs:
            d = self._vec(text)
            dot = sum(c * d.get(g, 0) for g, c in q.items())
            dn = math.sqrt(sum(v * v for v in d.values())) or 1.0
            out[key] = dot / (qn * dn)
        return out


BACKENDS: dict[str, Callable[[], SemanticBackend]] = {"ngram": CharNgramBackend}


def get_backend(name: str | None) -> SemanticBackend | None:
    """``None``/``"none"``/``"off"`` -> no semantic signal (the default)."""
    key = (name or "none").strip().lower()
    if key in ("", "none", "off", "false", "0"):
        return None
    factory = BACKENDS.get(key)
    if factory is None:
        from agentmem_vault.errors import ConfigError

        raise ConfigError(f"unknown recall_semantic backend {name!r}; choose one of: none, {', '.join(BACKENDS)}")
    return factory()


def configured_backend(vault: Vault) -> SemanticBackend | None:
    env = os.environ.get("AGENTMEM_RECALL_SEMANTIC")
    if env is not None:
        return get_backend(env)
    if not vault.config_path.exists():  # skip the config reader (and PyYAML) in the common case
        return None
    from agentmem_vault.config import vault_config

    return get_backend(vault_config(vault).get("recall_semantic"))
