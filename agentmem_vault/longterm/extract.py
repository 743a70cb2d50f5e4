"""The extraction pipeline: sources -> turns -> candidates -> assessment -> filters -> in-batch
de-duplication -> curation against existing notes -> notes written.

Library API (used by ``agentmem extract`` and by the daemon's extraction queue)::

    from agentmem_vault.longterm.extract import extract_sources, source_for_session, source_for_transcript

    report = extract_sources(vault, [source_for_session(vault, "2026-05-25-1318-cursor-main-agent"),
                                     source_for_transcript("~/.claude/projects/x/abc.jsonl")],
                             offline=None, dry_run=False, force=False)
    report.to_dict()   # created / updated / deprecated / ignored, skipped (with reasons), errors, tokens, cost

- ``offline=None``: offline rule-based extraction when no ``ANTHROPIC_API_KEY`` (env) or
  ``anthropic_api_key`` (vault config) is set, the model otherwise; ``True`` forces offline;
  ``False`` requires a key (ConfigError without one).
- Incremental: ``memory/.agentmem/extract/state.json`` records, per source, a hash of the file and
  of the turns already processed. An unchanged source is skipped; a grown transcript is processed
  from its first new turn (the model also gets about 2,000 characters of earlier turns as
  context); anything else is processed again (curation then ignores what is already known).
  ``force=True`` ignores the state. The state is never needed for correctness: deleting it only
  costs a re-run, which creates nothing new.
- ``dry_run=True`` computes the full plan (model calls included) and writes nothing.
- Never raises for bad content: unreadable lines, failed model calls, malformed or schema-violating
  replies and refused memories are listed in ``report.skipped`` / ``report.errors``; a source whose
  model call failed keeps its old state so that the next run retries it.
"""

from __future__ import annotations

import dataclasses

import hashlib
import json
import sys
import time
from datetime import datetime
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from agentmem_vault.vault import Vault
from agentmem_vault.config import vault_config
from agentmem_vault.errors import AgentmemError, ConfigError, IncompleteOperation
from agentmem_vault.model.textnorm import tokenize
from agentmem_vault.recall.refresh import NoteWriter
from agentmem_vault.fs import atomic_write_text, make_dirs, read_bytes, read_text
from agentmem_vault.longterm.assess import assess_all_offline
from agentmem_vault.longterm.fields.derive import apply_fields
from agentmem_vault.longterm.fields.sources import chat_pair, source_link
from agentmem_vault.longterm.scope import apply_scope
from agentmem_vault.ops.conversations import project_of_session
from agentmem_vault.ops.projects import Aliases, aliases_from_config, identify
from agentmem_vault.longterm.chunking import CHUNK_CHARS, OVERLAP_CHARS, chunk_turns, render_turns
from agentmem_vault.longterm.curate import plan_curation, notes_to_write
from agentmem_vault.longterm.dedupe import dedupe_batch
from agentmem_vault.longterm.filters import filter_memories
from agentmem_vault.longterm.llm import (
    DEFAULT_SOURCE_DEADLINE,
    LLMError,
    MemoryModel,
    Usage,
    endpoint_from,
    estimate_cost,
    model_from_config,
    normalize_extraction,
    source_deadline,
)
from agentmem_vault.longterm.noise import own_words, strip_noise
from agentmem_vault.longterm.notes import Note, format_note_ts, load_notes, note_now, write_note
from agentmem_vault.longterm.offline import extract_offline
from agentmem_vault.longterm.schema import MemoryObject, validate_assessment, validate_memory
from agentmem_vault.longterm.sources import (
    Source,
    Turn,
    read_source,
    text_redactor,
    source_for_session,
    source_for_transcript,
)

STATE_VERSION = 1
MAX_EXISTING_TITLES = 30
MAX_FULL_TEXT = 8  # notes whose full text the model sees, the closest to the conversation first
MAX_NOTE_CHARS = 1200

__all__ = ["extract_sources", "source_for_session", "source_for_transcript", "ExtractReport", "memories_from_turns"]


