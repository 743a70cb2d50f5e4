"""Operations that write a session's snapshot and its index row together: manual registration,
session status update (狀態更新), continue (接續 memory) and release (解除引用).

Each runs under one vault lock inside ``BoardWriter.transaction()``: both the snapshot and the
row are written and verified, or the vault is left exactly as it was and the error says the
operation is incomplete.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator

from agentmem_vault.clock import format_ts, now as clock_now
from agentmem_vault.vault import Vault
from agentmem_vault.config import machine_id, vault_config
from agentmem_vault.errors import (
    AgentmemError,
    IncompleteOperation,
    InvalidSessionId,
    SessionNotFound,
    SnapshotFormatError,
    UsageError,
)
from agentmem_vault.board import table as it
from agentmem_vault.model.ids import base_session_id, validate_session_id
from agentmem_vault.board.rules import (
    CONTINUE_KEYWORDS,
    FIELD_LIMITS,
    MANUAL_FALLBACK_SUMMARY,
    MANUAL_KEYWORDS,
    UPDATE_KEYWORDS,
    check_row_fields,
    is_default_keywords,
    is_placeholder_summary,
    is_placeholder_topic,
    pick_topic,
    summary_from_snapshot,
)
from agentmem_vault.ops.conversations import record_session_project
from agentmem_vault.board.register import Registration
from agentmem_vault.board.ids import issue_session_id
from agentmem_vault.model.snapshot import Snapshot, parse_snapshot, render_snapshot
from agentmem_vault.model.snapshot_merge import marked_by_merge, merge_snapshots, new_snapshot, with_continues_from
from agentmem_vault.model.session_props import BoardFacts
from agentmem_vault.ops.session_files import render_like, resync_session, write_session_file
from agentmem_vault.board.store import BoardWriter
from agentmem_vault.fs import read_text


@contextmanager
def _all_or_nothing(vault: Vault, command: str, what: str) -> Iterator[BoardWriter]:
    """One lock, one transaction: a failure after the first write undoes everything and is
    reported as an incomplete operation (docs/board.md: never claim what did not happen)."""
    try:
        with BoardWriter(vault, command) as w, w.transaction():
            yield w
    except (SessionNotFound, UsageError, SnapshotFormatError, IncompleteOperation, InvalidSessionId):
        raise
    except AgentmemError as exc:
        raise IncompleteOperation.undone(what, exc) from exc


def snapshot_limit(vault: Vault) -> int:
    """``max_snapshot_bytes``: the most an incoming snapshot may be, also while it is being read.
    A snapshot is a page of Markdown written by an agent; megabytes mean a pasted log or a runaway
    tool, which would bloat every later merge and the board's readers (docs/mcp.md: bad input)."""
    return int(vault_config(vault)["max_snapshot_bytes"])


def _incoming(text: str | None, vault: Vault) -> Snapshot | None:
    """The incoming snapshot, checked before the vault lock is taken: empty and oversized input
    is refused up front, so a huge paste never holds the lock while other writers time out."""
    if text is None:
        return None
    limit = snapshot_limit(vault)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise SnapshotFormatError(
            f"the incoming snapshot is {size:,} bytes, over the limit of {limit:,} (max_snapshot_bytes in "
            "memory/.agentmem/config.yaml; keep it to the session's summary, not logs or file contents); "
            "nothing was written"
        )
    if not text.strip():
        raise SnapshotFormatError("the incoming snapshot is empty; nothing was written")
    # redacted before the merge, so it compares with the stored (redacted) snapshot (docs/redaction.md)
    from agentmem_vault.redaction import redact_text

    return parse_snapshot(redact_text(text))


