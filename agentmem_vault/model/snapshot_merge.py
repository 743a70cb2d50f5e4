"""Merge an incoming snapshot into the existing one, section by section, pure. The rules are
docs/snapshots.md ("Merge table" and the rules under it): a snapshot is never overwritten, old
items stay (possibly marked and moved), incoming items are added, a restatement stays one item,
a revision takes the old item's place, and ``verify_merge`` proves that every old item survived.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Callable, Iterable

from agentmem_vault.errors import SnapshotFormatError, SnapshotMergeError
from agentmem_vault.model.ids import is_valid_session_id
from agentmem_vault.model.snapshot import (
    CONTINUES_FROM,
    CURRENT_CONTEXT,
    DECISIONS,
    FILES,
    METADATA,
    METADATA_FIELDS,
    NEXT_ACTIONS,
    OPEN_QUESTIONS,
    RESOLVED,
    SECTIONS,
    ExtraSection,
    Snapshot,
    clean_id,
    continues_ids,
    in_render_order,
    linked_item,
    section_name,
)
from agentmem_vault.board.rules import is_placeholder_topic
from agentmem_vault.model.textnorm import fold

MOVABLE: tuple[str, ...] = (DECISIONS, FILES, OPEN_QUESTIONS, NEXT_ACTIONS)
REVISABLE: tuple[str, ...] = (CURRENT_CONTEXT, DECISIONS)
KIND_ORIGIN = {"superseded": DECISIONS, "resolved": OPEN_QUESTIONS, "done": NEXT_ACTIONS}
SUPERSEDED = "[superseded]"
_MARK_WORDS = {
    "superseded": ("superseded", "已取代", "已替代", "replaced", "obsolete"),
    "resolved": ("resolved", "已解決", "已解决", "answered"),
    "done": ("done", "已完成", "x", "completed", "abandoned", "已放棄", "cancelled", "canceled", "已取消"),
}
_MARKS = {fold(w): kind for kind, words in _MARK_WORDS.items() for w in words}

# A revision shares most of its words with the old item: "Retry up to 5 times with exponential
# backoff" -> "... 8 times ..." is 6 of 7 tokens; two different decisions rarely share 60 % of
# their words in order. A false revision marks an item, never loses it (docs/snapshots.md).
REVISION_RATIO = 0.6
REVISION_MIN_TOKENS = 3
MAX_CANDIDATES = 48  # old items scored per incoming item: keeps a merge near-linear
COMMON_TOKEN = 64  # a token in more old items than this ("the", "的") finds no candidates

# -- marks, keys, grams -------------------------------------------------------------------------

_PREFIX_MARK = re.compile(r"^(?:\*\*|__)?(\[([^\[\]\n]{1,24})\])(?:\*\*|__)?[ \t]*")
_SUFFIX_MARK = re.compile(r"[ \t]*(?:\*\*|__)?(\[([^\[\]\n]{1,24})\])(?:\*\*|__)?$")
_ORIGIN = re.compile(r"^[(（]([^()（）\n]{1,40})[)）][ \t]*")
_MD_NOISE = re.compile(r"`|\*\*|__|~~")
_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_SPACE = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")


def split_mark(item: str) -> tuple[str | None, str | None, str]:
    """``"[done] write tests"`` -> ``("[done]", "done", "write tests")``; unmarked -> ``(None, None, item)``."""
    s = item.strip()
    for rx, cut in ((_PREFIX_MARK, lambda m: s[m.end() :]), (_SUFFIX_MARK, lambda m: s[: m.start()])):
        m = rx.search(s)
        if m:
            kind = _MARKS.get(fold(m.group(2)))
            rest = cut(m).strip()
            if kind and rest:
                return m.group(1), kind, rest
    return None, None, s


def parse_resolved(entry: str) -> tuple[str | None, str | None, str | None, str]:
    """``"[done] (Next Actions) x"`` -> ``(mark, kind, origin section or None, text)``."""
    mark, kind, text = split_mark(entry)
    m = _ORIGIN.match(text)
    origin = section_name(m.group(1)) if m else None
    if m and origin in SECTIONS and text[m.end() :].strip():
        text = text[m.end() :].strip()
        if mark is None:  # "(Decisions) [superseded] B"
            mark, kind, text = split_mark(text)
    else:
        origin = None
    return mark, kind, origin, text


@lru_cache(maxsize=1 << 16)
def item_key(text: str) -> str:
    """Exact-duplicate key: folded, Markdown emphasis, trailing punctuation and the spacing
    around CJK characters (``使用 SQLite`` = ``使用SQLite``) ignored."""
    return _CJK_SPACE.sub("", fold(_MD_NOISE.sub("", text))).rstrip("。.;；,，!！ ")


@lru_cache(maxsize=1 << 14)
def path_key(text: str) -> str:
    """Files / Artifacts key: backticks, ``\\`` vs ``/``, ``./`` and trailing slashes ignored."""
    t = fold(text.replace("`", "")).replace("\\", "/")
    t = re.sub(r"/{2,}", "/", t)
    t = re.sub(r"(^|\s)\./", r"\1", t)
    return t.rstrip("/ ")


_BULLET = re.compile(r"^(?:[-*+]|\d{1,3}[.)])[ \t]+")


def unit_key(text: str) -> str:
    """Current Context key: a bullet marker does not make a paragraph different."""
    return item_key(_BULLET.sub("", text.strip(), count=1))


def key_function(section: str) -> Callable[[str], str]:
    return path_key if section == FILES else unit_key if section == CURRENT_CONTEXT else item_key


_TOKEN = re.compile(r"[0-9a-z_]+|[^\W0-9a-z_]")


@lru_cache(maxsize=1 << 16)
def tokens(text: str) -> tuple[str, ...]:
    """Word tokens of the folded text: Latin words and numbers whole, CJK characters one by one
    (so a changed character in ``重試最多 5 次`` is one token of many, as a changed English word is)."""
    return tuple(_TOKEN.findall(fold(_MD_NOISE.sub("", text))))


def _revision_score(old: tuple[str, ...], new: tuple[str, ...]) -> float | None:
    total = len(old) + len(new)
    if min(len(old), len(new)) < REVISION_MIN_TOKENS or 2 * min(len(old), len(new)) < REVISION_RATIO * total:
        return None
    sm = SequenceMatcher(None, old, new, autojunk=False)
    if sm.real_quick_ratio() < REVISION_RATIO or sm.quick_ratio() < REVISION_RATIO:
        return None
    same = sum(b.size for b in sm.get_matching_blocks())
    ratio = 2 * same / total
    return ratio if same >= REVISION_MIN_TOKENS and ratio >= REVISION_RATIO else None


def _extends(old: str, new: str) -> bool:
    """A Current Context paragraph whose whole text is inside the incoming one (it was extended)."""
    k = unit_key(old)
    return len(tokens(old)) >= REVISION_MIN_TOKENS and k != unit_key(new) and k in unit_key(new)


def _top(hits: Counter) -> list[int]:
    """The candidates sharing the most tokens with the query. Scoring every candidate made a merge
    of many near-identical items quadratic (minutes under the vault lock); a revision shares the
    most tokens, and a revision missed here only keeps both items unmarked, never loses one."""
    if len(hits) <= MAX_CANDIDATES:
        return list(hits)
    return [i for i, _ in hits.most_common(MAX_CANDIDATES)]


class _Revisable:
    """Old items of one section, indexed by token so that an incoming item finds what it revises."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.post: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(texts):
            for x in set(tokens(t)):
                self.post[x].append(i)

    def _candidates(self, text: str, ok: Callable[[int], bool]) -> list[int]:
        hits: Counter = Counter()
        for x in set(tokens(text)):
            hit = self.post.get(x)
            if hit and len(hit) <= COMMON_TOKEN:
                hits.update(hit)
        return [i for i in sorted(_top(hits)) if ok(i)]

    def revised(self, text: str, ok: Callable[[int], bool]) -> int | None:
        """The old item ``text`` revises most closely, if any."""
        q = tokens(text)
        best, best_score = None, 0.0
        for i in self._candidates(text, ok):
            sc = _revision_score(tokens(self.texts[i]), q)
            if sc is not None and sc > best_score:
                best, best_score = i, sc
        return best

    def extended(self, text: str, ok: Callable[[int], bool]) -> int | None:
        """The first old paragraph whose whole text ``text`` contains, if any."""
        return next((i for i in self._candidates(text, ok) if _extends(self.texts[i], text)), None)


