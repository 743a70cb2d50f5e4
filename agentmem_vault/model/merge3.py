"""Three-way merges of the files agentmem owns, for git's merge driver (pure: texts in, text out;
the rules are docs/sync.md). Text these functions do not own (lines outside the board's table, a
note's body) goes to the line merge the caller injects (``git merge-file``), so it merges exactly as
git would; anything that cannot be merged safely raises ``Unmergeable`` and the driver falls back to
git's own merge with conflict markers, so a person decides and nothing is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence, TypeVar

from agentmem_vault.errors import AgentmemError, Unmergeable
from agentmem_vault.board import table as it
from agentmem_vault.board.rules import ts_key  # the board's one time order, unreadable times first
from agentmem_vault.model.snapshot import CONTINUES_FROM, Snapshot, continues_ids, parse_snapshot, render_snapshot

# (base, ours, theirs) -> (merged text, clean). Conflicting hunks carry standard conflict markers.
LineMerge = Callable[[str, str, str], tuple[str, bool]]
T = TypeVar("T")
_MISSING: Any = object()


@dataclass
class MergeOutcome:
    text: str
    clean: bool  # False: conflict markers were left where a person must decide
    reports: list[str] = field(default_factory=list)  # one line each: what happened and why


# -- the board ------------------------------------------------------------------------------------


def _parse_board(text: str, side: str) -> it.IndexDoc:
    doc = it.parse_index(text)
    if doc.bad:
        first = doc.bad[0]
        raise Unmergeable(f"{side}: line {first.line_no} of the board cannot be read ({first.reason})")
    dups = doc.duplicate_ids()
    if dups:
        raise Unmergeable(f"{side}: Session ID {dups[0]} has more than one row")
    return doc


def _rows(doc: it.IndexDoc) -> dict[str, it.Row]:
    return {r.session_id: r for r in doc.row_list()} if doc.header_at is not None else {}


def _outside(doc: it.IndexDoc) -> tuple[str, str]:
    """The text before the table and after it (the whole text when there is no table)."""
    if doc.header_at is None:
        return "".join(doc.lines), ""
    return "".join(doc.lines[: doc.header_at]), "".join(doc.lines[doc.table_end :])


def _merge_value(o: T | None, a: T, b: T, later_is_a: bool) -> T:
    """One value changed on one side takes that side's; changed on both, lists (keywords, sources,
    tags, ...) are unioned and other values take the later side's (docs/sync.md)."""
    if a == b or b == o:
        return a
    if a == o:
        return b
    if isinstance(a, list) and isinstance(b, list):
        return list(dict.fromkeys([*a, *b]))  # type: ignore[return-value]
    return a if later_is_a else b


def merge_rows(o: it.Row | None, a: it.Row, b: it.Row) -> it.Row:
    """One Session ID changed on both sides: field by field (docs/sync.md)."""
    if a == b:
        return a
    if o is not None and a == o:
        return b
    if o is not None and b == o:
        return a
    later = a if ts_key(a.updated_at) >= ts_key(b.updated_at) else b
    out: dict[str, str] = {}
    for name in it.FIELD_NAMES:
        av, bv = getattr(a, name), getattr(b, name)
        ov = getattr(o, name) if o is not None else None
        if name == "referenced_by":  # both sides' IDs, minus what either side removed from the base (a release)
            o_ids, a_ids, b_ids = (it.split_id_list(v or "") for v in (ov, av, bv))
            removed = set(o_ids) - set(a_ids) | (set(o_ids) - set(b_ids))
            out[name] = it.join_id_list(list(dict.fromkeys(x for x in (*a_ids, *b_ids) if x not in removed)))
        else:
            out[name] = _merge_value(ov, av, bv, later is a)
    return it.Row(**out)


