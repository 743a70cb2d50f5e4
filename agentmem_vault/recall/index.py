"""The derived recall index: SQLite FTS5 over pre-tokenised note fields, in memory/.agentmem/recall/.

Why SQLite FTS5 (see benchmarks/bench_recall.py): a query reads only the postings of its own tokens
(the C BM25 with per-field weights does the scoring), so a cold CLI process answers from 10,000
notes without loading the whole index into Python; a pickled/JSON inverted index has to be
deserialised in full on every invocation. Tokens come from ``agentmem_vault.model.textnorm`` (folded
Traditional->Simplified, Latin words, CJK bigrams) and are stored space-separated, so FTS5's own
tokenizer only splits on the spaces we put there.

The notes are the source of truth. The index is incremental by (mtime, size) and content hash,
checked against the notes before every query (docs/recall.md, "Freshness"), and rebuilt from
scratch when it is missing, corrupt or from another schema; in memory when its folder is not writable.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from agentmem_vault.vault import Vault
from agentmem_vault.model.textnorm import fold, normalize_terms, stopwords, tokenize
from agentmem_vault.errors import AgentmemError, NoteFormatError

from agentmem_vault.recall.freshness import FolderWatch, daemon_vouches, folder_watch
from agentmem_vault.ops.projects import fold_name
from agentmem_vault.recall.location import RULES_LIMIT, RULES_NAME, RULES_SQL, RULES_VERSION, db_path, index_error
from agentmem_vault.recall.location import RULE_IMPORTANCE, note_scope_key
from agentmem_vault.fs import check_database, ensure_writable, make_dirs, read_bytes, swap_in, temp_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentmem_vault.model.notes import Note

SCHEMA_VERSION = 7  # 7: an unscoped note's key matches no project (recall/scoping.py); 6: notes.project = scope key
# Bump when textnorm's folding/tokens change: every stored token would be stale.
TOKENIZER_VERSION = "textnorm-bigram-terms-parts-v2"
FIELDS = ("title", "keywords", "usage", "content")

_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- marshal of path -> (mtime_ns, size), rewritten in every write transaction: the per-query
-- freshness check loads it in one read instead of 10,000 rows
CREATE TABLE stamps(k INTEGER PRIMARY KEY CHECK (k = 0), data BLOB NOT NULL);
CREATE TABLE notes(
    docid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,          -- relative to memory/long-term, '/' separated
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha TEXT NOT NULL,
    note_id TEXT NOT NULL,
    title TEXT NOT NULL,
    category TEXT NOT NULL,
    project TEXT NOT NULL,              -- scope key: '' = global, else the project casefolded
    module TEXT NOT NULL,               -- folded, for scoping
    project_raw TEXT NOT NULL,
    module_raw TEXT NOT NULL,
    importance REAL NOT NULL,
    score INTEGER,
    status TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    keywords TEXT NOT NULL,             -- JSON list
    usage TEXT NOT NULL,                -- JSON list
    sources TEXT NOT NULL,              -- JSON list of Session IDs
    content TEXT NOT NULL,
    error TEXT
);
CREATE INDEX notes_rules ON notes(importance) WHERE status != 'deprecated';
CREATE VIRTUAL TABLE fts USING fts5({", ".join(FIELDS)}, tokenize="unicode61 tokenchars '.-+#_'");
CREATE VIRTUAL TABLE vocab USING fts5vocab(fts, 'row');
"""


_STATS_KEYS = "added updated removed touched total seconds rebuilt in_memory trusted watched errors".split()


class SyncStats:
    """What a sync, refresh or rebuild did (a plain class: no ``dataclasses`` on the hook path)."""

    def __init__(
        self,
        *,
        total: int = 0,
        rebuilt: bool = False,
        in_memory: bool = False,
        trusted: bool = False,  # not checked here: a running daemon vouched for the index
        watched: bool = False,  # not checked here: this process's change notification saw no change
    ) -> None:
        self.added = self.updated = self.removed = 0
        self.touched = 0  # stamp changed, content identical
        self.total, self.seconds = total, 0.0
        self.rebuilt, self.in_memory, self.trusted, self.watched = rebuilt, in_memory, trusted, watched
        self.errors: list[dict] = []

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.touched)

    def to_dict(self) -> dict:
        return {k: round(self.seconds, 4) if k == "seconds" else getattr(self, k) for k in _STATS_KEYS}