class _Resolved:
    """The Superseded / Resolved list being built, with lookups by (origin, text)."""

    def __init__(self, entries: list[str]):
        self.entries: list[str] = []
        self.whole: set[str] = set()
        # text key -> origins; Files / Artifacts entries compare by path key
        self.origins: dict[tuple[bool, str], set[str | None]] = defaultdict(set)
        for e in entries:
            self._register(e)

    def _register(self, entry: str) -> None:
        _, _, origin, text = parse_resolved(entry)
        self.entries.append(entry)
        self.whole.add(item_key(entry))
        self.origins[(False, item_key(text))].add(origin)
        self.origins[(True, path_key(text))].add(origin)

    def _origins(self, section: str, text: str) -> set[str | None]:
        is_path = section == FILES
        return self.origins.get((is_path, (path_key if is_path else item_key)(text)), set())

    def has(self, section: str, text: str) -> bool:
        o = self._origins(section, text)
        return section in o or None in o

    def add(self, mark: str, section: str, text: str) -> None:
        if section not in self._origins(section, text):
            self._register(f"{mark} ({section}) {text}")

    def add_plain(self, entry: str) -> None:
        if item_key(entry) not in self.whole:
            self._register(entry)


# -- merging ------------------------------------------------------------------------------------


def _merge_section(
    section: str, old_items: list[str], inc_items: list[str], routed: list[tuple[str, str]], res: _Resolved
) -> list[str]:
    movable = section in MOVABLE
    keyf = key_function(section)

    slots: list[str | None] = []
    seen_keys: set[str] = set()
    for it in old_items:
        mark, kind, text = split_mark(it) if movable else (None, None, it)
        if kind and mark:  # an old item already marked by hand: move it now
            res.add(mark, section, text)
            continue
        if section == FILES and keyf(it) in seen_keys:
            continue  # union, de-duplicated
        seen_keys.add(keyf(it))
        slots.append(it)

    marked: list[tuple[str, str]] = []
    plain: list[str] = []
    for item in inc_items:
        mark, kind, text = split_mark(item) if movable else (None, None, item)
        if kind and mark:
            marked.append((mark, text))
        else:
            plain.append(item)
    marked += routed

    by_key: dict[str, list[int]] = defaultdict(list)
    kept = [s for s in slots if s is not None]  # before the moves below, every slot holds an item
    for i, item in enumerate(kept):
        by_key[keyf(item)].append(i)
    plain_keys = {keyf(t) for t in plain}
    pinned = {i for i, item in enumerate(kept) if keyf(item) in plain_keys}  # restated verbatim: stays
    index = _Revisable(kept) if section in REVISABLE else None

    marked_keys: set[str] = set()
    for mark, text in marked:
        k = keyf(text)
        marked_keys.add(k)
        hits = [i for i in by_key.get(k, ()) if slots[i] is not None]
        if hits:
            for i in hits:
                res.add(mark, section, slots[i] or "")
                slots[i] = None
            continue
        if res.has(section, text):
            continue  # recorded by an earlier merge
        if index is not None:
            best = index.revised(text, lambda j: slots[j] is not None and j not in pinned)
            if best is not None:  # the old wording moves too: its text is never dropped
                res.add(mark, section, slots[best] or "")
                slots[best] = None
        res.add(mark, section, text)

    replaced: set[int] = set()
    appended: list[str] = []
    added_keys: set[str] = set()
    for text in plain:
        k = keyf(text)
        if k in marked_keys or k in added_keys or any(slots[i] is not None for i in by_key.get(k, ())):
            continue
        added_keys.add(k)
        if index is not None:

            def free(j: int) -> bool:
                return slots[j] is not None and j not in pinned and j not in replaced

            best = index.extended(text, free) if section == CURRENT_CONTEXT else None
            if best is None:
                best = index.revised(text, free)
                if best is not None:  # a revision: the old text stays, marked, in Superseded / Resolved
                    res.add(SUPERSEDED, section, slots[best] or "")
            if best is not None:
                slots[best] = text  # the new text takes the old one's place
                replaced.add(best)
                continue
        appended.append(text)
    return [s for s in slots if s is not None] + appended