def _order(a_ids: list[str], b_ids: list[str], keep: set[str], base: set[str]) -> list[str]:
    """Ours' order; a row only theirs has goes after the row it followed on their side, and among
    rows both sides appended there, in Session ID order (IDs start with their registration time)."""
    result = [x for x in a_ids if x in keep]
    placed = set(result)
    prev: str | None = None
    for x in b_ids:
        if x in keep and x not in placed:
            at = result.index(prev) + 1 if prev is not None and prev in placed else (0 if prev is None else len(result))
            while at < len(result) and result[at] not in base and result[at] < x:
                at += 1
            result.insert(at, x)
            placed.add(x)
        if x in placed:
            prev = x
    return result


def merge_board(base: str, ours: str, theirs: str, line_merge: LineMerge) -> MergeOutcome:
    """Three-way merge of ``memory/index.md``: rows by Session ID, the rest by ``line_merge``."""
    o_doc, a_doc, b_doc = (_parse_board(base, "base"), _parse_board(ours, "ours"), _parse_board(theirs, "theirs"))
    o, a, b = _rows(o_doc), _rows(a_doc), _rows(b_doc)
    reports: list[str] = []
    merged: dict[str, it.Row] = {}
    for sid in dict.fromkeys([*a, *b]):
        ro, ra, rb = o.get(sid), a.get(sid), b.get(sid)
        if ra is not None and rb is not None:
            if ro is None and ra != rb:
                reports.append(
                    f"row {sid} was added on both sides with different content (one Session ID given on two "
                    "machines?): merged field by field; `agentmem install-merge-driver` sets a machine id "
                    "that prevents this"
                )
            merged[sid] = merge_rows(ro, ra, rb)
        else:
            kept, other = (ra, "theirs") if ra is not None else (rb, "ours")
            assert kept is not None
            if ro is None:
                merged[sid] = kept  # added on one side
            elif kept != ro:
                merged[sid] = kept  # deleted on one side, changed on the other: a change is never lost
                reports.append(
                    f"row {sid} was deleted in {other} but changed on the other side: kept it "
                    f"(archive or organize it again if it should go)"
                )
            # else: deleted on one side, unchanged on the other -> deleted
    order = _order(list(a), list(b), set(merged), set(o))

    # Text outside the table: git's own line merge, part by part.
    pre, post = zip(*(_outside(d) for d in (o_doc, a_doc, b_doc)), strict=True)
    pre_text, pre_clean = _merge_part(pre, line_merge)
    post_text, post_clean = _merge_part(post, line_merge)
    if not (pre_clean and post_clean):
        reports.append(
            "text outside the board's table changed on both sides at the same place: left conflict markers there"
        )

    head_doc = a_doc if a_doc.header_at is not None else b_doc if b_doc.header_at is not None else None
    nl = head_doc.newline if head_doc is not None else "\n"
    if head_doc is not None and head_doc.header_at is not None:
        header = "".join(head_doc.lines[head_doc.header_at : head_doc.header_at + 2])
        if not header.endswith(("\n", "\r")):
            header += nl
    else:
        header = it.header_lines(nl) if merged else ""
    raw_a = {sid: it.strip_eol(a_doc.lines[i]) for i, sid in a_doc.row_ids} if a_doc.header_at is not None else {}
    body = "".join((raw_a[sid] if a.get(sid) == merged[sid] else it.render_row(merged[sid])) + nl for sid in order)
    if pre_text and header and not pre_text.endswith(("\n", "\r")):
        pre_text += nl
    text = pre_text + header + body + post_text
    if a_doc.bom:
        text = it.BOM + text
    added = [sid for sid in order if sid not in a]
    if added:
        reports.insert(
            0, f"took {len(added)} row(s) from theirs: {', '.join(added[:5])}{' …' if len(added) > 5 else ''}"
        )
    return MergeOutcome(text, pre_clean and post_clean, reports)


def _merge_part(parts: Sequence[str], line_merge: LineMerge) -> tuple[str, bool]:
    o, a, b = parts
    if a == b or b == o:
        return a, True
    if a == o:
        return b, True
    return line_merge(o, a, b)


