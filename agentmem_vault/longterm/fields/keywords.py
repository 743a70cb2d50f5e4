"""Keywords a person would search for (docs/notes.md, Keywords): identifiers, paths, commands and
product names as written, then whole nouns of the content found by the word segmenter, in both
scripts where Traditional and Simplified differ; never a fragment, a generic word or the title;
at most eight."""

from __future__ import annotations

import re

from agentmem_vault.longterm.fields.checks import bad_keyword
from agentmem_vault.longterm.fields.data import CJK, is_generic
from agentmem_vault.longterm.lexicon import tech_terms
from agentmem_vault.model.textnorm import fold, to_simplified

MAX_KEYWORDS = 8
# Things named in the text, strongest first: `code`, paths and file names, flags, dotted or
# hyphenated or underscored identifiers, names with digits, CamelCase, capitalised product names.
_NAMED = re.compile(
    r"`(?P<code>[^`\n]{2,40})`"
    r"|(?P<path>(?<![\w/.-])(?:~|\.{1,2})?/?[\w.-]+(?:/[\w.<>*-]+)+/?)"
    r"|(?P<file>(?<![\w.-])[\w*-]*\.(?:py|ts|tsx|js|jsx|mjs|json|ya?ml|toml|md|sql|sh|ps1|lock|env|cfg|ini|gitattributes)\b)"
    r"|(?P<flag>(?<![\w-])--?[a-z][\w-]*(?:=\S+)?)"
    r"|(?P<ident>(?<![\w.-])[A-Za-z_][\w]*(?:[.:_-][\w]+)+(?:\(\))?)"
    r"|(?P<multi>(?<![\w.-])[A-Z][\w+#.-]*(?:\s[A-Z][\w+#.-]*)+)"
    r"|(?P<digits>(?<![\w.-])(?:[A-Z][\w+#]*\s|[A-Za-z][\w+#]*)\d[\w.]*\b)"
    r"|(?P<camel>(?<![\w.-])[a-z]+[A-Z]\w*|(?<![\w.-])[A-Z][a-z0-9]+[A-Z]\w*)"
    r"|(?P<caps>(?<![\w.-])[A-Z][A-Za-z0-9+#]{1,30}(?:\s[A-Z][A-Za-z0-9+#]+)?)"
)
# A plain lower-case Latin word is a name (httpx, webhook, noopener) inside Chinese text, or in
# English right after a word that introduces a tool ("use httpx", "mock HTTP with respx").
_LATIN_IN_CJK = re.compile(r"(?<![\w./-])[A-Za-z][A-Za-z0-9]{1,30}(?![\w-])")
_AFTER_TOOL_WORD = re.compile(
    r"\b(?:use|using|with|via|instead of|rather than|than|over|not|run|call|install|prefer|switch(?:ed)? to|on)\s+"
    r"(?P<w>[a-z][a-z0-9]{1,30})(?![\w-])",
    re.I,
)
# segmenter part-of-speech tags of words worth searching for: nouns, names, verbal nouns
_NOUN_TAGS = ("n", "vn", "nz", "nr", "ns", "nt", "nw", "eng")


def _tags(text: str) -> list[tuple[str, str, int, int]]:
    """(word as written, tag, start, end) from the segmenter (Traditional folded to segment)."""
    from agentmem_vault.longterm.fields.segment import tag

    simple = to_simplified(text)
    if len(simple) != len(text):
        return []
    out, pos = [], 0
    for w, t in tag(simple):
        out.append((text[pos : pos + len(w)], t, pos, (pos := pos + len(w))))
    return out


def _part_of(word: str, keyword: str) -> bool:
    """``word`` is a whole part of a longer keyword ("src" of "src/assets/", "Commits" of
    "Conventional Commits"): it adds nothing."""
    return word != keyword and word in keyword and bool(re.search(rf"(?:^|[/ ]){re.escape(word)}(?:$|[/ ])", keyword))


def keywords_for(content: str, title: str = "") -> list[str]:
    """At most eight keywords for a note saying ``content`` under ``title``."""
    out: list[str] = []
    seen: set[str] = set()

    def add(word: str) -> None:
        w = word.strip(" .,;:()[]{}'\"`，。、；：")
        if w.count('"') % 2 or w.count("'") % 2:  # a quote the cut left open: rel="noopener
            w = w.replace('"', "").replace("'", "")
        while " " in w and is_generic(w.split(" ", 1)[0]):  # "Every PR" -> "PR"
            w = w.split(" ", 1)[1]
        key = fold(w)
        if len(out) >= MAX_KEYWORDS or not w or len(w) > 40 or key in seen or any(_part_of(key, k) for k in seen):
            return
        if bad_keyword(w, content, title):
            return
        out.append(w)
        seen.add(key)
        if (twin := to_simplified(w)) != w and twin not in out and len(out) < MAX_KEYWORDS:
            out.append(twin)  # both scripts: a search in either finds the note in Obsidian

    for m in _NAMED.finditer(content):
        add(next(g for g in m.groups() if g))
    latin = _LATIN_IN_CJK.finditer(content) if CJK.search(content) else _AFTER_TOOL_WORD.finditer(content)
    for m in latin:
        add(m.group(m.lastgroup or 0))
    for word, tag, _, _ in _tags(content):
        if CJK.search(word) and len(word) >= 2 and tag.startswith(_NOUN_TAGS) and not is_generic(word):
            add(word)
    folded = fold(content)
    for term in tech_terms().latin:  # longest first: "type hints" before "type"
        if len(term) >= 5 and term in folded and re.search(rf"(?<![\w.-]){re.escape(term)}(?![\w-])", folded):
            add(term)
    return out