def register_manual(
    vault: Vault,
    agent: str,
    *,
    topic: str | None = None,
    summary: str | None = None,
    keywords: str | None = None,
    snapshot_text: str | None = None,
    writer: BoardWriter | None = None,
    workspace: str = "",
    project: str = "",
) -> Registration:
    """Manual registration: snapshot first, then the active row; the ID is returned only after both
    verified (the caller prints it). With ``writer`` it joins that writer's lock and transaction,
    so a larger operation (continue) can undo it. No content (no snapshot, or a blank one) is the
    fallback registration of docs/board.md: the snapshot's Current Context holds the Summary."""
    check_row_fields(topic=topic, summary=summary, keywords=keywords)
    if snapshot_text is not None and not snapshot_text.strip():
        snapshot_text = None
    incoming = _incoming(snapshot_text, vault)
    if incoming is None:
        incoming = parse_snapshot(f"## Current Context\n{' '.join((summary or MANUAL_FALLBACK_SUMMARY).split())}\n")
    when = clock_now()
    ts = format_ts(when)
    with nullcontext(writer) if writer is not None else BoardWriter(vault, "register --manual") as w, w.transaction():
        doc = w.index(strict=True)
        sid = issue_session_id(vault, doc, base_session_id(when, agent, machine_id()))
        use_topic = pick_topic(topic, incoming.topic if incoming else None)
        snap = new_snapshot(sid, agent, use_topic, ts, ts, incoming=incoming)
        summary_cell = summary or summary_from_snapshot(snap) or MANUAL_FALLBACK_SUMMARY
        row = it.Row(sid, agent, use_topic, summary_cell, keywords or MANUAL_KEYWORDS, "active", "-", ts, ts)
        if workspace or project:  # the session's project (docs/projects.md), before its snapshot records it
            proj = record_session_project(vault, sid, agent, project=project, workspace=workspace)
            if proj and not snap.metadata.get("Project", "").strip():
                snap.metadata["Project"] = proj
        # the snapshot first (docs/board.md "Writing rules"), its Properties already from the row written next
        write_session_file(
            w, vault.session_path(sid), render_snapshot(snap), session_id=sid, board=BoardFacts.from_row(row)
        )
        w.append_row(row)
        _verify_snapshot(vault, sid)
    return Registration(sid, row)


def registration_result(vault: Vault, reg: Registration) -> dict:
    """A manual registration as the CLI's --json and the MCP tool answer it."""
    path = str(vault.session_path(reg.session_id))
    return {"session_id": reg.session_id, "row": reg.row.to_dict(), "snapshot_path": path, "message": reg.message}


def _verify_snapshot(vault: Vault, sid: str) -> Snapshot:
    text = read_text(vault.session_path(sid))
    if text is None:
        raise IncompleteOperation(f"snapshot {sid} is missing after the write")
    snap = parse_snapshot(text)
    if snap.session_id != sid:
        raise IncompleteOperation(f"snapshot {vault.session_path(sid)} names Session ID {snap.session_id!r}")
    return snap


def with_marked(line: str, marked: list[str]) -> str:
    """A merge's report: ``line`` and one ``marked:`` line per item the merge marked (update and
    continue both name them, docs/snapshots.md)."""
    return "\n".join([line, *(f"  marked: {m}" for m in marked)])


@dataclass
class UpdateResult:
    session_id: str
    snapshot_created: bool
    snapshot_changed: bool
    row_before: it.Row
    row_after: it.Row
    marked: list[str] = field(default_factory=list)  # Superseded / Resolved entries this merge added

    @property
    def message(self) -> str:
        # Honest about whether the snapshot changed, and naming every item the merge marked.
        verb = "created" if self.snapshot_created else ("merged" if self.snapshot_changed else "unchanged")
        line = f"updated {self.session_id}: snapshot {verb}, row active (Updated At {self.row_after.updated_at})"
        return with_marked(line, self.marked)

    def to_dict(self) -> dict:
        return {**asdict(self), "row_before": self.row_before.to_dict(), "row_after": self.row_after.to_dict()}


@dataclass
class ContinueResult:
    session_id: str
    source: str
    registered: str | None  # the ID given to this chat by a manual registration, if one was needed
    already_linked: bool
    message: str
    marked: list[str] = field(default_factory=list)  # Superseded / Resolved entries this merge added

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ReleaseResult:
    source: str
    session_id: str
    row_changed: bool
    snapshot_changed: bool

    @property
    def message(self) -> str:
        if self.row_changed or self.snapshot_changed:
            return f"{self.session_id} no longer continues from {self.source}"
        return f"{self.session_id} did not reference {self.source}; nothing to do"

    def to_dict(self) -> dict:
        return {**asdict(self), "message": self.message}


