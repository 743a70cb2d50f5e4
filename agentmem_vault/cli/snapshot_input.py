"""Where an incoming snapshot comes from: ``--snapshot FILE``, ``--snapshot -`` or piped stdin.

Read as bytes and decoded here, so that a missing file, a closed stdin or non-UTF-8 bytes are a
clear AgentmemError, never a traceback. Implicit stdin (no ``--snapshot``) must never hang: agents
and CI runners often start commands with a stdin pipe that nobody writes to or closes, so a pipe
that stays silent for ``STDIN_WAIT`` seconds is treated as "no snapshot". ``--snapshot -`` is the
explicit form and waits for end of input.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path
from typing import IO, Callable

from agentmem_vault.config import DEFAULTS
from agentmem_vault.errors import SnapshotFormatError, UsageError
from agentmem_vault.vault import Vault

STDIN_WAIT = 3.0
DEFAULT_LIMIT = DEFAULTS["max_snapshot_bytes"]


def decode_snapshot(data: bytes, where: str) -> str:
    """UTF-8 with an optional BOM (dropped); CRLF is left to the snapshot parser."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SnapshotFormatError(
            f"the snapshot from {where} is not UTF-8 text (byte {exc.start}); nothing was written"
        ) from exc


def read_snapshot_source(
    spec: str | None,
    *,
    implicit_stdin: bool = True,
    stdin: IO | None = None,
    wait: float = STDIN_WAIT,
    warn: Callable[[str], None] | None = None,
    limit: int = DEFAULT_LIMIT,
) -> str | None:
    """The incoming snapshot text, or None when none was given.

    ``spec``: a file path, ``-`` (stdin, waits for end of input) or None (piped stdin when
    ``implicit_stdin`` and stdin is not a terminal; at most ``wait`` seconds for the first byte).
    ``stdin`` defaults to ``sys.stdin`` (which is None when the process has no stdin at all).
    At most ``limit`` bytes are read from any of them: ``/dev/zero`` or ``yes`` on stdin stop there
    with a clear error, and a file's size is checked before it is read (docs/reliability.md)."""
    stream = sys.stdin if stdin is None else stdin
    if spec == "-":
        data = _read_stream(stream, None, limit)
        if data is None:
            raise SnapshotFormatError("--snapshot - was given but there is no stdin; nothing was written")
        if not data.strip():
            raise SnapshotFormatError("--snapshot - was given but stdin is empty; nothing was written")
        return decode_snapshot(data, "stdin")
    if spec:
        return decode_snapshot(_read_file(Path(spec), limit), spec)
    if not implicit_stdin or stream is None or _is_terminal(stream):
        return None
    data = _read_stream(stream, wait, limit)
    if data is None:
        if warn is not None:
            warn(
                f"stdin is open but sent nothing within {wait:g} s; going on without a snapshot "
                "(use --snapshot - to wait for a slow producer)"
            )
        return None
    return decode_snapshot(data, "stdin") if data.strip() else None


def read_snapshot_arg(spec: str | None, vault: Vault, *, stdin_default: bool = True) -> str | None:
    """A command's ``--snapshot FILE`` / ``--snapshot -``, or piped stdin when the option is omitted
    and ``stdin_default``; at most the vault's ``max_snapshot_bytes``."""
    import click

    from agentmem_vault.ops.sessions import snapshot_limit

    warn = lambda m: click.echo(f"warning: {m}", err=True)
    return read_snapshot_source(spec, implicit_stdin=stdin_default, warn=warn, limit=snapshot_limit(vault))


def _is_terminal(stream: IO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return True  # closed or unusable: treat as "nothing piped"


def _too_big(where: str, limit: int) -> SnapshotFormatError:
    return SnapshotFormatError(
        f"the snapshot from {where} is over the limit of {limit:,} bytes (max_snapshot_bytes in "
        "memory/.agentmem/config.yaml); stopped reading, nothing was written"
    )


def _read_file(path: Path, limit: int) -> bytes:
    """A regular file of at most ``limit`` bytes (fs.read_bytes: opened without following a link
    or blocking on a FIFO, its size checked on the descriptor before a byte is read); a link given
    as the snapshot is refused too."""
    from agentmem_vault.errors import AgentmemError, FileTooLarge
    from agentmem_vault.fs import read_bytes

    if os.path.islink(path):
        raise UsageError(f"--snapshot: {path} is a symbolic link; give the file itself")
    try:
        got = read_bytes(path, limit=limit)
    except FileTooLarge:
        raise _too_big(str(path), limit) from None
    except AgentmemError as exc:
        raise UsageError(f"--snapshot: {exc.message}; to pipe a snapshot use --snapshot - and stdin") from exc
    if got is None:
        raise UsageError(f"--snapshot: cannot read {path}: No such file or directory")
    return got


def _read_stream(stream: IO | None, wait: float | None, limit: int = DEFAULT_LIMIT) -> bytes | None:
    """All bytes of ``stream`` (SnapshotFormatError past ``limit``); None when there is no
    stream, or when ``wait`` is given and the stream sent neither data nor end-of-input within it."""
    if stream is None:
        return None
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        fd = None  # an in-memory stream (tests, embedding): reading it cannot block
    if fd is None:
        try:
            data = getattr(stream, "buffer", stream).read(limit + 1) or b""
        except (OSError, ValueError):
            return None
        if len(data) > limit:
            raise _too_big("stdin", limit)
        return data
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None  # stdin was closed by the caller
    if wait is None or stat.S_ISREG(mode) or stat.S_ISCHR(mode):
        return _read_fd(fd, limit, "stdin")  # a file or /dev/null never blocks; an explicit '-' waits
    # A pipe or socket: read in a daemon thread so that a silent, never-closed pipe cannot hang
    # us. os.read on the descriptor (not sys.stdin's buffer) so that an abandoned reader holds no
    # lock that interpreter shutdown would need.
    got: list[bytes | SnapshotFormatError] = []
    first = threading.Event()
    done = threading.Event()

    def pump() -> None:
        try:
            got.append(_read_fd(fd, limit, "stdin", first.set))
        except SnapshotFormatError as exc:
            got.append(exc)
        finally:
            first.set()
            done.set()

    threading.Thread(target=pump, name="agentmem-stdin", daemon=True).start()
    if not first.wait(wait):
        return None
    done.wait()  # data started to arrive: read to the end (or the limit), as a pipe reader should
    if isinstance(got[0], SnapshotFormatError):
        raise got[0]
    return got[0]


def _read_fd(fd: int, limit: int, where: str, on_read: Callable[[], None] | None = None) -> bytes:
    """Read ``fd`` to its end; past ``limit`` bytes stop and raise (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            b = os.read(fd, min(1 << 16, limit + 1 - size))
        except OSError:
            b = b""
        if on_read is not None:
            on_read()
        if not b:
            break
        chunks.append(b)
        size += len(b)
        if size > limit:
            raise _too_big(where, limit)
    return b"".join(chunks)