_BY_FD = os.scandir in os.supports_fd and os.open in os.supports_dir_fd


def scan_notes(folder: Path, watch: FolderWatch | None = None) -> dict[str, tuple[int, int]]:
    """``{relative path: (mtime_ns, size)}`` of every note under ``folder`` (hidden entries skipped).

    The cost of a query without a daemon or a watch, and why folders are listed through an open
    descriptor: docs/performance.md. With ``watch`` (recall/freshness.py) every folder is watched
    before it is listed, and anything that would raise no event there makes the watch refuse."""
    out: dict[str, tuple[int, int]] = {}
    stack: list[tuple[str, str]] = [(str(folder), "")]
    while stack:
        d, prefix = stack.pop()
        if watch is not None:
            watch.add_dir(d)  # before the listing: a change after it raises an event
        fd = -1
        try:
            if _BY_FD:
                fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            it = os.scandir(fd if fd >= 0 else d)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            if fd >= 0:
                os.close(fd)
            continue
        try:
            with it:
                for e in it:
                    name = e.name
                    if name[0] == ".":
                        continue
                    if name.endswith(".md"):
                        try:
                            st = e.stat()
                        except OSError:
                            continue  # vanished between listing and stat
                        if e.is_file():
                            out[prefix + name] = (st.st_mtime_ns, st.st_size)
                            if watch is not None and (st.st_nlink > 1 or e.is_symlink()):
                                watch.refuse()  # edited through another path: the event is raised there
                    elif e.is_dir(follow_symlinks=False):
                        if watch is not None:
                            try:
                                if e.stat(follow_symlinks=False).st_dev != watch.root_id[0]:
                                    watch.refuse()  # another file system mounted inside
                            except OSError:
                                continue
                        stack.append((os.path.join(d, name), f"{prefix}{name}/"))
        finally:
            if fd >= 0:
                os.close(fd)
    return out


_PARTS_RE = re.compile(r"[._\-+#]")


def recall_tokens(text: str) -> list[str]:
    """textnorm tokens of the folded, term-normalised text; a compound Latin token such as
    ``sms.verify`` or ``billing_events`` also yields its parts, so "verify the SMS" finds it."""
    out: list[str] = []
    for t in tokenize(normalize_terms(fold(text)), fold_first=False):
        out.append(t)
        if t.isascii() and _PARTS_RE.search(t):
            out.extend(p for p in _PARTS_RE.split(t) if len(p) > 1 and p not in stopwords())
    return out


def note_tokens(note: Note) -> tuple[str, str, str, str]:
    """The four indexed fields as space-joined tokens (what FTS5 stores and matches)."""
    return (
        " ".join(recall_tokens(note.name)),
        " ".join(recall_tokens(" ; ".join(note.keywords))),
        " ".join(recall_tokens(" ; ".join(note.usage_scenario))),
        " ".join(recall_tokens(note.content)),
    )


