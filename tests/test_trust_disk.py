"""A full disk, no inodes left, a read-only state folder (docs/reliability.md): ``reindex``,
``context`` and ``extract`` answer with the tool's own error (never a traceback, never an SQLite
exception), leave no ``*.agentmem-tmp`` file, and ``extract --file`` writes all of its notes or
none. The real cases run on a tiny tmpfs (root on Linux); an injected ENOSPC covers the rest."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.fs import TMP_SUFFIX

from conftest import run_process

CHAT = (
    "User: From now on always use pnpm instead of npm in this repo.\n\nAssistant: OK.\n\n"
    "User: Never commit directly to main, always open a pull request.\n\nAssistant: OK.\n\n"
    "User: I prefer tabs over spaces in Go files.\n\nAssistant: Noted.\n"
)


def _can_mount_tmpfs() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "geteuid") and os.geteuid() == 0


needs_tmpfs = pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs root on Linux to mount a tiny tmpfs")


@pytest.fixture(params=[None])
def tiny(tmp_path: Path, request: pytest.FixtureRequest):
    """A vault on its own 512 KB tmpfs (``nr_inodes`` from an indirect parameter, if any)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    opts = "size=512k" + (f",nr_inodes={request.param}" if request.param else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)], capture_output=True, check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tmpfs: {r.stderr.decode(errors='replace').strip()}")
    try:
        v = Vault(mnt / "v")
        v.root.mkdir()
        assert _run(v, "init").returncode == 0
        yield v, mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)


def _run(vault: Vault, *argv: str) -> subprocess.CompletedProcess:
    p = run_process(["--vault", str(vault.root), *argv], timeout=120)
    p.stdout = p.stdout if isinstance(p.stdout, str) else p.stdout.decode("utf-8", "replace")
    p.stderr = p.stderr if isinstance(p.stderr, str) else p.stderr.decode("utf-8", "replace")
    return p


def _fill(mnt: Path, leave: int = 0) -> Path:
    """Fill the file system, then give back ``leave`` bytes."""
    filler = mnt / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 4096, 512, 64, 8, 1):
            while True:
                try:
                    os.write(fd, b"x" * size)
                except OSError:
                    break
        if leave:
            os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
    finally:
        os.close(fd)
    return filler


def _use_up_inodes(mnt: Path) -> list[Path]:
    made = []
    while True:
        p = mnt / f"i{len(made)}"
        try:
            p.touch()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            return made
        made.append(p)


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob(f"*{TMP_SUFFIX}*")]


def _own_error(p: subprocess.CompletedProcess, what: str) -> None:
    out = p.stdout + p.stderr
    assert p.returncode != 0, f"{what} claimed success on a full disk: {out}"
    assert "Traceback" not in out and "sqlite3." not in out and out.strip().startswith(("error", "{")), out


def _notes(vault: Vault) -> set[str]:
    return {p.name for p in vault.longterm_dir.glob("*.md")}


@needs_tmpfs
def test_full_disk_reindex_context_extract(tiny, tmp_path: Path) -> None:
    vault, mnt = tiny
    chat = tmp_path / "chat.md"
    chat.write_text(CHAT, encoding="utf-8")
    index = vault.state_dir / "recall" / "index.sqlite3"
    index.unlink(missing_ok=True)  # context must build it: on a full disk
    filler = _fill(mnt)
    _own_error(_run(vault, "reindex"), "reindex")
    ctx = _run(vault, "context", "pnpm")
    assert "Traceback" not in ctx.stdout + ctx.stderr and "sqlite3." not in ctx.stderr, ctx.stderr
    assert ctx.returncode == 0 or ctx.stderr.startswith("error"), ctx.stderr
    _own_error(_run(vault, "extract", "--offline", "--file", str(chat)), "extract")
    assert _temps(mnt) == [] and _notes(vault) == set()
    filler.unlink()
    ok = _run(vault, "extract", "--offline", "--file", str(chat))
    assert ok.returncode == 0 and len(_notes(vault)) == 3, ok.stdout + ok.stderr
    assert _run(vault, "reindex").returncode == 0


