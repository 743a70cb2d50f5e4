"""Merge an incoming snapshot into the existing one, section by section (docs/snapshots.md), pure.

A snapshot is never overwritten: old items stay (possibly marked and moved), incoming items are
added, restatements replace what they restate in place, and ``verify_merge`` proves afterwards
that every old item survived. Rules beyond the merge table of docs/snapshots.md, decided here:

* **Restatement (near-duplicate).** Texts are folded (``textnorm.fold``: NFKC, case, Traditional ->
  Simplified), stripped of whitespace and Markdown emphasis, and cut into character 3-grams. An
  incoming text N restates an old text O when the folded keys are equal, or when O has at least
  ``MIN_GRAMS`` 3-grams and either ``|O∩N|/|O| >= coverage`` (N contains nearly all of O, e.g. O
  plus a clause) or ``Jaccard(O, N) >= jaccard`` (a light rewording). List items use 0.9/0.8,
  Current Context paragraphs 0.8/0.7. The thresholds are deliberately high: a missed restatement
  costs one visible extra line, a false one would silently replace a fact ("Use SQLite" must not
  be replaced by "Use Postgres"). Short items (``F1``, ``N1``) only match exactly.
* **Marks** (``[superseded]``/``[已取代]``, ``[resolved]``/``[已解決]``/``[已解决]``,
  ``[done]``/``[已完成]``, also ``[x]`` and ``[abandoned]``/``[已放棄]``), matched case-insensitively
  at the start or end of an item, move the item to Superseded / Resolved as
  ``- <mark as written> (<origin section>) <text>``, in Decisions, Files / Artifacts, Open
  Questions and Next Actions, whether the item comes from the old or the incoming snapshot. A
  marked incoming item that equals an old item moves that item (old wording kept); one that
  restates an old item moves it (incoming wording kept: it usually says why). A marked entry sent
  in the incoming Superseded / Resolved section acts on its origin section (or the section its
  mark implies) the same way. A marked item that matches nothing is recorded there as sent.
* An unmarked incoming item that is already in Superseded / Resolved is added back to its
  section (it was reopened), unless the same incoming snapshot also marks it.
* **Topic**: the incoming Topic replaces the old one unless it is empty or a placeholder
  (``未設定``, ``<topic>``, ``-``, ``none``…); a placeholder never overwrites a real topic.
  Extra Metadata rows: incoming non-empty values win; old rows are kept.
* Unknown sections, frontmatter, preamble and stray Metadata lines: old kept, incoming lines that
  are not there yet appended; a new unknown section that led the incoming text goes to the end.
* An incoming snapshot that names another session (its Metadata Session ID, or a title that is a
  valid Session ID; ``<id>`` placeholders are ignored) is refused with SnapshotFormatError.
* Idempotent: after a merge every incoming item is present verbatim (or recorded in Superseded /
  Resolved), so merging the same incoming snapshot again changes nothing but Updated At.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache, partial
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
RESTATABLE: tuple[str, ...] = (CURRENT_CONTEXT, DECISIONS, OPEN_QUESTIONS, NEXT_ACTIONS)
KIND_ORIGIN = {"superseded": DECISIONS, "resolved": OPEN_QUESTIONS, "done": NEXT_ACTIONS}
_MARK_WORDS = {
    "superseded": ("superseded", "已取代", "已替代", "replaced", "obsolete"),
    "resolved": ("resolved", "已解決", "已解决", "answered"),
    "done": ("done", "已完成", "x", "completed", "abandoned", "已放棄", "cancelled", "canceled", "已取消"),
}
_MARKS = {fold(w): kind for kind, words in _MARK_WORDS.items() for w in words}


@dataclass(frozen=True)
class Rule:
    coverage: float  # |O∩N| / |O|
    jaccard: float  # |O∩N| / |O∪N|

    @property
    def floor(self) -> float:
        """Both tests imply |O∩N| >= floor * |O|: the basis of the candidate filter."""
        return min(self.coverage, self.jaccard)


LIST_RULE = Rule(coverage=0.9, jaccard=0.8)
CONTEXT_RULE = Rule(coverage=0.8, jaccard=0.7)
MIN_GRAMS = 8

# -- marks, keys, grams -------------------------------------------------------------------------

_PREFIX_MARK = re.compile(r"^(?:\*\*|__)?(\[([^\[\]\n]{1,24})\])(?:\*\*|__)?[ \t]*")
_SUFFIX_MARK = re.compile(r"[ \t]*(?:\*\*|__)?(\[([^\[\]\n]{1,24})\])(?:\*\*|__)?$")
_ORIGIN = re.compile(r"^[(（]([^()（）\n]{1,40})[)）][ \t]*")
_MD_NOISE = re.compile(r"`|\*\*|__|~~")
_GRAM_NOISE = re.compile(r"[\s`*~]+")


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


def resolved_entry(mark: str, origin: str, text: str) -> str:
    return f"{mark} ({origin}) {text}"


@lru_cache(maxsize=1 << 16)
def item_key(text: str) -> str:
    """Exact-duplicate key: folded, Markdown emphasis and trailing punctuation ignored."""
    return fold(_MD_NOISE.sub("", text)).rstrip("。.;；,，!！ ")


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


@lru_cache(maxsize=1 << 16)
def grams(text: str) -> frozenset[str]:
    s = _GRAM_NOISE.sub("", fold(text))
    return frozenset(s[i : i + 3] for i in range(len(s) - 2))


def _score(old: frozenset[str], new: frozenset[str], rule: Rule) -> tuple[float, float] | None:
    if len(old) < MIN_GRAMS or not new:
        return None
    inter = len(old & new)
    cov = inter / len(old)
    jac = inter / (len(old) + len(new) - inter)
    return (jac, cov) if cov >= rule.coverage or jac >= rule.jaccard else None


def is_restatement(old: str, new: str, *, context: bool = False) -> bool:
    """True when ``new`` restates ``old`` (see the module docstring for the thresholds)."""
    key = unit_key if context else item_key
    if key(old) == key(new):
        return True
    return _score(grams(old), grams(new), CONTEXT_RULE if context else LIST_RULE) is not None


def _prefix(g: frozenset[str], floor: float, df: Counter) -> list[str]:
    """If |g∩other| >= floor*|g|, ``other`` holds at least one of these grams (the rarest first,
    so candidate lists stay short)."""
    p = len(g) - math.ceil(floor * len(g) - 1e-9) + 1
    return sorted(g, key=lambda x: (df.get(x, 0), x))[:p]


MAX_CANDIDATES = 48  # texts scored per lookup: keeps a merge near-linear on near-identical items


def _top(hits: Counter) -> list[int]:
    """The candidates sharing the most grams with the query. Scoring every candidate made a merge
    of many near-identical items quadratic (minutes under the vault lock); a restatement shares
    the most grams, and a match missed here only keeps both items, never loses one."""
    if len(hits) <= MAX_CANDIDATES:
        return list(hits)
    return [i for i, _ in hits.most_common(MAX_CANDIDATES)]


class _Restated:
    """Targets (old texts) indexed so that a query finds the targets it restates."""

    def __init__(self, rule: Rule, df: Counter):
        self.rule, self.df = rule, df
        self.grams: list[frozenset[str]] = []
        self.post: dict[str, list[int]] = defaultdict(list)

    def add(self, text: str) -> int:
        g = grams(text)
        self.grams.append(g)
        if len(g) >= MIN_GRAMS:
            for x in _prefix(g, self.rule.floor, self.df):
                self.post[x].append(len(self.grams) - 1)
        return len(self.grams) - 1

    def best(self, text: str, ok: Callable[[int], bool]) -> int | None:
        q = grams(text)
        hits: Counter = Counter()
        for x in q:
            hit = self.post.get(x)
            if hit:
                hits.update(hit)
        best, best_score = None, None
        for i in sorted(_top(hits)):
            if ok(i):
                sc = _score(self.grams[i], q, self.rule)
                if sc is not None and (best_score is None or sc > best_score):
                    best, best_score = i, sc
        return best


class _Restating:
    """Targets (merged texts) indexed so that a query (an old text) finds a target restating it."""

    def __init__(self, texts: Iterable[str], rule: Rule):
        self.rule = rule
        self.grams = [grams(t) for t in texts]
        self.df: Counter = Counter()
        self.post: dict[str, list[int]] = defaultdict(list)
        for i, g in enumerate(self.grams):
            self.df.update(g)
            for x in g:
                self.post[x].append(i)

    def find(self, text: str, ok: Callable[[int], bool] = lambda i: True) -> bool:
        q = grams(text)
        if len(q) < MIN_GRAMS:
            return False
        hits: Counter = Counter()
        for x in _prefix(q, self.rule.floor, self.df):
            hits.update(self.post.get(x, ()))
        return any(ok(i) and _score(q, self.grams[i], self.rule) is not None for i in sorted(_top(hits)))


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
            self._register(resolved_entry(mark, section, text))

    def add_plain(self, entry: str) -> None:
        if item_key(entry) not in self.whole:
            self._register(entry)


# -- merging ------------------------------------------------------------------------------------


def _merge_section(
    section: str,
    old_items: list[str],
    inc_items: list[str],
    routed: list[tuple[str, str]],
    res: _Resolved,
    df: Counter,
) -> list[str]:
    movable = section in MOVABLE
    keyf = key_function(section)
    rule = CONTEXT_RULE if section == CURRENT_CONTEXT else LIST_RULE

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
    index = _Restated(rule, df) if section in RESTATABLE else None
    if index is not None:
        for item in kept:
            index.add(item)

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
            best = index.best(text, lambda j: slots[j] is not None and j not in pinned)
            if best is not None:
                res.add(mark, section, text)
                slots[best] = None
                continue
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
            best = index.best(text, lambda j: slots[j] is not None and j not in pinned and j not in replaced)
            if best is not None:
                slots[best] = text  # a restatement replaces the old text in place
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
    df: Counter = Counter()
    for snap in (old, inc):
        for sec in SECTIONS:
            for it in snap.sections[sec]:
                df.update(grams(it))
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
        out.sections[sec] = _merge_section(sec, old.sections[sec], inc.sections[sec], routed.get(sec, []), res, df)
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
    meta = {
        "Session ID": session_id,
        "Agent Name": agent_name,
        "Topic": topic,
        "Status": status,
        "Started At": started_at,
        "Updated At": updated_at,
    }
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


def _in_section(parsed: list[tuple[str | None, str | None, str | None, str]], sec: str, i: int) -> bool:
    """Whether Superseded / Resolved entry ``i`` came from ``sec`` (or names no origin)."""
    return parsed[i][2] in (sec, None)


def verify_merge(old: Snapshot, merged: Snapshot) -> list[str]:
    """Old items that do not survive in ``merged`` (in place, restated, or marked and moved to
    Superseded / Resolved), as ``"<section>: <item>"``. An empty list means the merge is safe."""
    missing: list[str] = []
    for f in ("Session ID", "Agent Name", "Started At"):
        ov = old.metadata.get(f, "").strip()
        if ov and merged.metadata.get(f, "").strip() != ov:
            missing.append(f"{METADATA}: {f} = {ov}")

    res_entries = merged.sections[RESOLVED]
    parsed = [parse_resolved(e) for e in res_entries]
    res_origins: dict[str, set[str | None]] = defaultdict(set)
    res_path_origins: dict[str, set[str | None]] = defaultdict(set)
    for _, _, origin, text in parsed:
        res_origins[item_key(text)].add(origin)
        res_path_origins[path_key(text)].add(origin)
    res_whole = {item_key(e) for e in res_entries}
    lazy: dict[str, _Restating] = {}

    def res_finder() -> _Restating:
        if RESOLVED not in lazy:
            lazy[RESOLVED] = _Restating([p[3] for p in parsed], LIST_RULE)
        return lazy[RESOLVED]

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
            if keyf(it) in new_keys or keyf(text) in new_keys:
                continue
            if sec in MOVABLE:
                origins = (res_path_origins if sec == FILES else res_origins).get(keyf(text), set())
                if sec in origins or None in origins:
                    continue
            if sec in RESTATABLE:
                if sec not in lazy:
                    lazy[sec] = _Restating(new_items, CONTEXT_RULE if sec == CURRENT_CONTEXT else LIST_RULE)
                if lazy[sec].find(text):
                    continue
                if sec != CURRENT_CONTEXT and res_finder().find(text, partial(_in_section, parsed, sec)):
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