# -- snapshots ------------------------------------------------------------------------------------


def _parse_snap(text: str, side: str) -> Snapshot:
    try:
        snap = parse_snapshot(text)
    except AgentmemError as e:
        raise Unmergeable(f"{side}: the snapshot cannot be read ({e.message})") from e
    if not snap.metadata:
        raise Unmergeable(f"{side}: not a session snapshot (no Metadata table)")
    return snap


def _merge_mapping(
    o: Mapping[str, T], a: Mapping[str, T], b: Mapping[str, T], later_is_a: bool, *, deletions: bool
) -> dict[str, T]:
    """Key by key: a key both sides have by ``_merge_value``; a key one side lacks keeps the other's
    value, unless ``deletions`` and that side removed it while the other left it as in the base."""
    out: dict[str, T] = {}
    for k in dict.fromkeys([*a, *b]):
        if k in a and k in b:
            out[k] = _merge_value(o.get(k), a[k], b[k], later_is_a)
        elif not (deletions and k in o and (a[k] if k in a else b[k]) == o[k]):
            out[k] = a[k] if k in a else b[k]
    return out


def merge_snapshot_texts(base: str, ours: str, theirs: str) -> MergeOutcome:
    """Three-way merge of one session snapshot: every item of both sides survives (placed or
    marked and moved); Continues From loses only what one side released; Metadata field by field."""
    from agentmem_vault.model.snapshot_merge import merge_snapshots, verify_merge, with_continues_from

    a = _parse_snap(ours, "ours")
    b = _parse_snap(theirs, "theirs")
    o = _parse_snap(base, "base") if base.strip() else Snapshot()
    if a.session_id and b.session_id and a.session_id != b.session_id:
        raise Unmergeable(f"ours is session {a.session_id} but theirs is {b.session_id}")
    if a == b:
        return MergeOutcome(ours, True, [])
    later_is_a = ts_key(a.metadata.get("Updated At", "")) >= ts_key(b.metadata.get("Updated At", ""))
    meta = _merge_mapping(o.metadata, a.metadata, b.metadata, later_is_a, deletions=False)
    try:
        merged = merge_snapshots(a, b, updated_at=meta.get("Updated At", ""))
        # Marks win: merging ours in again applies its marks ([done], [resolved], ...) to the
        # unmarked copies theirs still has (the merge is idempotent otherwise).
        merged = merge_snapshots(merged, a, updated_at=meta.get("Updated At", ""))
    except AgentmemError as e:
        raise Unmergeable(e.message) from e
    merged.metadata = meta
    o_ids = o.continues_from
    released = (set(o_ids) - set(a.continues_from)) | (set(o_ids) - set(b.continues_from))
    if released:
        merged = with_continues_from(merged, remove=released)
    for side, snap in (("ours", a), ("theirs", b)):
        # the frontmatter is merged key by key below, not kept whole
        lost = [m for m in verify_merge(snap, merged) if not _is_released(m, released) and m != "YAML frontmatter"]
        if lost:
            raise Unmergeable(f"merging would lose {len(lost)} item(s) of {side} ({lost[0]})")
    merged.frontmatter = _merge_properties(o, a, b, merged, later_is_a)
    text = render_snapshot(merged, newline="\r\n" if a.crlf else "\n", bom=a.bom)
    reports = [f"merged snapshot {merged.session_id or '(no id)'} section by section"]
    if released:
        reports.append(f"kept the release of {', '.join(sorted(released))} from Continues From")
    return MergeOutcome(text, True, reports)