@needs_tmpfs
def test_extract_file_writes_all_its_notes_or_none(tiny, tmp_path: Path) -> None:
    vault, mnt = tiny
    chat = tmp_path / "chat.md"
    chat.write_text(CHAT, encoding="utf-8")
    assert _run(vault, "reindex").returncode == 0
    filler = _fill(mnt, leave=2 * 4096)  # room for one or two notes of the three
    p = _run(vault, "extract", "--offline", "--file", str(chat))
    _own_error(p, "extract")
    assert "undone" in p.stderr
    assert _notes(vault) == set() and _temps(mnt) == []
    filler.unlink()
    assert _run(vault, "extract", "--offline", "--file", str(chat)).returncode == 0
    assert len(_notes(vault)) == 3


@needs_tmpfs
@pytest.mark.parametrize("tiny", [64], indirect=True)
def test_no_inodes_left(tiny, tmp_path: Path) -> None:
    vault, mnt = tiny
    chat = tmp_path / "chat.md"
    chat.write_text(CHAT, encoding="utf-8")
    assert _run(vault, "reindex").returncode == 0
    # A note the index has not seen yet: the next query's sync must write (SQLite's journal file).
    (vault.longterm_dir / "by-hand.md").write_text("---\ntitle: by hand\n---\nuse pnpm\n", encoding="utf-8")
    made = _use_up_inodes(mnt)
    for argv in (["context", "pnpm"], ["memories", "search", "pnpm"]):
        p = _run(vault, *argv)
        assert "Traceback" not in p.stdout + p.stderr and "sqlite3." not in p.stderr, p.stderr
        assert p.returncode == 0 or p.stderr.startswith("error"), p.stderr
    r = _run(vault, "reindex")  # no file can be created: the index is held in memory, and says so
    assert r.returncode == 0 and "in memory" in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr
    _own_error(_run(vault, "extract", "--offline", "--file", str(chat)), "extract")
    assert _notes(vault) == {"by-hand.md"} and _temps(mnt) == []
    for f in made:
        f.unlink()
    assert _run(vault, "extract", "--offline", "--file", str(chat)).returncode == 0


def test_read_only_state_folder(vault: Vault, tmp_path: Path) -> None:
    """``chattr +i memory/.agentmem`` (often unavailable) as ``chmod -R a-w``: honoured also for root."""
    chat = tmp_path / "chat.md"
    chat.write_text(CHAT, encoding="utf-8")
    assert _run(vault, "reindex").returncode == 0
    frozen = [vault.state_dir, *vault.state_dir.rglob("*")]
    modes = {p: p.stat().st_mode for p in frozen}
    for p in frozen:
        p.chmod(modes[p] & ~0o222)
    try:
        p = _run(vault, "extract", "--offline", "--file", str(chat))
        _own_error(p, "extract")
        assert _notes(vault) == set()  # was: the notes written, then PermissionError
        r = _run(vault, "reindex")
        assert r.returncode == 0 and "in memory" in r.stdout, r.stdout + r.stderr
        assert _run(vault, "context", "pnpm").returncode == 0
    finally:
        for f in reversed(frozen):
            if f.exists():
                f.chmod(modes[f])
    assert _temps(vault.root) == []


def test_extract_undoes_its_notes_when_a_later_one_fails(vault: Vault, tmp_path: Path, monkeypatch) -> None:
    """ENOSPC injected at the third note's temporary file, in-process (any platform)."""
    from agentmem_vault import fs
    from agentmem_vault.errors import IncompleteOperation
    from agentmem_vault.longterm.extract import extract_sources
    from agentmem_vault.longterm.sources import source_for_transcript

    chat = tmp_path / "chat.md"
    chat.write_text(CHAT, encoding="utf-8")
    real = fs._create_temp
    notes_started: list[Path] = []

    def full_at_the_third_note(tmp: Path):  # noqa: ANN202 - the primitive's own signature
        if "long-term" in tmp.parts:
            notes_started.append(tmp)
            if len(notes_started) == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(tmp)

    monkeypatch.setattr(fs, "_create_temp", full_at_the_third_note)
    with pytest.raises(IncompleteOperation, match="undone"):
        extract_sources(vault, [source_for_transcript(chat)], offline=True)
    assert len(notes_started) == 3 and _notes(vault) == set() and _temps(vault.root) == []
