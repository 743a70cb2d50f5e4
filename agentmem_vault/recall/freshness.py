"""Who vouches that the recall index matches memory/long-term/ without a stat of every note: this
process's own inotify watch, or a running daemon's heartbeat (the rules: docs/performance.md, "Fresh
recall results without statting every note"). Kept apart from note parsing (recall/index.py) and
free of heavy imports.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

from agentmem_vault.errors import AgentmemError

HEARTBEAT_SECONDS = 2.0  # the daemon touches the heartbeat this often
MAX_AGE_SECONDS = 10.0  # a query trusts a heartbeat at most this old
HEARTBEAT_BYTES = 4096  # a heartbeat is one small JSON object


def heartbeat_path(vault) -> Path:  # type: ignore[no-untyped-def]
    from agentmem_vault.vault import user_cache_dir

    return user_cache_dir() / "daemon" / f"{vault.key}.recall-heartbeat.json"


def _host() -> str:
    try:
        return os.uname().nodename
    except AttributeError:  # Windows
        return os.environ.get("COMPUTERNAME", "")


def _alive(pid: int) -> bool:
    if sys.platform == "win32":
        return True  # the age check stands in for it (os.kill(pid, 0) would terminate the process there)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def daemon_vouches(vault) -> bool:  # type: ignore[no-untyped-def]
    """True when a live daemon on this machine says the index has every change it has seen."""
    from agentmem_vault.fs import open_for_read

    path = heartbeat_path(vault)
    try:
        with open_for_read(path) as fh:  # a FIFO, a device or a link out of the cache is not a heartbeat
            st = os.fstat(fh.fileno())
            data = json.loads(fh.read(HEARTBEAT_BYTES))
    except (OSError, ValueError, AgentmemError):
        return False
    if not isinstance(data, dict) or data.get("state") != "clean" or data.get("host") != _host():
        return False
    if not (0 <= time.time() - st.st_mtime <= MAX_AGE_SECONDS):
        return False
    pid = data.get("pid")
    return isinstance(pid, int) and _alive(pid)


class Heartbeat:
    """The daemon's side. ``dirty()`` may be called from the observer thread; the rest from the
    main loop. A sync that started before the last event never marks the heartbeat clean."""

    def __init__(self, vault) -> None:  # type: ignore[no-untyped-def]
        self.path = heartbeat_path(vault)
        self._lock = threading.Lock()
        self.generation = 0  # bumped by every long-term event
        self.state = "dirty"
        self._touched = 0.0

    def _write(self, state: str) -> None:
        from agentmem_vault.fs import write_cache_file

        body = {"pid": os.getpid(), "host": _host(), "state": state, "generation": self.generation}
        try:
            write_cache_file(self.path, json.dumps(body).encode("utf-8"))
        except Exception:
            self.remove()
            return
        self.state = state
        self._touched = time.monotonic()

    def dirty(self) -> None:
        """An event under long-term/: until the next sync, queries must check for themselves."""
        with self._lock:
            self.generation += 1
            if self.state != "dirty":
                self._write("dirty")

    def clean(self, generation: int) -> bool:
        """After a sync that began at ``generation``: vouch for the index unless an event came since."""
        with self._lock:
            if generation != self.generation:
                return False
            self._write("clean")
            return True

    def touch(self) -> None:
        """Keep a clean heartbeat recent (called from the loop; cheap: one utime)."""
        with self._lock:
            if self.state != "clean" or time.monotonic() - self._touched < HEARTBEAT_SECONDS:
                return
            try:
                os.utime(self.path)
                self._touched = time.monotonic()
            except OSError:
                self._write("clean")

    def remove(self) -> None:
        with suppress(OSError):
            os.unlink(self.path)
        self.state = "dirty"


# -- this process's own change notification (no daemon) -------------------------------------------
#
# The kernel queues an event during the very write() that changes a note, so one non-blocking read
# at query time tells whether anything changed since the last full check (docs/performance.md).
# Linux only: ctypes, as the stdlib has no binding.

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_Q_OVERFLOW, _IN_IGNORED, _IN_ONLYDIR, _IN_ISDIR = 0x4000, 0x8000, 0x01000000, 0x40000000
_CHANGES = _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
_MASK = _CHANGES | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
# Where inotify sees every change: the files live on this machine's own disks or memory. Network,
# FUSE and host-shared folders (nfs, cifs, sshfs, 9p/drvfs under WSL, vboxsf, ...) are left out.
LOCAL_FILE_SYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "f2fs", "zfs", "jfs", "reiserfs", "bcachefs", "overlay"}
)
MAX_WATCHED_DIRS = 512  # per folder: beyond that, checking every note is the simpler cost
MAX_WATCHED_FOLDERS = 8  # per process (one inotify instance; the per-user instance limit is small)
ASKS_BEFORE_WATCHING = 2  # a process that checks a folder twice is long-lived: worth a watch


def file_system_type(path: str, mountinfo: str | None = None) -> str | None:
    """The Linux file system type of the mount holding ``path`` (longest mount point prefix);
    ``mountinfo``: the text of /proc/self/mountinfo (read when not given)."""
    import re

    try:
        real = os.path.realpath(path)
        if mountinfo is None:
            from agentmem_vault.fs import open_for_read

            with open_for_read(Path("/proc/self/mountinfo")) as fh:  # procfs reports no size: streamed
                mountinfo = fh.read().decode("utf-8", "surrogateescape")
    except (OSError, AgentmemError):
        return None
    best, kind = -1, None
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields = head.split(" ")
        if not sep or len(fields) < 5 or not tail:
            continue
        # mountinfo writes space, tab, newline and backslash as \ooo
        mnt = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        inside = real == mnt or real.startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) >= best:  # a later mount on the same point hides the earlier one
            best, kind = len(mnt), tail.split(" ")[0]
    return kind


class FolderWatch:
    """One folder's share of the process's inotify instance. The recall index asks ``quiet()``
    before a query; around a full check it calls ``begin()``, ``add_dir()`` for every folder
    before listing it (so a change after the listing raises an event), ``refuse()`` when the
    folder holds something events cannot vouch for, and ``verified()`` with the index's sync token
    afterwards. Safe across threads (the notifier's lock); a full check that began before another
    one began never vouches (``generation``)."""

    def __init__(self, notifier: _Notifier, folder: str) -> None:
        self.notifier = notifier
        self.folder = folder
        self.root_id = (-1, -1)  # (st_dev, st_ino) of the folder at the last full check
        self.dirty = True
        self.generation = 0
        self.token: str | None = None  # the index's sync token when it last matched the notes
        self.total = 0
        self.refused = False
        self.dirs: dict[str, int] = {}  # folder path -> watch descriptor
        self._seen: set[str] = set()

    def quiet(self) -> bool:
        """True when nothing under the folder changed since the last verified full check."""
        with self.notifier.lock:
            if self.refused or self.token is None or not self.notifier.drain() or self.dirty:
                return False
        try:
            st = os.stat(self.folder)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.root_id  # not replaced, nor an ancestor renamed

    def begin(self) -> int:
        """Before a full check: events from here on make it unverifiable."""
        try:
            st = os.stat(self.folder)
            root_id = (st.st_dev, st.st_ino)
        except OSError:
            root_id = (-1, -1)
        with self.notifier.lock:
            self.root_id = root_id
            self.notifier.drain()
            self.refused = False
            self.dirty = False
            self.token = None
            self.generation += 1
            self._seen = set()
            return self.generation

    def add_dir(self, path: str) -> None:
        if self.refused:
            return
        with self.notifier.lock:
            if len(self._seen) >= MAX_WATCHED_DIRS:
                self.refused = True
                return
            wd = self.notifier.add_watch(path)
            if wd < 0:
                self.refused = True
                return
            before = self.dirs.get(path)
            self.dirs[path] = wd
            self.notifier.owner.setdefault(wd, set()).add(self)  # another path may share the folder
            self._seen.add(path)
            if before is not None and before != wd:
                self._release(before)  # a new folder under an old name

    def drop(self, path: str) -> None:
        """Stop watching ``path`` for this folder; the inotify watch itself goes when no other
        name of ours (a folder moved inside the tree) and no other folder watch uses it."""
        self._release(self.dirs.pop(path))

    def _release(self, wd: int) -> None:
        if wd in self.dirs.values():
            return
        users = self.notifier.owner.get(wd)
        if users is not None:
            users.discard(self)
            if users:
                return
        self.notifier.rm_watch(wd)

    def refuse(self) -> None:
        """Something under the folder changes without an event here (a symlink, a hard link, a
        mount): this process checks every note on every query."""
        self.refused = True

    def verified(self, generation: int, token: str | None, total: int) -> None:
        """After a full check that began at ``generation`` and left the index at ``token``."""
        with self.notifier.lock:
            ok = self.notifier.drain()
            if generation != self.generation:
                return  # a later full check is under way: it decides
            for path in [p for p in self.dirs if p not in self._seen]:
                self.drop(path)  # gone from the tree, or moved (then it is seen under its new name)
            if not ok or self.refused or self.dirty or not token:
                return
            self.token, self.total = token, total


class _Notifier:
    """The process's one inotify instance, read without blocking (never by a thread)."""

    def __init__(self) -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        self._add = libc.inotify_add_watch
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)  # each returns a C int (the default)
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = (ctypes.c_int, ctypes.c_int)
        init = libc.inotify_init1
        init.argtypes = (ctypes.c_int,)
        self.fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.owner: dict[int, set[FolderWatch]] = {}  # watch descriptor -> the folder watches using it
        self.folders: dict[str, FolderWatch] = {}  # insertion order = least recently used first

    def add_watch(self, path: str) -> int:
        return int(self._add(self.fd, os.fsencode(path), _MASK))

    def rm_watch(self, wd: int) -> None:
        self.owner.pop(wd, None)
        self._rm(self.fd, wd)  # already gone (folder deleted): EINVAL, nothing to do

    def drain(self) -> bool:
        """Read every queued event and mark the folders they touch. False if reading failed."""
        import struct

        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                for each in self.folders.values():
                    each.dirty = True
                return False
            off = 0
            while off + 16 <= len(buf):
                wd, mask, _cookie, size = struct.unpack_from("iIII", buf, off)
                name = buf[off + 16 : off + 16 + size].rstrip(b"\0")
                off += 16 + size
                if mask & _IN_Q_OVERFLOW:  # events were lost: every folder is unknown
                    for each in self.folders.values():
                        each.dirty = True
                    continue
                users = self.owner.get(wd)
                if not users:
                    continue
                if mask & _IN_IGNORED:  # the watched folder went away
                    self.owner.pop(wd, None)
                # What the scan never looks at (hidden entries, files other than *.md) cannot change
                # a result: editors' swap files and sync tools' temp files do not force a full check.
                elif name and (name[:1] == b"." or not (mask & _IN_ISDIR or name.endswith(b".md"))):
                    continue
                for w in users:
                    w.dirty = True

    def close(self) -> None:
        with suppress(OSError):
            os.close(self.fd)