def _merge_properties(o: Snapshot, a: Snapshot, b: Snapshot, merged: Snapshot, later_is_a: bool) -> str | None:
    """The Obsidian Properties of the merged snapshot (docs/obsidian.md): merged key by key, then
    the keys copied from the Metadata table and Continues From put in step with the merged ones
    (the board's keys follow on the daemon's or doctor's next pass)."""
    from datetime import date

    from agentmem_vault.model import session_props as sp

    if a.frontmatter is None and b.frontmatter is None:
        return None
    expected = sp.expected_props(
        merged.metadata, merged.continues_from, session_id=merged.session_id, kind=sp.LIVE, board=None
    )
    expected.pop("status", None)  # the board's status, not the table's, is what the properties show
    try:
        fo, fa, fb = (sp.parse_frontmatter(s.frontmatter).data if s.frontmatter is not None else {} for s in (o, a, b))
        # A key changed on one side takes that side's value, lists changed on both are united,
        # other values changed on both take the later side's; ours' layout is kept, and a key
        # removed on one side stays removed.
        changes: dict[str, Any] = {}
        for key in fb:
            ov, av = fo.get(key, _MISSING), fa.get(key, _MISSING)
            if av is _MISSING and ov is not _MISSING:
                continue  # removed on ours
            value = _merge_value(ov, av, fb[key], later_is_a)  # added on theirs when both are _MISSING
            if value is not av and not isinstance(value, dict):
                changes[str(key)] = sp.normal(key, value) if isinstance(value, date) or key in sp.LIST_KEYS else value
        merged_fm = sp.sync_frontmatter(a.frontmatter, changes) if changes or a.frontmatter is not None else ""
        # then the managed keys in step with the merged tables
        return sp.sync_frontmatter(merged_fm, expected)
    except AgentmemError as e:
        raise Unmergeable(f"the Properties cannot be merged ({e.message})") from e


def _is_released(missing: str, released: set[str]) -> bool:
    prefix = f"{CONTINUES_FROM}: "
    return missing.startswith(prefix) and all(i in released for i in continues_ids(missing[len(prefix) :]))


# -- long-term notes -----------------------------------------------------------------------------


def merge_note_texts(base: str, ours: str, theirs: str, line_merge: LineMerge) -> MergeOutcome:
    """Three-way merge of a long-term note: properties field by field (lists unioned, the newer
    ``updated`` wins for a value changed on both sides), History entries of both sides in time
    order, the body by ``line_merge``."""
    import dataclasses

    from agentmem_vault.model.notes import parse_note, render_note  # YAML/frontmatter only when a note is merged

    notes: list[Any] = []
    for side, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        if side == "base" and not text.strip():
            notes.append(None)
            continue
        try:
            notes.append(parse_note(text))
        except AgentmemError as e:
            raise Unmergeable(f"{side}: the note cannot be read ({e.message})") from e
    o, a, b = notes
    assert a is not None and b is not None
    if a == b:
        return MergeOutcome(ours, True, [])
    later_is_a = ts_key(str(a.updated)) >= ts_key(str(b.updated))
    changes: dict[str, object] = {}
    for f in dataclasses.fields(a):
        if not f.compare or f.name in ("content", "history"):
            continue
        av, bv = getattr(a, f.name), getattr(b, f.name)
        ov = getattr(o, f.name) if o is not None else None
        if isinstance(av, dict) and isinstance(bv, dict):
            changes[f.name] = _merge_mapping(ov if isinstance(ov, dict) else {}, av, bv, later_is_a, deletions=True)
        else:
            changes[f.name] = _merge_value(ov, av, bv, later_is_a)
    history: dict[tuple[str, str], Any] = {}  # both sides' entries, each once, in time order
    for h in sorted([*a.history, *b.history], key=lambda h: ts_key(h.when)):
        history.setdefault((h.when, h.text.strip()), h)
    body, clean = _merge_part([(n.content.strip("\n") + "\n") if n is not None else "" for n in (o, a, b)], line_merge)
    body = body.rstrip("\n")
    merged = dataclasses.replace(a, **changes, content=body, history=list(history.values()))
    reports = [f"merged note {a.id or a.title} field by field"]
    if not clean:
        reports.append("the note's text changed on both sides at the same place: left conflict markers there")
    return MergeOutcome(render_note(merged), clean, reports)