def _is_corrupt(exc: BaseException) -> bool:
    """A damaged or foreign database file (rebuild it), as opposed to a busy one (report it)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    if not isinstance(exc, sqlite3.OperationalError):
        return True  # "file is not a database", "database disk image is malformed", ...
    msg = str(exc).lower()
    return any(s in msg for s in ("malformed", "not a database", "no such table", "no such column"))


class RecallIndex:
    """An open recall index for one vault. ``sync()`` before reading; ``rebuild()`` on demand."""

    def __init__(self, vault: Vault, *, path: Path | None = None):
        self.vault = vault
        self.folder = vault.longterm_dir
        self.path = path or db_path(vault)
        self.in_memory = False
        self.conn: sqlite3.Connection | None = None
        self._stamps: dict[str, tuple[int, int]] | None = None  # path -> (mtime_ns, size)
        self._stamps_version: int | None = None
        self._file: tuple[int, int] | None = None  # (st_dev, st_ino) of the file this connection opened

    # -- opening ---------------------------------------------------------------------------------
    def _connect(self, target: str) -> sqlite3.Connection:
        target = target if target == ":memory:" else check_database(Path(target))  # no FIFO, device, link out
        conn = sqlite3.connect(target, timeout=5.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    def _valid(self, conn: sqlite3.Connection) -> bool:
        (ver,) = conn.execute("PRAGMA user_version").fetchone()
        if ver != SCHEMA_VERSION:
            return False
        row = conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()
        return bool(row) and row[0] == TOKENIZER_VERSION

    def open(self) -> RecallIndex:
        """Open the index file, rebuilding it when missing, corrupt or from another version."""
        if self.conn is not None:
            return self
        # Not an index (or a FIFO / link where it belongs): rebuilt, replacing it.
        with suppress(sqlite3.DatabaseError, AgentmemError):
            if self.path.exists():
                file = self._file_id()  # before connecting: a rebuild swapped in meanwhile reads as a swap
                conn = self._connect(str(self.path))
                if self._valid(conn):
                    self.conn, self._file = conn, file
                    return self
                conn.close()
        self.rebuild()
        return self

    def open_readonly(self) -> bool:
        """Open the index file as it is, read-only and never building it (a hook's path): False
        when there is none, or it is from another version or not a database."""
        try:
            real = Path(check_database(self.path))
            conn = sqlite3.connect(f"{real.as_uri()}?mode=ro", uri=True, timeout=0.2)
        except (sqlite3.Error, AgentmemError):
            return False
        with suppress(sqlite3.Error):
            if self._valid(conn):
                self.conn = conn
                return True
        conn.close()
        return False

    def _file_id(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _swapped_under_us(self) -> bool:
        """Another process swapped a rebuilt index file in since this connection opened its file
        (the connection still reads the old one, and SQLite refuses to write to a moved file)."""
        return self.conn is not None and not self.in_memory and self._file_id() != self._file

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        self._stamps = None

    def __enter__(self) -> RecallIndex:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- building ----------------------------------------------------------------------------------
    @staticmethod
    def _create(conn: sqlite3.Connection) -> None:
        conn.executescript(_SCHEMA)
        conn.execute("INSERT INTO meta(key, value) VALUES ('tokenizer', ?)", (TOKENIZER_VERSION,))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def rebuild(self) -> SyncStats:
        """Build a fresh index beside the old one and swap it in atomically (readers never see half)."""
        t0 = time.perf_counter()
        self.close()
        tmp: Path | None = None
        try:
            make_dirs(self.path.parent)
            ensure_writable(self.path.parent)  # read-only means read-only, also for root (SQLite ignores it)
            tmp = temp_path(self.path)
            conn = self._connect(str(tmp))
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
        except (OSError, sqlite3.Error, AgentmemError):
            # Read-only vault or state folder: still answer, from an index held in memory.
            conn = self._connect(":memory:")
            tmp = None
            self.in_memory = True
        stats = SyncStats(rebuilt=True, in_memory=self.in_memory)
        try:
            self._create(conn)
            disk = scan_notes(self.folder)
            conn.execute("BEGIN")
            for rel, stamp in sorted(disk.items()):
                self._upsert(conn, rel, stamp, None, stats)
            self._save_stamps(conn)
            conn.execute("COMMIT")
            stats.total = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            if tmp is not None:
                conn.execute("PRAGMA journal_mode = DELETE")
        except (sqlite3.Error, OSError) as exc:  # a full disk, no inodes, an I/O error
            conn.close()
            if tmp is not None:
                _unlink(tmp, ("", "-journal"))
            raise index_error(self.path, exc, "build") from exc
        file = None
        if tmp is not None:
            conn.close()
            try:
                swap_in(tmp, self.path, durable=False)  # derived: rebuilt if lost
                _unlink(self.path, ("-journal", "-wal", "-shm"))
                file = self._file_id()  # before connecting, as in open()
                conn = self._connect(str(self.path))
            except OSError:
                conn = self._connect(str(tmp))  # could not swap (Windows sharing): use the fresh copy
        self.conn = conn
        self._file = self._file_id() if file is None else file
        self._stamps = None
        self._save_rules()
        stats.seconds = time.perf_counter() - t0
        return stats

    def _save_rules(self) -> None:
        """Write rules.json (recall/location.py) after a write transaction; best effort (without it
        the hook reads the rules from the index itself)."""
        if self.in_memory or self.conn is None:
            return
        try:
            rows = self.conn.execute(RULES_SQL, (RULE_IMPORTANCE, RULES_LIMIT)).fetchall()
            st = os.stat(self.path)
            from agentmem_vault.fs import save_cache

            if not save_cache(self.path.with_name(RULES_NAME), RULES_VERSION, [st.st_mtime_ns, st.st_size], rows):
                raise OSError("rules.json not written")
        except Exception:
            with suppress(OSError):
                os.unlink(self.path.with_name(RULES_NAME))

    def _read(self, rel: str) -> tuple[Note, str | None, str] | None:
        """(note, error, sha). A note whose frontmatter cannot be read is reported in ``error`` and
        still indexed by its file name and body: a hand-written note in Obsidian is a memory too."""
        # The note reader (python-frontmatter, PyYAML: ~50 ms to import) only when a note is
        # (re)indexed: a query on a fresh index never parses a note (docs/performance.md).
        from agentmem_vault.model.notes import Note, note_file_problem, read_note_bytes, salvage_body

        p = self.folder / rel
        try:  # fs's read: no FIFO waits, no link outside the vault (docs/reliability.md)
            st = p.stat()
            problem = note_file_problem(st.st_mode, st.st_size)
            data = b"" if problem else read_bytes(p)
        except (OSError, AgentmemError):
            return None
        if data is None:
            return None
        if problem:  # listed by name, never read (docs/notes.md)
            return Note(tags=[], path=p), problem, f"{st.st_size}:{st.st_mtime_ns}"
        sha = hashlib.sha1(data).hexdigest()
        try:
            return read_note_bytes(data, p), None, sha
        except NoteFormatError as exc:
            return Note(content=salvage_body(data), tags=[], path=p), str(exc), sha

    def _upsert(
        self, conn: sqlite3.Connection, rel: str, stamp: tuple[int, int], old: tuple[int, str] | None, stats: SyncStats
    ) -> None:
        """Index one file. ``old`` = (docid, sha) of its current entry, if any."""
        got = self._read(rel)
        if got is None:  # vanished meanwhile
            if old is not None:
                _drop(conn, old[0], stats)
            return
        note, error, sha = got
        if old is not None and old[1] == sha:
            conn.execute("UPDATE notes SET mtime_ns = ?, size = ? WHERE docid = ?", (stamp[0], stamp[1], old[0]))
            stats.touched += 1
            return
        if error:
            stats.errors.append({"path": rel, "error": error})
        row = {  # the notes table's columns (but docid and path), named so that no list can drift from another
            "mtime_ns": stamp[0],
            "size": stamp[1],
            "sha": sha,
            "note_id": note.id,
            "title": note.name,
            "category": note.category,
            "project": note_scope_key(note.scope, note.project, fold_name),  # where it applies (docs/projects.md)
            "module": fold(note.module),
            "project_raw": note.project,
            "module_raw": note.module,
            "importance": note.importance,
            "score": note.score,
            "status": note.status,
            "created": note.created,
            "updated": note.changed_at,
            "keywords": json.dumps(note.keywords, ensure_ascii=False),
            "usage": json.dumps(note.usage_scenario, ensure_ascii=False),
            "sources": json.dumps(note.source_ids, ensure_ascii=False),
            "content": note.content,
            "error": error,
        }
        if old is not None:
            docid = old[0]
            conn.execute("DELETE FROM fts WHERE rowid = ?", (docid,))
            sets = ", ".join(f"{c} = ?" for c in row)
            conn.execute(f"UPDATE notes SET {sets} WHERE docid = ?", (*row.values(), docid))
            stats.updated += 1
        else:
            cols = ", ".join(row)
            cur = conn.execute(f"INSERT INTO notes(path, {cols}) VALUES (?{', ?' * len(row)})", (rel, *row.values()))
            docid = cur.lastrowid or 0  # sqlite always gives the new rowid after an INSERT
            stats.added += 1
        conn.execute(
            "INSERT INTO fts(rowid, title, keywords, usage, content) VALUES (?, ?, ?, ?, ?)",
            (docid, *note_tokens(note)),
        )

    # -- keeping it fresh ---------------------------------------------------------------------------
    def _load_stamps(self) -> dict[str, tuple[int, int]]:
        """``{path: (mtime_ns, size)}`` as indexed; cached until any connection changes the file."""
        assert self.conn is not None
        (version,) = self.conn.execute("PRAGMA data_version").fetchone()
        if self._stamps is None or version != self._stamps_version:
            row = self.conn.execute("SELECT data FROM stamps WHERE k = 0").fetchone()
            try:
                self._stamps = marshal.loads(row[0]) if row else None
            except (ValueError, EOFError, TypeError):
                self._stamps = None
            if not isinstance(self._stamps, dict):
                self._stamps = {p: (m, s) for p, m, s in self.conn.execute("SELECT path, mtime_ns, size FROM notes")}
            self._stamps_version = version
        return self._stamps

    @staticmethod
    def _save_stamps(conn: sqlite3.Connection) -> str:
        """Call inside the write transaction that changed ``notes``. Returns the new sync token:
        unique per write, so a process that saw no change in the notes and reads the same token
        knows that no other process changed the index either (``sync``)."""
        snap = {p: (m, s) for p, m, s in conn.execute("SELECT path, mtime_ns, size FROM notes")}
        conn.execute("INSERT OR REPLACE INTO stamps(k, data) VALUES (0, ?)", (marshal.dumps(snap),))
        token = os.urandom(8).hex()
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('synced', ?)", (token,))
        return token

    def _token(self) -> str | None:
        assert self.conn is not None
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'synced'").fetchone()
        return row[0] if row else None

    def sync(self, *, trust_daemon: bool = True) -> SyncStats:
        """Bring the index in line with the notes on disk (cheap when nothing changed). With
        ``trust_daemon``, this process's watch (when the index still carries the sync token of its
        last full check) or a running daemon's heartbeat may stand for the check (recall/freshness.py,
        docs/performance.md); otherwise every note is stat'ed."""
        t0 = time.perf_counter()

        def work() -> SyncStats:
            watch = None
            if trust_daemon and not self.in_memory:
                watch = folder_watch(self.folder)
                if watch is not None and watch.quiet() and self._token() == watch.token:
                    return SyncStats(total=watch.total, watched=True)
                if daemon_vouches(self.vault):
                    assert self.conn is not None
                    (total,) = self.conn.execute("SELECT count(*) FROM notes").fetchone()
                    return SyncStats(total=total, trusted=True)
            return self._sync(watch)

        stats = self._guarded(work)
        stats.seconds = time.perf_counter() - t0
        return stats

    def refresh(self, rels: list[str]) -> SyncStats:
        """Re-index only these notes (paths relative to long-term/, '/' separated) in one write
        transaction, the rule summary rewritten after it: docs/recall.md, "After every write of ours"."""
        t0 = time.perf_counter()
        stats = self._guarded(lambda: self._refresh(rels))
        stats.seconds = time.perf_counter() - t0
        return stats

    def _guarded(self, work: Callable[[], SyncStats]) -> SyncStats:
        """Open the index and run ``work``, reopening when another process swapped a rebuilt file in
        under this connection and rebuilding when the file is damaged."""
        for attempt in range(3):
            try:
                if self._swapped_under_us():
                    self.close()  # read (and write) the file that is there now
                self.open()  # builds a missing index: every note, the ones just written among them
                return work()
            except sqlite3.DatabaseError as exc:
                # SQLite's "disk I/O error" when another process swapped a freshly built index file in
                # under this connection (its write hits the replaced file): reopen the new file, sync again.
                swapped = isinstance(exc, sqlite3.OperationalError) and "disk i/o error" in str(exc).lower()
                if attempt < 2 and (swapped or self._swapped_under_us()):
                    self.close()
                    continue
                if not _is_corrupt(exc):
                    raise index_error(self.path, exc, "update") from exc
                self._discard()
                return self.rebuild()
        raise AssertionError("unreachable")  # pragma: no cover - the third attempt returns or raises

    def _discard(self) -> None:
        self.close()
        if not self.in_memory:
            _unlink(self.path, ("", "-journal", "-wal", "-shm"))

    def _refresh(self, rels: list[str]) -> SyncStats:
        stats = SyncStats(in_memory=self.in_memory)
        self._apply(lambda rows: {rel: _note_stamp(self.folder, rel) for rel in rels}, stats)
        return stats

    def _sync(self, watch: FolderWatch | None = None) -> SyncStats:
        assert self.conn is not None
        stats = SyncStats(in_memory=self.in_memory)
        generation = watch.begin() if watch is not None else 0
        before = self._token() if watch is not None else None
        disk = scan_notes(self.folder, watch)
        stamps = self._load_stamps()
        if disk == stamps:  # the common case: one C-level comparison
            stats.total = len(stamps)
            if watch is not None:  # vouch only if no other process wrote the index meanwhile
                watch.verified(generation, before if self._token() == before else None, stats.total)
            return stats

        def changed(rows: dict[str, tuple]) -> dict[str, tuple[int, int] | None]:
            gone: dict[str, tuple[int, int] | None] = dict.fromkeys(rows.keys() - disk.keys())
            return {**gone, **{rel: st for rel, st in disk.items() if rel not in rows or rows[rel][1:3] != st}}

        token = self._apply(changed, stats, always=True)
        if watch is not None:
            watch.verified(generation, token, stats.total)
        return stats

    def _apply(
        self, changes: Callable[[dict], dict[str, tuple[int, int] | None]], stats: SyncStats, always: bool = False
    ) -> str | None:
        """One write transaction: the indexed rows (path -> (docid, mtime_ns, size, sha)) read again
        under SQLite's write lock (another process may have synced meanwhile), then every path
        ``changes(rows)`` names indexed at its stamp, or dropped (None: removed, moved away, no
        longer a note). Returns the new sync token, None when nothing changed (unless ``always``);
        the rule summary follows every write."""
        conn = self.conn
        assert conn is not None
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = {
                p: (d, m, s, sha)
                for d, p, m, s, sha in conn.execute("SELECT docid, path, mtime_ns, size, sha FROM notes")
            }
            for rel, stamp in sorted(changes(rows).items()):
                cur = rows.get(rel)
                if stamp is not None:
                    self._upsert(conn, rel, stamp, None if cur is None else (cur[0], cur[3]), stats)
                elif cur is not None:
                    _drop(conn, cur[0], stats)
            token = self._save_stamps(conn) if always or stats.changed else None
            conn.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):  # a failed COMMIT can end the transaction itself: the first error counts
                conn.execute("ROLLBACK")
            raise
        self._stamps = None
        if token is not None:
            self._save_rules()
        stats.total = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
        return token