@dataclass
class ExtractReport:
    mode: str  # "offline" | "model"
    dry_run: bool = False
    sources: list[dict] = field(default_factory=list)
    actions: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    cost_usd: float = 0.0
    broken_notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, kind: str) -> int:
        return sum(1 for a in self.actions if a["action"] == kind)

    @property
    def written(self) -> int:
        return 0 if self.dry_run else sum(1 for a in self.actions if a["action"] in ("create", "update", "deprecate"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "model": self.model or None,
            "dry_run": self.dry_run,
            **{f"{kind}d": self.count(kind) for kind in ("create", "update", "deprecate", "ignore")},  # created, ...
            **{k: getattr(self, k) for k in ("actions", "skipped", "errors", "sources")},
            "usage": self.usage.to_dict(),
            "estimated_cost_usd": self.cost_usd,
            "broken_notes": self.broken_notes,
            "seconds": round(self.seconds, 3),
        }

    def summary(self) -> str:
        processed = sum(1 for s in self.sources if s["status"] == "processed")
        unchanged = sum(1 for s in self.sources if s["status"] == "unchanged")
        head, d = ("Dry run: would ", "") if self.dry_run else ("", "d")
        lines = [
            f"{head}create{d} {self.count('create')}, update{d} {self.count('update')}, "
            f"deprecate{d} {self.count('deprecate')} long-term memories "
            f"({self.mode}; {processed} source(s) read, {unchanged} unchanged)."
        ]
        for a in self.actions:
            if a["action"] != "ignore":
                lines.append(f"  {a['action']:<9} {a['title']}" + (f"  [{a.get('file')}]" if a.get("file") else ""))
        ignored = self.count("ignore")
        if ignored:
            lines.append(f"  ignored {ignored} already-known or rejected candidate(s)")
        for s in self.skipped:
            lines.append(f"  skipped   {s.get('title') or '(reply)'}: {s['reason']}")
        for e in self.errors:
            lines.append(f"  error     {e.get('source')}: {e['error']}")
        if self.usage.calls:
            u = self.usage
            lines.append(
                f"  model {self.model}: {u.calls} calls, tokens in {u.input_tokens}, out {u.output_tokens}, "
                f"cache read {u.cache_read_input_tokens}, cache write {u.cache_creation_input_tokens}; "
                f"estimated cost ${self.cost_usd:.4f}"
            )
        if self.broken_notes:
            lines.append(
                f"  {len(self.broken_notes)} note(s) with unreadable frontmatter were left alone: "
                + ", ".join(self.broken_notes[:5])
            )
        return "\n".join(lines)


# -- incremental state ----------------------------------------------------------------------------


def _state_path(vault: Vault):
    return vault.state_dir / "extract" / "state.json"


def load_state(vault: Vault) -> dict:
    try:
        data = json.loads((read_bytes(_state_path(vault)) or b"null").decode("utf-8"))
        if isinstance(data, dict) and data.get("version") == STATE_VERSION and isinstance(data.get("sources"), dict):
            return data
    except (OSError, ValueError, AgentmemError):
        pass
    return {"version": STATE_VERSION, "sources": {}}


def _turns_sha(turns: list[Turn]) -> str:
    h = hashlib.sha256()
    for t in turns:
        h.update(t.role.encode() + b"\0" + t.text.encode("utf-8") + b"\0")
    return h.hexdigest()[:24]


def _start_turn(entry: dict | None, turns: list[Turn], file_sha: str) -> int | None:
    """First turn to process; None = nothing new."""
    if not entry:
        return 0
    if entry.get("sha") == file_sha:
        return None
    done = int(entry.get("turns", 0) or 0)
    if 0 < done <= len(turns) and _turns_sha(turns[:done]) == entry.get("prefix_sha"):
        return None if done == len(turns) else done
    return 0


# -- candidate generation -------------------------------------------------------------------------


def _similar_titles(notes: list[Note], text: str, limit: int = MAX_EXISTING_TITLES) -> list[str]:
    """The existing notes the model sees: every title, and the full text of the notes closest to
    the conversation (so that an update returns merged content, docs/extraction.md)."""
    active = [n for n in notes if n.active and n.title]
    toks = set(tokenize(text[:50_000]))
    scored = sorted(
        (
            (len(toks & set(tokenize(f"{n.title} {' '.join(n.keywords)} {n.content}"))), i, n)
            for i, n in enumerate(active)
        ),
        key=lambda x: (-x[0], x[1]),
    )
    if len(active) > limit:
        scored = [x for x in scored[:limit] if x[0] > 0]
    out: list[str] = []
    for rank, (_, _, n) in enumerate(scored):
        body = " ".join(n.content.split())
        if rank < MAX_FULL_TEXT and body:
            out.append(f"{n.title}\n  全文：{body[:MAX_NOTE_CHARS]}")
        else:
            out.append(n.title)
    return out


def _context_text(turns: list[Turn], start: int) -> str:
    if start <= 0:
        return ""
    picked: list[Turn] = []
    size = 0
    for t in reversed(turns[:start]):
        picked.insert(0, Turn(t.role, strip_noise(t.text)))
        size += len(t.text)
        if size >= OVERLAP_CHARS:
            break
    text = render_turns(picked)
    return text[-OVERLAP_CHARS:]


@dataclass
class _Job:
    index: int  # source index
    chunk_text: str
    context: str
    user_words: str = ""  # what the user said in the source: only that can retract a rule note


def _jobs(index: int, turns: list[Turn], start: int, size: int) -> list[_Job]:
    """A model call per chunk of the turns from ``start``; the first also sees the turns before."""
    # what the user wrote, not what they pasted: a quoted "we no longer use pnpm" retracts nothing
    words = "\n".join(own_words(t.text) for t in turns[start:] if t.role == "user")
    jobs = [_Job(index, ch.text, "", words) for ch in chunk_turns(turns[start:], size=size)]
    if jobs:
        jobs[0].context = _context_text(turns, start)
    return jobs


def _offline_found(turns: list[Turn], ref: str, project: str, start: int, recorded: bool = False) -> list[MemoryObject]:
    """The offline candidates of one conversation, assessed, with their fields and scope."""
    found = assess_all_offline(
        extract_offline(
            turns,
            sources=[ref] if ref else [],
            project=project,
            first_turn=start,
            recorded=recorded,
            fields=False,  # derived once, below, after the assessment
        )
    )
    apply_fields(found, turns, offline=True, recorded=recorded)
    for m in found:
        apply_scope(m, project)
    return found


def source_time(src: Source) -> str:
    """When the source was last written (its file's modification time, to the second): the
    last resort for when a statement was made (docs/extraction.md, "Never backwards")."""
    try:
        return format_note_ts(datetime.fromtimestamp(src.path.stat().st_mtime))
    except (OSError, ValueError, OverflowError):
        return ""


def stamp_times(memories: list[MemoryObject], fallback: str) -> None:
    """Each memory's ``source_time``: when its statement was made (the turn's recorded time, the
    snapshot's Updated At), else ``fallback`` (the source file's time)."""
    for m in memories:
        said = m.statement.said_at if m.statement is not None else ""
        m.source_time = said or m.source_time or fallback


@dataclass
class _JobResult:
    memories: list[MemoryObject] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def _run_model_job(
    model: MemoryModel, job: _Job, ref: str, project: str, titles: list[str], res: _JobResult | None = None
) -> _JobResult:
    """The job's memories, skipped items, errors and usage, added to ``res`` (a new result by default)."""
    res = _JobResult() if res is None else res
    try:
        raw, usage = model.extract(job.chunk_text, context=job.context, existing_titles=titles, project=project)
        res.usage.add(usage)
    except LLMError as exc:
        if "usage" in exc.details:  # a reply we could not use was still paid for
            res.usage.add(Usage(**exc.details["usage"]))
        if exc.details.get("malformed"):
            # the model answered, unreadably: skipped with its reason, not asked again on every
            # later run (docs/extraction.md, "Models and compatible servers")
            res.skipped.append({"title": "", "source": ref, "reason": f"model reply unusable: {exc.message}"})
        else:
            res.errors.append(exc.message)
        return res
    raw = normalize_extraction(raw)
    items = raw.get("memories") if isinstance(raw, dict) else None
    if not isinstance(items, list):
        bad = "the model's reply does not match the schema (no 'memories' list)"
        res.skipped.append({"title": "", "source": ref, "reason": f"model reply unusable: {bad}"})
        return res
    for item in items:
        m, why = validate_memory(item)
        if m is None:
            title = str(item["title"]) if isinstance(item, dict) and isinstance(item.get("title"), str) else ""
            res.skipped.append({"title": title[:120], "source": ref, "reason": f"schema: {why}"})
            continue
        if m.action == "ignore":
            continue
        m.sources = [ref] if ref else []
        # the user's own words of this chat: only they can retract a rule note, and a reversal
        # they name retires its note even when the model only created the new rule (curate.py)
        m.evidence = job.user_words
        m.project = m.project or project
        try:
            verdict, usage = model.assess(job.chunk_text, m)
            res.usage.add(usage)
        except LLMError as exc:
            res.skipped.append({"title": m.title, "source": ref, "reason": f"assessment failed: {exc.message}"})
            continue
        score, reason = validate_assessment(verdict)
        if score is None:
            res.skipped.append({"title": m.title, "source": ref, "reason": f"assessment unusable: {reason}"})
            continue
        m.score = score
        m.assessment_reason = reason
        res.memories.append(m)
    return res


def memories_from_turns(
    turns: list[Turn],
    *,
    model: MemoryModel | None = None,
    ref: str = "",
    project: str = "",
    start: int = 0,
    existing_titles: list[str] | None = None,
    min_score: int = 4,
    chunk_chars: int = CHUNK_CHARS,
    said_at: str = "",
) -> tuple[list[MemoryObject], list[dict], list[str], Usage]:
    """Candidates for one conversation, filtered and de-duplicated (no vault involved).
    ``said_at``: when the conversation was held (the memories' ``source_time``).

    Returns (memories, skipped, errors, usage). Used by the evaluation; the vault pipeline does
    the same steps across many sources at once.
    """
    if model is None:
        res = _JobResult(memories=_offline_found(turns, ref, project, start))
    else:
        res = _JobResult()
        for job in _jobs(0, turns, start, chunk_chars):
            _run_model_job(model, job, ref, project, existing_titles or [], res)
        for m in apply_fields(res.memories, turns, offline=False):
            apply_scope(m, project)
    stamp_times(res.memories, said_at)
    kept, dropped = filter_memories(res.memories, min_score=min_score)
    kept, dups = dedupe_batch(kept)
    skipped = res.skipped + [{"title": m.title, "source": ref, "reason": why} for m, why in dropped + dups]
    return kept, skipped, res.errors, res.usage


# -- the vault pipeline ----------------------------------------------------------------------------


def _snapshot_project(path) -> str:  # type: ignore[no-untyped-def]
    """The ``Project`` row of a snapshot's Metadata table ("" when absent or unreadable)."""
    from agentmem_vault.model.snapshot import parse_snapshot

    try:
        text = read_text(path)
        return parse_snapshot(text).metadata.get("Project", "").strip() if text else ""
    except AgentmemError:
        return ""


def source_project(vault: Vault, src: Source, aliases: Aliases) -> Source:
    """``src`` with the project its memories belong to (docs/projects.md): a session's from the
    chat it was registered in, a transcript's from its workspace folder, through the aliases of
    config.yaml; "" (global) with a note saying why when it is unknown."""
    if src.kind == "session":
        sid = src.ref.strip("[]")
        proj = project_of_session(vault, sid) or _snapshot_project(src.path)
        if proj:
            return dataclasses.replace(src, project=aliases.canonical(proj), project_note="")
        return dataclasses.replace(
            src,
            project="",
            project_note=(
                "the chat's workspace was not recorded for this session (registered by hand or before projects "
                "were recorded): its memories are global; `agentmem memories move ID --project NAME` re-scopes one"
            ),
        )
    hooked = chat_pair(vault, src).get("project")  # the hook's workspace for this chat
    if isinstance(hooked, str) and hooked:
        return dataclasses.replace(src, project=aliases.canonical(hooked), project_note="")
    if src.workspace:
        return dataclasses.replace(src, project=identify(src.workspace, aliases).name)
    if src.project:
        return dataclasses.replace(src, project=aliases.canonical(src.project))
    if src.project_note:
        return src
    return dataclasses.replace(
        src,
        project_note=(
            "the source records no workspace: its project memories are unscoped (shown in no project's chats); "
            "give `--project NAME`, or `agentmem memories move ID --project NAME` for one note"
        ),
    )


def extract_sources(
    vault: Vault,
    sources: list[Source],
    *,
    offline: bool | None = None,
    dry_run: bool = False,
    force: bool = False,
    model: MemoryModel | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExtractReport:
    """Extract long-term memories from ``sources`` into ``memory/long-term/`` (see module doc)."""
    t0 = time.perf_counter()
    cfg = vault_config(vault)
    try:
        min_score = int(cfg.get("min_score", 4))
        concurrency = max(1, int(cfg.get("concurrency", 4)))
        chunk_chars = int(cfg.get("extract_chunk_chars", CHUNK_CHARS))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad extraction setting in {vault.config_path}: {exc}") from exc
    if model is None and offline is not True:
        endpoint = endpoint_from(cfg, vault.config_path)
        if endpoint:
            model = model_from_config(cfg, endpoint, prompts_dir=vault.state_dir / "prompts")
        elif offline is False:
            raise ConfigError(
                "no API key: set ANTHROPIC_API_KEY (or anthropic_api_key in the vault config), or use --offline"
            )
    if offline:
        model = None
    report = ExtractReport(
        mode="offline" if model is None else "model",
        dry_run=dry_run,
        model=getattr(model, "model", "") if model else "",
    )

    state = load_state(vault)
    broken: list = []
    existing = load_notes(vault, broken)
    report.broken_notes = [p.name for p in broken]

    # 1. read every source and decide what is new
    work = _read_new_turns(vault, sources, aliases_from_config(cfg), state, report, force=force, progress=progress)

    # 2. candidates
    failed_sources: set[str] = set()
    if model is None:
        candidates = _offline_candidates(work, progress)
    else:
        candidates = _model_candidates(
            model,
            work,
            existing,
            report,
            failed_sources,
            concurrency=concurrency,
            chunk_chars=chunk_chars,
            progress=progress,
        )
        report.cost_usd = estimate_cost(report.usage, report.model, cfg.get("prices"))
    # a chat the hook registered is linked by its Session ID (docs/notes.md, Fields: sources)
    links = {w[0].ref: source_link(vault, w[0]) for w in work}
    for m in candidates:
        m.sources = [links.get(x, x) for x in m.sources]

    # 3. quality layers
    kept, dropped = filter_memories(candidates, min_score=min_score)
    kept, dups = dedupe_batch(kept)
    for m, why in dropped + dups:
        report.skipped.append({"title": m.title, "source": ", ".join(m.sources), "reason": why})

    # 4. curate and write (plan under the lock, on the notes as they are now)
    now = note_now()
    if dry_run:
        actions = plan_curation(kept, existing, now=now, folder=vault.longterm_dir)
        report.actions = [a.to_dict() for a in actions]
    elif work:  # nothing read that is new: nothing to curate, write or record
        with NoteWriter(vault, "extract") as w:
            broken = []
            existing = load_notes(vault, broken)
            actions = plan_curation(kept, existing, now=now, folder=vault.longterm_dir)
            _write_all_or_nothing(w, vault, notes_to_write(actions))
            report.actions = [a.to_dict() for a in actions]
            state = load_state(vault)  # re-read under the lock: another run may have recorded sources meanwhile
            for src, turns, _, fsha, _ in work:
                if src.ref in failed_sources:
                    continue  # retried next time
                state["sources"][src.ref] = {  # the ref: stable when files move
                    "path": str(src.path),
                    "kind": src.kind,
                    "sha": fsha,
                    "turns": len(turns),
                    "prefix_sha": _turns_sha(turns),
                    "updated": now,
                }
            p = _state_path(vault)
            p.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(p, json.dumps(state, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    report.seconds = time.perf_counter() - t0
    return report


def _write_all_or_nothing(w: NoteWriter, vault: Vault, notes: list[Note]) -> None:
    """Every note of this run, or none (a full disk at the third note undoes the first two)."""
    written = 0
    try:
        with w.transaction():
            make_dirs(vault.longterm_dir)
            for note in notes:
                write_note(w, vault, note)
                written += 1
    except IncompleteOperation:
        raise
    except AgentmemError as exc:
        if not written:
            raise  # nothing was written: the error as it is
        raise IncompleteOperation.undone("extract", exc) from exc


# A source with new turns: (source, its turns, the first new turn, the sha of what was read, its report entry)
_Work = tuple[Source, list[Turn], int, str, dict]


def _read_new_turns(
    vault: Vault,
    sources: list[Source],
    aliases: Aliases,
    state: dict,
    report: ExtractReport,
    *,
    force: bool,
    progress: Callable[[int], None] | None,
) -> list[_Work]:
    """Read every source; those with turns not extracted yet (every turn with ``force``)."""
    work: list[_Work] = []
    redact_text = text_redactor()  # the user's rules read once per run, not once per source
    for src in sources:
        src = source_project(vault, src, aliases)
        info: dict[str, Any] = {
            "source": src.ref,
            "kind": src.kind,
            "path": str(src.path),
            "project": src.project or None,
        }
        if src.project_note:
            info["project_note"] = src.project_note
        report.sources.append(info)
        known = state["sources"].get(src.ref) or {}
        try:
            rr = read_source(src, None if force else known.get("sha"), redact_text)
        except AgentmemError as exc:
            info.update(status="error", error=exc.message)
            report.errors.append({"source": src.ref, "error": exc.message})
        else:
            # rr.sha is of what was read: a file that grew since is read again next time
            start = 0 if force else _start_turn(known, rr.turns, rr.sha)
            info.update(turns=len(rr.turns) if rr.turns or start is not None else known.get("turns", 0))
            info.update(skipped_lines=rr.skipped)
            if start is not None:
                info.update(status="processed", new_turns=len(rr.turns) - start)
                work.append((src, rr.turns, start, rr.sha, info))
                continue
            info["status"] = "unchanged"
        if progress:
            progress(1)
    return work


def _offline_candidates(work: list[_Work], progress: Callable[[int], None] | None) -> list[MemoryObject]:
    candidates: list[MemoryObject] = []
    for src, turns, start, _, info in work:
        found = _offline_found(turns, src.ref, src.project, start, recorded=src.kind == "session")
        info["candidates"] = len(found)
        stamp_times(found, source_time(src))
        candidates += found
        if progress:
            progress(1)
    return candidates


def _model_candidates(
    model: MemoryModel,
    work: list[_Work],
    existing: list[Note],
    report: ExtractReport,
    failed_sources: set[str],
    *,
    concurrency: int,
    chunk_chars: int,
    progress: Callable[[int], None] | None,
) -> list[MemoryObject]:
    """The model's candidates, chunk by chunk on ``concurrency`` threads; usage, skipped items and
    errors go to ``report``, the sources with an error to ``failed_sources`` (retried next time)."""
    candidates: list[MemoryObject] = []
    jobs: list[_Job] = []
    for i, (_src, turns, start, _, info) in enumerate(work):
        chunks = _jobs(i, turns, start, chunk_chars)
        info["chunks"] = len(chunks)
        jobs += chunks
    remaining = {i: sum(1 for j in jobs if j.index == i) for i in range(len(work))}
    if progress and any(n == 0 for n in remaining.values()):
        progress(sum(1 for n in remaining.values() if n == 0))

    total = float(getattr(model, "deadline_seconds", DEFAULT_SOURCE_DEADLINE))
    deadlines: dict[int, float] = {}

    def run(job: _Job) -> tuple[_Job, _JobResult]:
        src = work[job.index][0]
        # One total deadline per source, from its first model call (docs/reliability.md).
        dl = deadlines.setdefault(job.index, time.monotonic() + total)
        with source_deadline(dl, total, src.ref):
            return job, _run_model_job(model, job, src.ref, src.project, _similar_titles(existing, job.chunk_text))

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for job, r in pool.map(run, jobs):
            src, _, _, _, info = work[job.index]
            report.usage.add(r.usage)
            report.skipped += r.skipped
            for e in r.errors:
                report.errors.append({"source": src.ref, "error": e})
                failed_sources.add(src.ref)
            for m in apply_fields(r.memories, work[job.index][1], offline=False):
                apply_scope(m, src.project)
            info["candidates"] = info.get("candidates", 0) + len(r.memories)
            stamp_times(r.memories, source_time(src))
            candidates += r.memories
            remaining[job.index] -= 1
            if remaining[job.index] == 0 and progress:
                progress(1)
    return candidates


def progress_wanted(n_sources: int) -> bool:
    """A progress bar only for an interactive terminal or a long run."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return (tty and n_sources > 1) or n_sources >= 50