def _merge_continues(old_items: list[str], inc_items: list[str]) -> list[str]:
    out = list(old_items)
    ids = {i for it in out for i in continues_ids(it)}
    keys = {item_key(it) for it in out}
    for it in inc_items:
        new_ids = continues_ids(it)
        if (new_ids and all(i in ids for i in new_ids)) or (not new_ids and item_key(it) in keys):
            continue
        out.append(linked_item(it))  # new items are written as [[id]] links; old ones stay as written
        ids.update(new_ids)
        keys.add(item_key(it))
    return out


def _union_lines(old: str, new: str) -> str:
    if not old.strip():
        return new
    keys = {fold(line) for line in old.split("\n") if line.strip()}
    add: list[str] = []
    for line in new.split("\n"):
        if line.strip() and fold(line) not in keys:
            keys.add(fold(line))
            add.append(line)
    return "\n".join([old, *add]) if add else old


def _merge_body(old: Snapshot, inc: Snapshot) -> Snapshot:
    """Everything but Metadata/title (the callers decide those)."""
    res = _Resolved(old.sections[RESOLVED])
    routed: dict[str, list[tuple[str, str]]] = {s: [] for s in MOVABLE}
    plain_resolved: list[str] = []
    for e in inc.sections[RESOLVED]:
        mark, kind, origin, text = parse_resolved(e)
        target = origin or (KIND_ORIGIN.get(kind) if kind else None)
        if kind and mark and target in MOVABLE:
            routed[target].append((mark, text))
        else:
            plain_resolved.append(e)

    out = Snapshot(
        title=old.title,
        metadata=dict(old.metadata),
        frontmatter=old.frontmatter if old.frontmatter is not None else inc.frontmatter,
        preamble=_union_lines(old.preamble, inc.preamble),
        crlf=old.crlf,
        bom=old.bom,
    )
    notes = _union_lines("\n".join(old.metadata_notes), "\n".join(inc.metadata_notes))
    out.metadata_notes = notes.split("\n") if notes else []
    for sec in (CURRENT_CONTEXT, *MOVABLE):
        out.sections[sec] = _merge_section(sec, old.sections[sec], inc.sections[sec], routed.get(sec, []), res)
    out.sections[CONTINUES_FROM] = _merge_continues(old.sections[CONTINUES_FROM], inc.sections[CONTINUES_FROM])
    for entry in plain_resolved:
        res.add_plain(entry)
    out.sections[RESOLVED] = res.entries

    out.extras = [ExtraSection(x.heading, x.body, x.after) for x in old.extras]
    by_heading: dict[str, ExtraSection] = {}
    for x in out.extras:
        by_heading.setdefault(fold(x.heading), x)
    for x in inc.extras:
        found = by_heading.get(fold(x.heading))
        if found is not None:
            found.body = _union_lines(found.body, x.body)
        else:
            # a new section that led the incoming text goes to the end, not above the Metadata
            by_heading[fold(x.heading)] = ExtraSection(x.heading, x.body, x.after or RESOLVED)
            out.extras.append(by_heading[fold(x.heading)])
    out.extras = in_render_order(out.extras)
    return out