_notifier: _Notifier | None = None
_notifier_failed = False
_asks: dict[str, int] = {}
_unwatchable: set[str] = set()
_registry_lock = threading.Lock()


def folder_watch(folder: Path) -> FolderWatch | None:
    """This process's watch over ``folder`` (created on its second full check), or None when
    there is none yet, or none can be trusted here."""
    global _notifier, _notifier_failed
    if not sys.platform.startswith("linux"):
        return None
    key = str(folder)
    with _registry_lock:
        if _notifier is not None and _notifier.pid != os.getpid():  # forked: the queue is shared
            _notifier.close()
            _notifier = None
            _asks.clear()
        if _notifier is not None and key in _notifier.folders:
            w = _notifier.folders.pop(key)
            _notifier.folders[key] = w  # most recently used
            return w
        if _notifier_failed or key in _unwatchable:
            return None
        _asks[key] = _asks.get(key, 0) + 1
        if _asks[key] < ASKS_BEFORE_WATCHING:
            return None
        del _asks[key]
        if not os.path.isdir(key):
            return None
        if file_system_type(key) not in LOCAL_FILE_SYSTEMS:
            _unwatchable.add(key)  # changed from elsewhere without an event here
            return None
        if _notifier is None:
            try:
                _notifier = _Notifier()
            except (OSError, AttributeError, ImportError):  # no inotify (old libc, musl without it, ...)
                _notifier_failed = True
                return None
        n = _notifier
        with n.lock:
            while len(n.folders) >= MAX_WATCHED_FOLDERS:
                old = n.folders.pop(next(iter(n.folders)))
                for path in list(old.dirs):
                    old.drop(path)
            w = FolderWatch(n, key)
            n.folders[key] = w
        return w