def _write_session(
    w: BoardWriter,
    sid: str,
    row: it.Row,
    *,
    incoming: Snapshot | None,
    ts: str,
    board: Callable[[Snapshot], BoardFacts],
    topic: str | None = None,
    add_sources: tuple[str, ...] = (),
    context_note: str | None = None,
    touch: bool = False,
) -> tuple[Snapshot, bool, bool, list[str]]:
    """Create or merge the snapshot of ``sid``; returns (snapshot, created, content_changed, the
    Superseded / Resolved entries the merge added). ``board``: the row the caller writes next, so
    that its Properties land in this write.

    ``touch``: a status update always records its time (docs/board.md: Updated At matches the
    update), even when the merge added nothing; continue/release leave an unchanged file alone."""
    vault = w.vault
    path = vault.session_path(sid)
    existing = read_text(path)
    if existing is None:
        if incoming is None and context_note is None:
            raise UsageError(
                f"session {sid} has no snapshot yet: pass the snapshot on stdin or with --snapshot FILE "
                "(a status update always writes memory/sessions/<id>.md as well as the row)"
            )
        base_topic = pick_topic(topic, incoming.topic if incoming else None, row.topic)
        snap = new_snapshot(sid, row.agent_name, base_topic, row.started_at, ts, incoming=incoming)
        created = True
    else:
        try:
            old = parse_snapshot(existing)
        except SnapshotFormatError as exc:
            raise SnapshotFormatError(
                f"the existing snapshot {path} cannot be read ({exc.message}); fix it by hand first — nothing was written"
            ) from exc
        if old.session_id and old.session_id != sid:
            raise SnapshotFormatError(f"{path} names Session ID {old.session_id}; refusing to merge into it")
        snap = merge_snapshots(old, incoming, updated_at=ts) if incoming is not None else old
        created = False
    if topic:
        snap.metadata["Topic"] = topic
    if add_sources:
        snap = with_continues_from(snap, add=list(add_sources))
    if context_note and not any(context_note in p for p in snap.items("Current Context")):
        snap = merge_snapshots(snap, parse_snapshot(f"## Current Context\n{context_note}\n"), updated_at=ts)
    snap.metadata["Status"] = "active"
    if not snap.metadata.get("Project", "").strip():
        # The project the chat was registered in (docs/projects.md), kept in the snapshot itself so
        # that it survives without tool state; shown as the `project` Property (docs/obsidian.md).
        from agentmem_vault.ops.conversations import project_of_session

        proj = project_of_session(vault, sid)
        if proj:
            snap.metadata["Project"] = proj
    marked = marked_by_merge(parse_snapshot(existing), snap) if existing is not None else []
    new_text = render_like(snap, existing)
    same = existing is not None and _same_but_time(existing, new_text)
    if same and not touch:
        return snap, False, False, marked  # nothing new: keep the file (and Updated At) as it was
    snap.metadata["Updated At"] = ts
    write_session_file(w, path, render_like(snap, existing), session_id=sid, board=board(snap))
    return snap, created, not same, marked


def _same_but_time(a: str, b: str) -> bool:
    def strip(t: str) -> list[str]:
        return [ln for ln in t.replace("\r\n", "\n").lstrip("\ufeff").split("\n") if not ln.startswith("| Updated At")]

    return strip(a) == strip(b)


def update_session(
    vault: Vault,
    session_id: str,
    *,
    snapshot_text: str | None = None,
    topic: str | None = None,
    summary: str | None = None,
    keywords: str | None = None,
    workspace: str = "",
    project: str = "",
) -> UpdateResult:
    """狀態更新: create or merge the snapshot, then update only that row (Status active, Updated At);
    Started At and Referenced By unchanged."""
    sid = validate_session_id(session_id)
    check_row_fields(topic=topic, summary=summary, keywords=keywords)
    incoming = _incoming(snapshot_text, vault)
    ts = format_ts(clock_now())
    with _all_or_nothing(vault, "update", f"update of {sid}") as w:
        doc = w.index()
        doc.check_writable()
        row = doc.get(sid)

        def updated(r: it.Row, snap: Snapshot) -> it.Row:
            new_topic = topic or (snap.topic if not is_placeholder_topic(snap.topic) else r.topic)
            # Summary: as given, else re-derived from the merged Current Context on every update
            # (docs/board.md: the row says what the snapshot says, shorter).
            new_summary = summary or summary_from_snapshot(snap) or r.summary
            new_kw = keywords or (UPDATE_KEYWORDS if is_default_keywords(r.keywords) else r.keywords)
            return r.with_(topic=new_topic, summary=new_summary, keywords=new_kw, status="active", updated_at=ts)

        if (workspace or project) and (incoming is not None or topic or summary or keywords):
            # the session's project (docs/projects.md), before its snapshot records it; a bare
            # update that brings nothing leaves the snapshot as it was
            record_session_project(vault, sid, row.agent_name, project=project, workspace=workspace)
        snap, created, changed, marked = _write_session(
            w,
            sid,
            row,
            incoming=incoming,
            ts=ts,
            topic=topic,
            touch=True,
            board=lambda s: BoardFacts.from_row(updated(row, s)),
        )
        before, after = w.update_row(sid, lambda r: updated(r, snap))
        written = _verify_snapshot(vault, sid)
        if written.metadata.get("Updated At") != ts or after.updated_at != ts:
            raise IncompleteOperation(f"Updated At of {sid} does not match {ts} after the write")
    return UpdateResult(sid, created, changed, before, after, marked)


