"""Per-path debouncer: a path is *due* once it has been quiet for ``delay`` seconds.

Bursts (an editor's save = create + modify + modify + close; a sync client rewriting a file in
chunks) collapse into one piece of work per path. No threads and no sleeping here: the caller
feeds ``touch`` and asks ``pop_due``/``next_deadline`` from its own loop, with an injected clock so
that tests need not wait.
"""

from __future__ import annotations

import time
from typing import Callable, Hashable


class Debouncer:
    def __init__(self, delay: float, clock: Callable[[], float] = time.monotonic) -> None:
        if delay < 0:
            raise ValueError("delay must be >= 0")
        self.delay = float(delay)
        self._clock = clock
        self._last: dict[Hashable, float] = {}

    def touch(self, key: Hashable, *, immediate: bool = False) -> None:
        """Record activity on ``key``; ``immediate`` makes it due at once (already settled)."""
        now = self._clock()
        self._last[key] = now - self.delay if immediate else now

    def __len__(self) -> int:
        return len(self._last)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._last

    def pop_due(self) -> list[Hashable]:
        """Keys quiet for at least ``delay`` seconds, oldest first; they are forgotten."""
        now = self._clock()
        due = sorted(((t, k) for k, t in self._last.items() if now - t >= self.delay), key=lambda tk: tk[0])
        keys = [k for _, k in due]
        for k in keys:
            del self._last[k]
        return keys

    def next_deadline(self) -> float | None:
        """Clock time at which the next key becomes due (None when nothing is pending)."""
        if not self._last:
            return None
        return min(self._last.values()) + self.delay