def _check_same_session(session_id: str, incoming: Snapshot) -> None:
    """An incoming snapshot that names another session must not be merged into this one."""
    checks = (
        ("its Metadata Session ID", incoming.metadata.get("Session ID", ""), False),
        ("its title", incoming.title, True),
    )
    for where, raw, must_be_id in checks:
        v = clean_id(raw)
        if not v or is_placeholder_topic(v) or (must_be_id and not is_valid_session_id(v)):
            continue
        if session_id and v != session_id:
            raise SnapshotFormatError(
                f"the incoming snapshot belongs to session {v} ({where}), not {session_id}; nothing was merged",
                details={"expected": session_id, "found": v},
            )


def _extra_rows(old: dict[str, str], inc: dict[str, str]) -> dict[str, str]:
    out = {k: v for k, v in old.items() if k not in METADATA_FIELDS}
    for k, v in inc.items():
        if k not in METADATA_FIELDS and (v.strip() or k not in out):
            out[k] = v
    return out


def merge_snapshots(old: Snapshot, incoming: Snapshot, *, updated_at: str) -> Snapshot:
    """Merge per docs/snapshots.md and verify. Raises SnapshotFormatError when ``incoming`` names
    another session and SnapshotMergeError when an old item would be lost (nothing to write)."""
    sid = old.session_id
    _check_same_session(sid, incoming)
    merged = _merge_body(old, incoming)
    om, im = old.metadata, incoming.metadata
    topic = om.get("Topic", "").strip()
    if incoming.topic and (not is_placeholder_topic(incoming.topic) or not topic):
        topic = incoming.topic
    merged.metadata = {
        "Session ID": om.get("Session ID", "").strip() or sid or incoming.session_id,
        "Agent Name": om.get("Agent Name", "").strip() or im.get("Agent Name", "").strip(),
        "Topic": topic,
        "Status": "active",
        "Started At": om.get("Started At", "").strip() or im.get("Started At", "").strip(),
        "Updated At": updated_at,
        **_extra_rows(om, im),
    }
    merged.title = merged.session_id
    missing = verify_merge(old, merged)
    if missing:
        shown = "; ".join(missing[:5]) + (f"; … {len(missing) - 5} more" if len(missing) > 5 else "")
        raise SnapshotMergeError(
            f"the merge would lose {len(missing)} item(s) of the existing snapshot ({shown}); nothing was written",
            details={"missing": missing},
        )
    return merged