def continue_session(
    vault: Vault,
    source_id: str,
    *,
    session_id: str | None = None,
    agent: str | None = None,
    snapshot_text: str | None = None,
) -> ContinueResult:
    """接續 memory SOURCE: the current session lists SOURCE in Continues From, SOURCE's row lists the
    current ID in Referenced By (nothing else of SOURCE changes). Registers manually first when the
    current session has no ID."""
    src = validate_session_id(source_id)
    if session_id is None and not agent:
        raise UsageError("continue needs --session ID (or an agent name to register this session manually)")
    cur = validate_session_id(session_id) if session_id is not None else None
    if cur == src:
        raise UsageError("a session cannot continue from itself")
    incoming = _incoming(snapshot_text, vault) if cur is not None else None
    ts = format_ts(clock_now())
    registered = None
    # One lock and one transaction for the registration and the bookkeeping: if the links cannot
    # be written, the new row and snapshot go too (their ID was never reported).
    with _all_or_nothing(vault, "continue", f"continuation from {src}") as w:
        doc = w.index()
        doc.check_writable()
        source_row = doc.get(src)
        if cur is None:
            registered = register_manual(
                vault,
                agent or "",
                # A hand-edited source topic may be any length; the summary stays within its limit.
                summary=f"接續 {src}：{source_row.topic}"[: FIELD_LIMITS["summary"]],
                writer=w,
                snapshot_text=snapshot_text
                or f"## Current Context\n接續 {src}（{source_row.topic}）。\n\n## Continues From\n- {src}\n",
            )
            cur = registered.session_id
            doc = w.index()
        cur_row = doc.get(cur)
        note = f"接續 {src}（{source_row.topic}）。"

        def updated(r: it.Row, snap: Snapshot, changed: bool) -> it.Row:
            return r.with_(
                status="active",
                summary=(summary_from_snapshot(snap) or r.summary) if is_placeholder_summary(r.summary) else r.summary,
                keywords=CONTINUE_KEYWORDS if is_default_keywords(r.keywords) else r.keywords,
                updated_at=ts if (changed or r.status != "active") else r.updated_at,
            )

        # the snapshot is only written when its content changed: its Properties from that row
        snap, created, changed, marked = _write_session(
            w,
            cur,
            cur_row,
            incoming=incoming,
            ts=ts,
            add_sources=(src,),
            context_note=note,
            board=lambda s: BoardFacts.from_row(updated(cur_row, s, True)),
        )
        if src not in snap.continues_from:
            raise IncompleteOperation(f"Continues From of {cur} does not list {src} after the write")
        w.update_row(cur, lambda r: updated(r, snap, changed))
        refs = source_row.referencing_ids
        if cur not in refs:
            w.update_row(src, lambda r: r.with_(referenced_by=it.join_id_list(r.referencing_ids + [cur])))
        if cur not in w.index().get(src).referencing_ids:
            raise IncompleteOperation(f"Referenced By of {src} does not list {cur} after the write")
        resync_session(w, cur)
        resync_session(w, src)
    return ContinueResult(
        cur,
        src,
        registered.session_id if registered else None,
        not changed and cur in refs and not created,
        with_marked((registered.message + "\n" if registered else "") + f"{cur} continues from {src}", marked),
        marked,
    )


def release_reference(vault: Vault, source_id: str, *, session_id: str) -> ReleaseResult:
    """解除引用: remove ID from SOURCE's Referenced By (``-`` when empty) and SOURCE from ID's
    Continues From (``None`` when empty). Idempotent."""
    src = validate_session_id(source_id)
    cur = validate_session_id(session_id)
    ts = format_ts(clock_now())
    changed_row = changed_snap = False
    with _all_or_nothing(vault, "release", f"release of {src} by {cur}") as w:
        doc = w.index()
        doc.check_writable()
        src_row = doc.find(src)
        path = vault.session_path(cur)
        existing = read_text(path)
        if src_row is None and existing is None:
            raise SessionNotFound(f"neither a row for {src} nor a snapshot for {cur} exists")
        if existing is not None:
            snap = parse_snapshot(existing)
            if src in snap.continues_from:
                snap = with_continues_from(snap, remove=[src])
                snap.metadata["Updated At"] = ts
                changed_snap = write_session_file(w, path, render_like(snap, existing), session_id=cur)
                if changed_snap and doc.find(cur) is not None:
                    # the snapshot's Updated At moved: the row's moves with it (docs/board.md: in step)
                    w.update_row(cur, lambda r: r.with_(updated_at=ts))
        if src_row is not None and cur in src_row.referencing_ids:
            w.update_row(
                src, lambda r: r.with_(referenced_by=it.join_id_list([x for x in r.referencing_ids if x != cur]))
            )
            changed_row = True
        if src_row is not None and cur in w.index().get(src).referencing_ids:
            raise IncompleteOperation(f"{src} still lists {cur} in Referenced By")
        if existing is not None and src in parse_snapshot(read_text(path) or "").continues_from:
            raise IncompleteOperation(f"{cur} still lists {src} in Continues From")
        resync_session(w, src)
    return ReleaseResult(src, cur, changed_row, changed_snap)
