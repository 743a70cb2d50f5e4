"""Standard-library imports made cheaper for the sessionStart hook (docs/performance.md, "Imports").

The hook's whole budget is a few milliseconds over interpreter start-up, and two standard modules
cost a large share of it for parts the hook never uses:

- ``datetime``: ``datetime.py`` first compiles its pure-Python implementation (about 2,600 lines)
  and then replaces it with the C types of ``_datetime``. Importing ``_datetime`` gives the very
  same classes (``_datetime.datetime is datetime.datetime``) for a third of the cost.
- ``pathlib`` imports ``urllib.parse`` (which imports ``ipaddress``) only for ``Path.as_uri``.
  ``import_pathlib`` lends it a stand-in whose ``quote_from_bytes`` imports the real module when
  first called, and takes the stand-in away again at once: any later ``import urllib.parse`` gets
  the real module.

Modules on the hook path import ``datetime`` from here; ``entry.py`` calls ``import_pathlib``
before the hook's imports. Both fall back to the plain imports on any other Python.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported at run time (the hook path)
if TYPE_CHECKING:
    from datetime import datetime, timedelta, timezone
else:
    try:
        from _datetime import datetime, timedelta, timezone
    except ImportError:  # not CPython
        from datetime import datetime, timedelta, timezone


class LazyRegex:
    """A regular expression compiled on its first use. Patterns that the sessionStart hook does not
    use are declared with it, so that the hook does not pay for compiling them (about 0.1 ms
    each, docs/performance.md). Attribute access (``.match``, ``.finditer``...) goes to the compiled
    pattern; each method is looked up once and then kept on the instance, so a hot loop pays a
    plain attribute lookup, as with a compiled pattern."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._args: tuple = (pattern, flags)
        self._compiled: object = None

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        if name.startswith("__"):  # copy/pickle probes: not the pattern's business
            raise AttributeError(name)
        compiled = self._compiled
        if compiled is None:
            import re

            compiled = self._compiled = re.compile(*self._args)  # type: ignore[call-overload]
        value = getattr(compiled, name)
        setattr(self, name, value)  # found directly from now on (no __getattr__ call)
        return value


def utf8(data: bytes) -> str:
    """``data.decode("utf-8-sig")`` without that codec, which is looked up and imported on first
    use (about 0.3 ms on the hook path); raises UnicodeDecodeError the same way."""
    return (data[3:] if data[:3] == b"\xef\xbb\xbf" else data).decode("utf-8")


def _quote_from_bytes(bs: bytes, safe: str = "/") -> str:
    from urllib.parse import quote_from_bytes  # the real module: the stand-in is gone by now

    return quote_from_bytes(bs, safe)


def import_pathlib() -> None:
    """Import ``pathlib`` without importing ``urllib.parse`` and ``ipaddress`` (see the module
    docstring); a no-op when either is already imported."""
    if "pathlib" in sys.modules or "urllib.parse" in sys.modules:
        return
    stand_in = type(sys)("urllib.parse")
    stand_in.quote_from_bytes = _quote_from_bytes  # type: ignore[attr-defined]
    sys.modules["urllib.parse"] = stand_in
    try:
        import pathlib  # noqa: F401
    except ImportError:  # a pathlib that wants more of urllib.parse: import it the plain way
        pass
    finally:
        if sys.modules.get("urllib.parse") is stand_in:
            del sys.modules["urllib.parse"]
        pkg = sys.modules.get("urllib")
        if pkg is not None and getattr(pkg, "parse", None) is stand_in:
            delattr(pkg, "parse")
    import pathlib  # noqa: F401, F811 - after an ImportError above


__all__ = ["LazyRegex", "datetime", "import_pathlib", "timedelta", "timezone", "utf8"]