def new_snapshot(
    session_id: str,
    agent_name: str,
    topic: str,
    started_at: str,
    updated_at: str,
    *,
    status: str = "active",
    incoming: Snapshot | None = None,
) -> Snapshot:
    """A fresh snapshot from the template, filled from ``incoming`` when given (marked items go to
    Superseded / Resolved as in a merge). ``topic`` wins unless it is a placeholder such as
    ``未設定`` and the incoming snapshot names a real one."""
    base = Snapshot(title=session_id)
    meta = dict(zip(METADATA_FIELDS, (session_id, agent_name, topic, status, started_at, updated_at), strict=True))
    if incoming is None:
        base.metadata = meta
        return base
    _check_same_session(session_id, incoming)
    snap = _merge_body(base, incoming)
    if is_placeholder_topic(topic) and incoming.topic and not is_placeholder_topic(incoming.topic):
        meta["Topic"] = incoming.topic
    snap.metadata = {**meta, **_extra_rows({}, incoming.metadata)}
    snap.title = session_id
    snap.crlf, snap.bom = False, False
    return snap


def with_continues_from(s: Snapshot, add: Iterable[str] = (), remove: Iterable[str] = ()) -> Snapshot:
    """A copy with Session IDs removed from / added to Continues From (added as ``[[id]]`` links)."""
    out = s.copy()
    drop = {clean_id(r) for r in remove}
    items: list[str] = []
    for it in out.sections[CONTINUES_FROM]:
        ids = continues_ids(it)
        if ids and any(i in drop for i in ids):
            keep = [i for i in ids if i not in drop]
            if keep:
                items.append(", ".join(f"[[{i}]]" for i in keep))
        else:
            items.append(it)
    present = {i for it in items for i in continues_ids(it)}
    for a in add:
        a = clean_id(a)
        if a and a not in present:
            items.append(f"[[{a}]]")
            present.add(a)
    out.sections[CONTINUES_FROM] = items
    return out


