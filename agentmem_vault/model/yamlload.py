"""The one way YAML from the vault is loaded: settings (config.yaml), note and snapshot
frontmatter, and the merge driver's inputs (docs/reliability.md, "Bounded work").

A vault file is input, and PyYAML's safe loader is safe from code, not from shape: it raises
ValueError for a date that does not exist (``2026-02-30``), RecursionError for deep nesting, builds
a self-referencing list for ``x: &a [*a]`` (which every later walk or ``json.dumps`` of it chokes
on), and shares aliased lists so that a few lines can stand for a billion items. ``load`` turns
each of these into the caller's error (ConfigError, NoteFormatError, SnapshotFormatError) with
one wording for all. ``split_frontmatter`` is the one splitter of frontmatter fences.
"""

from __future__ import annotations

from typing import Any, NamedTuple

MAX_DEPTH = 64  # nesting of mappings and lists (settings and properties use two or three)
MAX_ITEMS = 100_000  # items once aliases are expanded


class YamlProblem(Exception):
    """A shape ``load`` refuses, or an unclosed fence (``split_frontmatter``'s default error)."""


class Fenced(NamedTuple):
    """A file split at its frontmatter fences (``split_frontmatter``)."""

    bom: str  # the byte-order marks it starts with, as written
    newline: str  # "\r\n" when the file holds one, else "\n"
    frontmatter: str | None  # between the fences, with \n line ends; None: the file has none
    fence_close: str  # the closing fence line as written ("---" or "...")
    body: str  # everything after the closing fence line (line ends as written)


def split_frontmatter(text: str, error: type[Exception] = YamlProblem, *, lenient: bool = False) -> Fenced:
    """The one frontmatter splitter of notes, snapshots and archive indexes (docs/notes.md, "Reading
    rules"): a first line ``---`` (after a BOM; trailing blanks allowed) opens it, the next ``---``
    or ``...`` line at column 0 closes it (an indented one is YAML text, a block scalar's). An
    opening fence never closed makes the file malformed: ``error``, or with ``lenient`` (a reader of
    the body only) no frontmatter, so the body is never lost."""
    rest = text.lstrip("\ufeff")
    bom = text[: len(text) - len(rest)]
    # a file with lone CRs only (old Mac editors) has lines too, as every other reader sees them
    sep = "\r" if "\r" in rest and "\n" not in rest else "\n"
    newline = "\r\n" if "\r\n" in rest else sep
    lines = rest.split(sep)
    if lines[0].rstrip() == "---":
        for j in range(1, len(lines)):
            if (close := lines[j].rstrip()) in ("---", "..."):
                fm = "\n".join(x.rstrip("\r") for x in lines[1:j])
                return Fenced(bom, newline, fm, close, sep.join(lines[j + 1 :]))
        if not lenient:
            raise error("the frontmatter is not closed by a '---' line")
    return Fenced(bom, newline, None, "---", rest)


def load(
    text: str, error: type[Exception], where: str, fix: str = "", *, loader: Any = None, first_line: int = 1
) -> Any:
    """``text`` as YAML (the safe loader, libyaml's when present), or ``error`` in the one wording of
    every YAML refusal: ``<where> is not valid YAML at line L, column C (<problem>); <fix>``, L
    counted in the file, whose line ``first_line`` the text starts on. A pure reader that knows
    neither the file nor what to do says "the frontmatter"; its caller adds the file and the fix."""
    import yaml

    mark = None
    try:
        data = yaml.load(text, Loader=loader or getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        check_shape(data)
        return data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    except RecursionError:
        problem = f"nested more than {MAX_DEPTH} levels deep"
    except KeyError as exc:  # PyYAML's lookup of a tagged value it has no entry for (``!!bool maybe``)
        problem = f"{exc.args[0]!r} is not a value of its tag"
    except (ValueError, TypeError, OverflowError, YamlProblem) as exc:  # a value it cannot build, or its shape
        problem = str(exc)
    at = f" at line {mark.line + first_line}, column {mark.column + 1}" if mark is not None else ""
    raise error(f"{where} is not valid YAML{at} ({problem})" + f"; {fix}" * bool(fix))


def check_shape(data: Any) -> None:
    """Refuse a structure that refers to itself, nests deeper than MAX_DEPTH or expands (through
    aliases) to more than MAX_ITEMS items. Iterative and linear in the distinct nodes."""
    size: dict[int, int] = {}  # expanded item count of each finished container, by id
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(data, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if not isinstance(node, (dict, list, tuple, set)):
            continue
        key = id(node)
        children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else list(node)
        if done:
            on_path.discard(key)
            total = 1 + sum(size.get(id(c), 1) for c in children)
            if total > MAX_ITEMS:
                raise YamlProblem(f"more than {MAX_ITEMS:,} items once its aliases are expanded")
            size[key] = total
            continue
        if key in on_path:
            raise YamlProblem("an alias refers to the list or mapping that contains it")
        if key in size:
            continue  # an alias of a finished node: counted by size, not walked again
        if depth > MAX_DEPTH:
            raise YamlProblem(f"nested more than {MAX_DEPTH} levels deep")
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children)
