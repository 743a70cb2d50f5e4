"""The pure models of the files agentmem owns; their word lists and tables are data under
``templates/`` (read here, once per caller)."""

from __future__ import annotations


def template_text(*parts: str) -> str:
    """The text of ``templates/<parts...>``. Read beside the package, not through
    importlib.resources (20 ms of imports on the sessionStart hook's path, docs/performance.md)."""
    from pathlib import Path

    import agentmem_vault.templates as templates  # type: ignore[import-not-found]

    return Path(templates.__file__).parent.joinpath(*parts).read_text(encoding="utf-8")


def template_mapping(name: str) -> dict:
    """``templates/<name>`` as a YAML mapping; UsageError naming the file otherwise."""
    from agentmem_vault.errors import UsageError
    from agentmem_vault.model import yamlload

    data = yamlload.load(template_text(name), UsageError, f"templates/{name}", "reinstall agentmem")
    if not isinstance(data, dict):
        raise UsageError(f"templates/{name}: expected a mapping")
    return data