# -- verification -------------------------------------------------------------------------------


def verify_merge(old: Snapshot, merged: Snapshot) -> list[str]:
    """Old items that do not survive in ``merged`` (in place as the same text after normalisation,
    inside an extended Current Context paragraph, or marked and moved to Superseded / Resolved),
    as ``"<section>: <item>"``. An empty list means the merge is safe: no near-duplicate is taken
    for the old item (docs/snapshots.md: nothing whose text differs from every new item is dropped)."""
    missing: list[str] = []
    for f in ("Session ID", "Agent Name", "Started At"):
        ov = old.metadata.get(f, "").strip()
        if ov and merged.metadata.get(f, "").strip() != ov:
            missing.append(f"{METADATA}: {f} = {ov}")

    res_entries = merged.sections[RESOLVED]
    parsed = [parse_resolved(e) for e in res_entries]
    res_whole = {item_key(e) for e in res_entries}

    by_keyf: dict[Callable[[str], str], dict[str, set[str | None]]] = {}

    def recorded(sec: str, keyf: Callable[[str], str], text: str) -> bool:
        if keyf not in by_keyf:
            by_keyf[keyf] = defaultdict(set)
            for _, _, origin, t in parsed:
                by_keyf[keyf][keyf(t)].add(origin)
        origins = by_keyf[keyf].get(keyf(text), set())
        return sec in origins or None in origins

    for sec in SECTIONS:
        old_items = old.sections[sec]
        if not old_items:
            continue
        new_items = merged.sections[sec]
        if sec == RESOLVED:
            missing += [f"{sec}: {e}" for e in old_items if item_key(e) not in res_whole]
            continue
        if sec == CONTINUES_FROM:
            new_ids = {i for it in new_items for i in continues_ids(it)}
            new_keys = {item_key(it) for it in new_items}
            for it in old_items:
                ids = continues_ids(it)
                if not (all(i in new_ids for i in ids) if ids else item_key(it) in new_keys):
                    missing.append(f"{sec}: {it}")
            continue
        keyf = key_function(sec)
        new_keys = {keyf(t) for t in new_items}
        for it in old_items:
            _, _, text = split_mark(it) if sec in MOVABLE else (None, None, it)
            if keyf(it) in new_keys or keyf(text) in new_keys or recorded(sec, keyf, text):
                continue
            if sec == CURRENT_CONTEXT and any(_extends(it, n) for n in new_items):
                continue
            missing.append(f"{sec}: {it}")

    merged_extras: dict[str, set[str]] = defaultdict(set)
    for e in merged.extras:
        merged_extras[fold(e.heading)].update(fold(line) for line in e.body.split("\n"))
    for e in old.extras:
        have = merged_extras.get(fold(e.heading))
        if have is None:
            missing.append(f"section '{e.heading}'")
            continue
        missing += [f"{e.heading}: {line}" for line in e.body.split("\n") if line.strip() and fold(line) not in have]
    if old.frontmatter is not None and merged.frontmatter != old.frontmatter:
        missing.append("YAML frontmatter")
    for label, o, n in (
        ("preamble", old.preamble, merged.preamble),
        (METADATA, "\n".join(old.metadata_notes), "\n".join(merged.metadata_notes)),
    ):
        have_lines = {fold(line) for line in n.split("\n")}
        missing += [f"{label}: {line}" for line in o.split("\n") if line.strip() and fold(line) not in have_lines]
    return missing


def marked_by_merge(old: Snapshot, merged: Snapshot) -> list[str]:
    """The Superseded / Resolved entries a merge added (each item it marked, revisions included),
    as written: the merge's report names them (docs/snapshots.md)."""
    before = {item_key(e) for e in old.sections[RESOLVED]}
    return [e for e in merged.sections[RESOLVED] if item_key(e) not in before]