def _drop(conn: sqlite3.Connection, docid: int, stats: SyncStats) -> None:
    conn.execute("DELETE FROM fts WHERE rowid = ?", (docid,))
    conn.execute("DELETE FROM notes WHERE docid = ?", (docid,))
    stats.removed += 1


def _unlink(path: Path, suffixes: tuple[str, ...]) -> None:
    """Remove ``path`` + each suffix where it exists (an index file and SQLite's companions)."""
    for extra in suffixes:
        with suppress(OSError):
            os.unlink(f"{path}{extra}")


def _note_stamp(folder: Path, rel: str) -> tuple[int, int] | None:
    """(mtime_ns, size) of ``rel`` when scan_notes would list it as a note, else None."""
    parts = rel.split("/")
    if not rel.endswith(".md") or any(not p or p[0] == "." for p in parts):
        return None
    try:
        st = os.stat(os.path.join(folder, *parts))
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if stat.S_ISREG(st.st_mode) else None


def open_index(vault: Vault, *, sync: bool = True) -> RecallIndex:
    """Open (building if needed) and, by default, sync the vault's recall index."""
    idx = RecallIndex(vault)
    if sync:
        idx.sync()
    else:
        idx.open()
    return idx


def reindex(vault: Vault) -> SyncStats:
    """Rebuild the derived index from the notes (``agentmem reindex``)."""
    idx = RecallIndex(vault)
    try:
        return idx.rebuild()
    finally:
        idx.close()
