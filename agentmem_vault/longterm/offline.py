"""Rule-based extractor used when there is no model (or with ``--offline``); docs/extraction.md.

It reads only what the *user* said (information that comes purely from the assistant is not a
memory) and keeps sentences that carry an explicit request ("記住", "from now on", "以後都",
"下次不要", "always use ..."), a correction ("不對，...", "No, don't use ..."), a stated preference
or dissatisfaction ("I prefer", "我習慣", "請用", "我不喜歡"), plus stated decisions and pitfalls.
Questions, one-off task details ("for this file only", "這次先") and chit-chat are left out, and so
are the lines the user pasted rather than wrote (``noise.own_words``: tool output, logs, quotes). A
continuation ("以後都照這樣做") joins the statement it points at; an enumerated request ("記住三點：
…、…、…") gives one candidate per item. The output is the same Memory Objects the model would
produce, with ``signal`` and ``evidence`` but no score: the assessment stage scores them.

A correction is stored rule first ("Don't use moment. Use date-fns." -> "Use date-fns (instead of
moment)."); titles are cut only between words or CJK characters, never inside an identifier, and
identifiers keep their case; the category is the best-scoring set of cues in the Memory Object's
category list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentmem_vault.model.textnorm import fold
from agentmem_vault.longterm.noise import own_words
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn

# (kind, score, importance, pattern over the folded sentence). Folding makes Traditional and
# Simplified Chinese one case, so patterns are written in Simplified only.
_EN_VERBS = (
    r"use|write|run|add|put|keep|commit|push|call|include|format|name|prefer|make|check|ask|reply|respond|"
    r"answer|test|mock|log|import|return|create|edit|modify|touch|store|hardcode|hard-code|leave|wrap|pin|"
    r"quote|split|squash|rebase|update|bump|rely|mix|expose|print|catch|swallow|skip|disable|enable|set|"
    r"open|explain|translate|show|give|assume|document|comment|type|validate|sanitize|escape|lock|sort"
)

_TRIGGERS: tuple[tuple[str, int, float, re.Pattern[str]], ...] = tuple(
    (kind, score, imp, re.compile(p))
    for kind, score, imp, p in (
        ("explicit", 5, 0.9, r"(?:请|帮我|要)?(?:记住|记得|牢记|备忘)(?!吗|不|了吗)"),
        (
            "explicit",
            5,
            0.9,
            r"以后(?:[^,;。?]{0,30}?(?:都|一律|请|要(?!是)|不要|别|统一|必须)|也|默认|的)|今后|往后|从现在(?:开始|起)|下次(?:不要|别|记得|请|要)|不要再|别再|永远(?:不要|要)|一律",
        ),
        (
            "explicit",
            5,
            0.9,
            r"\b(?:please\s+)?remember(?:\s+that|\s+to|\s*:|,)|\bnote for (?:the )?future\b|\bfrom now on\b|\bgoing forward\b|\bin (?:the )?future,",
        ),
        (
            "explicit",
            5,
            0.85,
            rf"(?:^|please\s+|you\s+(?:should|must)\s+|we\s+(?:should|must)\s+|make sure (?:to|you)\s+|so\s+|and\s+)(?:always|never)\b|\b(?:always|never)\s+(?:{_EN_VERBS})\b",
        ),
        (
            "correction",
            4,
            0.8,
            r"^(?:不对|错了|不是这样|搞错了|不行|不要这样)|应该(?:是|用|要)|而不是|不要用|别用|改用|换成|不能(?:用|直接)",
        ),
        (
            "correction",
            4,
            0.8,
            rf"^(?:no|nope|wrong|that'?s (?:wrong|not right|incorrect)|not quite|actually)\b|\binstead of\b|\brather than\b|\bdon'?t (?:{_EN_VERBS})\b|\bdo not (?:{_EN_VERBS})\b|\bstop (?:using|writing|adding)\b|\bi (?:said|told you)\b",
        ),
        # dissatisfaction is a preference too ("需要避免的痛点或用户不满点"): what to stop doing
        (
            "preference",
            4,
            0.7,
            r"我(?:很|真的|实在)?(?:不喜欢|讨厌|受不了|不想再?看到)|烦死了|很烦|\bi (?:really )?(?:hate|dislike|can'?t stand)\b|\bi don'?t like\b|\bi'?m tired of\b",
        ),
        (
            "preference",
            4,
            0.7,
            r"我(?:比较)?(?:喜欢|偏好|偏爱|习惯|倾向)|请(?:用|使用|改用|统一)|统一(?:用|使用)|预设|默认(?:用|使用|是)|命名请",
        ),
        (
            "preference",
            4,
            0.7,
            r"\bi(?:'d| would)? prefer\b|\bi like (?:to|it when|my|our)\b|\bplease (?:use|write|keep|show|answer|reply|format|put|prefer)\b|\bour convention\b|\bthe convention is\b|\bby default\b|\bwe (?:always )?use\b|"
            r"\bwe(?:'re| are) on [\w.+#-]+(?: \d[\w.]*)? (?:in|for|across) (?:this|the|our|all) (?:project|repo|codebase|services?|apps?)\b",
        ),
        (
            "decision",
            4,
            0.8,
            r"(?:决定|定案|拍板)(?:了|用|采用|:|：|，|,)|采用|选用|\bwe(?:'ve)? decided\b|\bdecision:|\blet'?s go with\b|\bwe(?:'ll| will) go with\b",
        ),
        # "那就這樣定了：…" / "Settled then: …": what follows the colon is the decision
        (
            "decision",
            4,
            0.8,
            r"^(?:那就|就)?(?:这样|这么)(?:定了?|决定了?|办)\s*[:：]|^(?:settled(?: then)?|that'?s settled|final decision)\s*[:：,]",
        ),
        (
            "pitfall",
            4,
            0.75,
            r"踩坑|坑[:：]|注意[:：]|会导致|会被.*(?:弄坏|覆盖|删除)|\bwatch out\b|\bheads up\b|\bgotcha\b|\bpitfall\b|\bbeware\b|\bcaveat\b",
        ),
    )
)

# Sentences that look like a trigger but are not durable knowledge.
_NOT_MEMORY = re.compile(
    r"\bdo you remember\b|\bremember when\b|\bcan you remember\b|还记得|记得吗|记不记得|"
    r"\bthis time\b|\bjust this once\b|\bfor now\b|\btemporar(?:y|ily)\b|\bfor this (?:file|function|component|pr|task|one)\b|"
    r"这次|本次|这一次|暂时|先这样|\bnever mind\b|算了|\bi never (?:thought|knew)\b|\balways (?:fails|crashes|breaks|happens)\b|"
    r"\bif (?:we|you|i) ever\b|\bsomeday\b|\bhypothetically\b|如果哪天|假如|万一"
)
# Quoted text is someone else's words (an error message, a doc): "it says 'remember to ...'".
_QUOTED = re.compile(r"'[^'\n]{3,}'|\"[^\"\n]{3,}\"|“[^”\n]{2,}”|「[^」\n]{2,}」")
_QUESTION = re.compile(
    r"[?？]\s*$|(?:吗|么|呢)\s*[。.!！]?\s*$|^(?:should|can|could|would|is|are|do|does|did|why|what|how|which|where|when)\b"
)
_EXPLICIT_LEAD = re.compile(
    r"^(?:(?:ok|okay|好|好的|嗯)[,，]?\s*)?(?:(?:请|帮我)?(?:记住|记得|牢记|备忘)|please remember(?: that)?|remember(?: that)?|note for (?:the )?future|"
    r"from now on|going forward|in (?:the )?future|heads up|watch out|踩坑记录|踩坑|注意|另外|also\b|and\b|"
    r"(?:no|nope|actually|wrong|不对|错了|不是这样|搞错了)(?=[,，:：;；.\s—-]))[\s,，:：;；.—-]*",
    re.I,
)
_SPLIT = re.compile(r"(?<=[。！？\n])|(?<=[.;!?])\s+(?=[A-Z`\"'(])|(?<=；)")
_REASON_NEXT = re.compile(r"^(?:because|since|so that|as |因为|因為|原因|由于|由於|这样|這樣)", re.I)
_ONE_OFF_SCOPE = re.compile(
    r"\b(?:this|that) (?:file|function|line|variable|component|pr|branch)\b|这个(?:文件|函数|变量|组件)|这里|这行"
)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _fold(text: str) -> str:
    return fold(text)


@dataclass(frozen=True)
class Cue:
    kind: str
    score: int
    importance: float


# A sentence that is only "No, ..." / "不對，..." is a correction of *something*, but it is a rule
# only if the rest says what to do ("No, it was my network." is not a memory).
_CORRECTION_LEAD = re.compile(
    r"^(?:不对|错了|不是这样|搞错了|不行|不要这样|(?:no|nope|wrong|that'?s (?:wrong|not right|incorrect)|not quite|actually)\b)[\s,:;.!—-]*"
)
_DIRECTIVE = re.compile(
    r"用|要|应该|应当|不要|别|不能|不可|一律|统一|必须|只能|改成|换成|"
    r"\b(?:use|using|should|must|always|never|don'?t|do not|instead|prefer|we|our|need|needs|has to|have to|only)\b"
)
# "不是用 npm，是用 pnpm" is a correction on its own; the bare "不是 A，是 B" only when the
# assistant had just said A ("這不是 bug，是 feature 啦" is chit-chat).
_NOT_A_BUT_B_VERB = re.compile(r"^(?:这里|这边)?不是(用|要用|使用|写|存|放|叫)\s*[^,;。]{1,40}[,;]\s*(?:而)?是\1")
_NOT_A_BUT_B = re.compile(r"^(?:这里|这边)?不是\s*(?P<old>[^,;。]{1,40}?)\s*[,;]\s*(?:而)?是\s*\S")


def classify_sentence(sentence: str, context: str = "") -> Cue | None:
    """Which rule (if any) makes this user sentence worth remembering.

    ``context`` is what the assistant said just before (for "不是 A，是 B": A must be in it)."""
    f = _fold(_QUOTED.sub(" ", sentence))
    if not f or _NOT_MEMORY.search(f):
        return None
    best: Cue | None = None
    for kind, score, imp, pat in _TRIGGERS:
        if pat.search(f):
            if best is None or score > best.score:
                best = Cue(kind, score, imp)
    if best is None:
        m = _NOT_A_BUT_B.match(f)
        if _NOT_A_BUT_B_VERB.match(f) or (m and len(m["old"].strip()) >= 2 and m["old"].strip() in _fold(context)):
            best = Cue("correction", 4, 0.8)
    if best is None:
        return None
    if best.kind == "correction":
        rest = _CORRECTION_LEAD.sub("", f, count=1)
        if rest != f and not any(p.search(rest) for _, _, _, p in _TRIGGERS) and not _DIRECTIVE.search(rest):
            # "No, it was my network." / "不是這樣，是我的網路斷了" (unless A was just said: 不是A，是B)
            m = _NOT_A_BUT_B.match(f)
            if not (m and len(m["old"].strip()) >= 2 and m["old"].strip() in _fold(context)):
                return None
    if _QUESTION.search(f) and best.kind != "explicit":
        return None
    if _QUESTION.search(f) and re.search(r"[?？]\s*$", f):
        return None
    if best.kind != "explicit" and _ONE_OFF_SCOPE.search(f):
        return None
    return best


def split_sentences(text: str) -> list[str]:
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        # Callers pass the user's own words (noise.own_words has blanked pasted lines); a paragraph
        # that still opens like code or a traceback is not a statement of preference either.
        if para.lstrip().startswith(("```", "Traceback", 'File "')):
            continue
        for s in _SPLIT.split(para):
            s = " ".join(s.split())
            if s:
                out.append(s)
    return out


# Lowercase names that are identifiers even without digits or punctuation ("pnpm is our ...").
_LOWER_NAMES = frozenset(
    """npm pnpm npx yarn bun deno pip pipx uv poetry conda cargo rustup git gh docker kubectl helm pytest ruff mypy
    pyright eslint prettier tsc vite webpack esbuild rollup node python python3 bash zsh pwsh brew apt sudo curl wget
    jq sed awk grep rg fzf tmux vim nvim make cmake gradle mvn go gofmt rustfmt black isort tox nox hatch pdm""".split()
)
# An identifier keeps its exact spelling: camelCase, digits, -_./\ or backticks, or a known tool name.
_IDENT_WORD = re.compile(r"[a-z][A-Z]|[\d_./\\`-]")


def _is_identifier(word: str) -> bool:
    w = word.rstrip(",:;.!?)")
    return bool(_IDENT_WORD.search(w)) or w.lower() in _LOWER_NAMES


def _capitalise(s: str) -> str:
    """Sentence case for Latin prose only: never for CJK text and never when the first word is an
    identifier ("sessionStart", "npm-run-all", "os.path", "pnpm" keep their spelling)."""
    if not s or _CJK.search(s) or not (s[0].isalpha() and s[0].islower()):
        return s
    first = s.split(maxsplit=1)[0]
    if _is_identifier(first):
        return s
    return s[0].upper() + s[1:]


def _clean(sentence: str) -> str:
    s = sentence.strip()
    prev = None
    while prev != s:
        prev = s
        s = _EXPLICIT_LEAD.sub("", s, count=1).strip()
        # The lead regex works on folded text semantics; try the Traditional forms too.
        s = re.sub(r"^(?:請?記住|記得|不對|錯了|踩坑記錄|記錄|另外)[\s,，:：;；.—-]*", "", s).strip()
        # the "settled" lead of a decision ("那就這樣定了：", "Settled then:") is not part of it
        s = re.sub(
            r"^(?:(?:那就|就)?(?:這樣|这样|這麼|这么)(?:定了?|決定了?|决定了?|辦|办)|settled(?: then)?|that'?s settled|final decision)\s*[:：,，]\s*",
            "",
            s,
            flags=re.I,
        ).strip()
    return _capitalise(s)


# -- corrections: the rule is what comes after the marker --------------------------------------------

# "No, don't use moment. Use date-fns." / "not `print`; use structlog" / "it's not A, it's B"
_EN_NEG_FIRST = re.compile(
    r"^(?:(?:please\s+|we\s+)?(?:don'?t|do not|never|stop)\s+(?:use|using|call|calling|write|writing|add|adding|import|importing|put|putting)\s+|"
    r"(?:it'?s\s+|that'?s\s+)?not\s+)"
    r"(?P<old>.+?)\s*(?:[,;:—–]+|\s-\s|\.(?=\s))\s*(?:but\s+|instead[,:]?\s+|rather[,:]?\s+)?"
    r"(?P<rule>(?:use|using|prefer|switch to|go with|stick with|call|import|write|run|always|it'?s|"
    r"we (?:use|prefer|always|standardi[sz]e on|(?:'re|are) on|go with|stick with))\b.+)$",
    re.I | re.S,
)
# "不要用 requests，應該用 httpx" / "不是 moment，是 date-fns" / "别用 A；改用 B"
_ZH_NEG_FIRST = re.compile(
    r"^(?:這裡|这里|這邊|这边)?(?:不是|不要再?|別再?|别再?|不能|不可以|不應該|不应该|不用)\s*(?P<old>[^，,；;。]+?)\s*[，,；;。]\s*"
    r"(?P<rule>(?:而是|是|應該|应该|要|請|请|改用|改成|換成|换成|一律|統一|统一|都|得|必須|必须|用|使用)\s*\S.*)$",
    re.S,
)
_CLAUSE_END_EN = re.compile(r"[;:!?]|\.(?=\s|$)|\s[—–]\s")
_CLAUSE_END_ZH = re.compile(r"[，,；;。！!？?]|\.(?=\s|$)")


def _insert_after_first_clause(rule: str, note: str, ends: re.Pattern[str]) -> str:
    m = ends.search(rule)
    if m is None:
        return rule.rstrip() + note
    return rule[: m.start()].rstrip() + note + rule[m.start() :]


def restructure_correction(content: str) -> str:
    """Put the corrected rule first and say what it replaces.

    "Don't use moment. Use date-fns." -> "Use date-fns (instead of moment)."; "不是用 npm，是用 pnpm。"
    -> "用 pnpm（而不是用 npm）。". Rule-first sentences ("use X instead of Y") come back unchanged."""
    m = _ZH_NEG_FIRST.match(content)
    if m:
        old = m["old"].strip().rstrip("了").strip()
        rule = re.sub(r"^(?:而是|是)\s*", "", m["rule"]).strip()
        if not old or not rule or old in rule:
            return content
        sp = " " if old[0].isascii() else ""
        return _insert_after_first_clause(rule, f"（而不是{sp}{old}）", _CLAUSE_END_ZH)
    m = _EN_NEG_FIRST.match(content)
    if m:
        old = m["old"].strip().rstrip(".,;:")
        rule = m["rule"].strip()
        if not old or not rule or old.lower() in rule.lower():
            return content
        return _capitalise(_insert_after_first_clause(rule, f" (instead of {old})", _CLAUSE_END_EN))
    return content


_NEG_START = re.compile(r"^(?:don'?t|do not|never|stop|not)\b|^(?:不要|别|別|不是|不能|不用)", re.I)
_POS_START = re.compile(
    r"^(?:use|prefer|switch to|go with|we use|we're on|we are on|stick with|always)\b|"
    r"^(?:用|使用|改用|换成|換成|应该|應該|要用|请用|請用|一律|统一|統一|都用|而是|是用)",
    re.I,
)


# -- titles ------------------------------------------------------------------------------------------

_TITLE_MAX = 70.0  # in Latin characters; a CJK character counts 1.75 (so about 40 of them)
_CJK_WIDTH = 1.75
_CJK_PUNCT = "，。、；：！？「」『』（）【】《》〈〉"
# Tokens: one CJK character, one CJK punctuation mark, whitespace, or a run of anything else (a
# Latin word or identifier such as Join-Path, gemini-2.5-flash-lite, src/generated/, `make x`).
_TOKEN = re.compile(
    rf"[\u3400-\u9fff\uf900-\ufaff]|[{_CJK_PUNCT}]|\s+|`[^`\s]*(?:\s[^`\s]+)*`|[^\s\u3400-\u9fff\uf900-\ufaff{_CJK_PUNCT}]+"
)
_SENTENCE_END = re.compile(r"[。！？；;\n]|(?<=\S)[.!?](?=\s|$)")
_CLAUSE_BREAK = re.compile(r"[，,：:、]|\s[—–-]\s|\s(?=(?:so|because|since|which|unless|otherwise|but)\s)", re.I)
_TITLE_SOFT = 42.0  # a CJK sentence longer than this (about 24 characters) keeps only its first clause
_TITLE_LEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|fyi|so|well|好|好的|嗯|那就这样|那就這樣)[,，:：]?\s+|"
    r"(?:we(?:'ve)? decided|decision|決定了?|决定了?|定案|拍板)\s*[,，:：]\s*|"
    r"(?:two|three|some|a few|\d+) rules?(?: for [^:：]{1,30})?[:：]\s*)",
    re.I,
)
_DANGLING_WORDS = re.compile(
    r"(?:\s+(?:a|an|the|and|or|but|to|of|for|with|in|on|at|by|from|into|as|so|than|that|which|when|if|because|"
    r"instead of|rather than|instead|rather|not|is|are|be|your|our|my|this|these|those))+$",
    re.I,
)
_DANGLING_CHARS = " ,，:：;；、—–-(（[「『\"'.…"
_OPENERS = {"(": ")", "（": "）", "[": "]", "「": "」", "『": "』", "【": "】", "《": "》"}


def _width(s: str) -> float:
    return sum(_CJK_WIDTH if _CJK.match(ch) else 1.0 for ch in s)


def _tidy_end(t: str) -> str:
    prev = None
    while prev != t:
        prev = t
        # an opening bracket or quote that the cut left unclosed: drop it and what follows
        for o, c in _OPENERS.items():
            i = t.rfind(o)
            if i >= 0 and t.find(c, i) < 0:
                t = t[:i]
        if t.count("`") % 2:
            i = t.rfind("`")
            t = t[:i] + t[i + 1 :]
        t = t.rstrip(_DANGLING_CHARS)
        t = _DANGLING_WORDS.sub("", t)
        t = re.sub(r"(?<=[\u3400-\u9fff])[的和或與与及把被在]$", "", t)
    return t


def title_for(content: str) -> str:
    """A short title cut from the start of ``content``.

    Cuts only between tokens: a Latin word or identifier is never split (CJK may be cut between
    characters), about 40 CJK / 70 Latin characters at most, preferring a clause boundary, and no
    dangling punctuation, connective or unclosed bracket at the end."""
    text = " ".join(content.split())
    m = _SENTENCE_END.search(text)
    first = text[: m.start()] if m else text
    lead = None
    while lead != first:
        lead = first
        first = _TITLE_LEAD.sub("", first.strip(), count=1).strip() or first.strip()
    if _CJK.search(first) and _width(first) > _TITLE_SOFT:
        # CJK rules run on with commas; the first clause is usually the rule itself
        for b in _CLAUSE_BREAK.finditer(first):
            if 14 <= _width(first[: b.start()]) <= _TITLE_MAX:
                first = first[: b.start()]
                break
    if _width(first) > _TITLE_MAX:
        out: list[str] = []
        used = 0.0
        for tok in _TOKEN.findall(first):
            w = _width(tok)
            if used + w > _TITLE_MAX:
                break
            out.append(tok)
            used += w
        cut = "".join(out)
        # prefer the last clause boundary if it keeps at least 40% of the budget
        best = None
        for b in _CLAUSE_BREAK.finditer(cut):
            if _width(cut[: b.start()]) >= 0.4 * _TITLE_MAX:
                best = b.start()
        first = cut[:best] if best is not None else cut
    t = _tidy_end(first.strip(_DANGLING_CHARS)).strip()
    if not t:
        # nothing but punctuation at the start: fall back to the first tokens of the content
        t = _tidy_end("".join(_TOKEN.findall(text)[:12]).strip(_DANGLING_CHARS)).strip()
    return _capitalise(t)


_TECH = re.compile(
    r"`([^`\n]{2,40})`|(\b[\w.-]*\.(?:py|ts|tsx|js|json|ya?ml|toml|md|sql|sh|lock|env)\b)|"
    r"(\.[a-z]{2,8}\b(?=\s+files?))|"
    r"(\b[\w-]+/[\w./-]+/?)|(\b[A-Za-z][\w.+#-]*\d[\w.+#-]*\b)|(\b[a-z]+(?:_[a-z0-9]+)+\b)|"
    r"(\b[a-z]+[A-Z]\w+\b)|(\b[A-Z][a-z0-9]+[A-Z]\w+\b)|(\b[A-Z][A-Za-z0-9.+#-]{1,30}\b)"
)
_EN_STOP = set(
    """the a an and or but for with from into onto this that these those there their them they you your we our
    us it its is are be been was were have has had do does did not no nope never always please use using used
    when then than also only just very more most some any all each every new old before after so as at by in
    on of to up down out over under because since while instead rather keep make sure don't dont go let's lets
    remember going forward now from heads watch okay ok actually two rules rule one files file code run add put
    get set see try way yes why how who out off own per via its too got can may must should would could
    everywhere something anything thing things""".split()
)
_ZH_SPLIT = re.compile(
    r"[，。、；：！？「」『』（）()\s,.;:!?\"'`]+|的|了|和|与|與|及|或|在|把|被|要|用|不|都|是|请|請|也|就|会|會|将|將|再|先|后|後|时|時"
)


def keywords_for(content: str) -> list[str]:
    out: list[str] = []

    def add(w: str) -> None:
        w = w.strip(" .,;:()[]{}'\"")
        if 2 <= len(w) <= 40 and fold(w) not in {fold(x) for x in out} and fold(w) not in _EN_STOP:
            out.append(w)

    for m in _TECH.finditer(content):
        add(next(g for g in m.groups() if g))
    for w in re.findall(r"[A-Za-z][A-Za-z-]{2,}", content):
        if w.lower() not in _EN_STOP and len(out) < 6:
            add(w.lower() if not w.isupper() else w)
    for seg in _ZH_SPLIT.split(content):
        seg = "".join(_CJK.findall(seg)) if _CJK.search(seg) else ""
        if 2 <= len(seg) <= 6 and len(out) < 8:
            add(seg)
    return out[:8]


def _w(alts: str) -> str:
    # a whole word or identifier: "test" must not fire inside "Test-Path", "env" not inside "venv"
    return rf"(?<![\w.-])(?:{alts})(?![\w-])"


# Category cues over the folded text (lower case, Simplified Chinese). Each category scores the sum
# of the weights of its cues that occur; the highest score wins and ties go to the earlier category.
# The category list (docs/extraction.md) has no "tools" category: shell, command, path, encoding and settings rules belong to the
# environment configuration; user_communication is about how the assistant talks, so language names
# ("中文", "English") count there only next to a verb of answering.
_CATEGORY_CUES: tuple[tuple[str, tuple[tuple[int, re.Pattern[str]], ...]], ...] = tuple(
    (cat, tuple((wgt, re.compile(p)) for wgt, p in cues))
    for cat, cues in (
        (
            "user_communication",
            (
                (2, _w(r"answers?|answering|repl(?:y|ies|ying)|respond(?:s|ing)?|responses?")),
                (2, r"回答|回复|答复|回应|跟我说|对我说|告诉我|给我看|问我|称呼我|语气|口吻"),
                (
                    1,
                    _w(
                        r"talk to me|tell me|show me|ask me|explain\w*|summar(?:y|ies|ise|ize)|concise|verbose|bullet points?|tl;?dr|diffs?|emojis?"
                    ),
                ),
                (1, r"结论|解释|啰嗦|简洁|(?:超过|最多|不超过).{0,3}段|分段|条列"),
                (
                    1,
                    r"(?:回答|回复|说|讲|交流|沟通|答|写给我).{0,8}(?:繁体|简体|中文|英文|日文)|(?:繁体|简体|中文|英文|日文).{0,4}(?:回答|回复|说|讲|交流|沟通)",
                ),
                (1, _w(r"(?:in|into) (?:plain )?(?:english|chinese|japanese|traditional chinese|simplified chinese)")),
            ),
        ),
        (
            "common_pitfalls_experience",
            (
                (2, r"踩坑|坑[:：]|陷阱|会导致|会被.{0,12}(?:弄坏|覆盖|删除|吃掉)|弄坏"),
                (2, _w(r"watch out|heads up|gotcha|pitfall|beware|caveat")),
                (2, _w(r"fyi|resets?|gets? wiped")),
                (1, _w(r"warns?|breaks?|silently")),
                (1, r"注意|小心|否则"),
            ),
        ),
        (
            "important_decision_experience",
            (
                (2, _w(r"we(?:'ve)? decided|decision|let'?s go with|we(?:'ll| will) go with")),
                (2, r"决定|定案|拍板"),
                (1, _w(r"architecture|trade-?offs?|adopt\w*")),
                (1, r"采用|选用|架构|方案"),
            ),
        ),
        (
            "development_test_specification",
            (
                (
                    2,
                    _w(
                        r"tests?|testing|pytest|jest|vitest|unittest|mocha|fixtures?|mock(?:s|ing|ed)?|coverage|tdd|e2e|respx|hypothesis"
                    ),
                ),
                (2, r"测试|单元测|单测"),
            ),
        ),
        (
            "development_practice_specification",
            (
                (
                    2,
                    _w(
                        r"commit\w*|pull requests?|prs?|branch(?:es)?|rebas\w*|git|conventional commits|pre-commit|code review|changelog"
                    ),
                ),
                (2, r"提交|分支|合并|审查|审核|发布流程|开 ?pr"),
                (
                    1,
                    _w(
                        r"push(?:ed|ing)?|merg\w+|reviews?|ci|releases?|codegen|generated|lint\w*|ruff|eslint|prettier|flake8|readme|docs?|documentation|workflow"
                    ),
                ),
                (1, r"文档|说明文件|流程|版本号|审"),
            ),
        ),
        (
            "project_build_configuration",
            (
                (
                    2,
                    _w(
                        r"webpack|vite|rollup|esbuild|tsconfig(?:\.json)?|pyproject(?:\.toml)?|package\.json|dockerfile|makefile|cmake|gradle|maven|setup\.py|[\w-]+\.config\.(?:js|ts|mjs|cjs)"
                    ),
                ),
                (2, r"构建|建置|打包|编译"),
                (1, _w(r"build(?:s|ing)?|bundl\w+|compil\w+|alias(?:es)?")),
            ),
        ),
        (
            "project_environment_configuration",
            (
                (
                    2,
                    _w(
                        r"powershell|pwsh|bash|zsh|cmd(?:\.exe)?|shell|terminal|command line|cli|environment variables?|env vars?|\.env[\w.]*|proxy|docker|venv|virtualenv|conda|wsl|encoding|utf-8(?: with bom)?|bom"
                    ),
                ),
                (
                    2,
                    _w(
                        r"(?:get|set|new|remove|test|join|invoke|start|stop|copy|move|write|read|out|select|where|import|export|add|clear|resolve|split)-[a-z]+"
                    ),
                ),
                (2, r"(?<![\w.-])[a-z][a-z0-9_]*=\S"),  # PYTHONUTF8=1
                (2, r"终端|命令行|指令|脚本|环境变|编码|乱码|端口|时区|代理"),
                (
                    1,
                    _w(
                        r"scripts?|env|environment|paths?|config(?:uration)?|settings?|ports?|install\w*|windows|macos|linux|hooks?|timezone|utc|cache|locale|uv|pip|brew|apt|nvm|pyenv|sudo|cron|quote[ds]?"
                    ),
                ),
                (1, r"环境|配置|设定|设置|路径|安装|快取|缓存|权限"),
            ),
        ),
        (
            "project_tech_stack",
            (
                (
                    2,
                    _w(
                        r"pnpm|npm|yarn|bun|react|svelte|vue|angular|next\.js|nuxt|django|flask|fastapi|express|spring|rails|tailwind(?: ?css)?|redis|postgres(?:ql)?|mysql|sqlite|mongo(?:db)?|kafka|rabbitmq|elasticsearch|opensearch|graphql|grpc|date-fns|moment(?:\.js)?|lodash[\w-]*|structlog|pydantic|httpx|requests|axios|sqlalchemy|prisma|jwt"
                    ),
                ),
                (2, _w(r"(?:python|node|java|go|rust|typescript) \d[\d.]*")),
                (1, _w(r"frameworks?|librar(?:y|ies)|packages?|dependenc(?:y|ies)|sdk|orm|typescript|stack")),
                (1, r"框架|函式库|套件|(?<!数据)库(?!存)|技术栈|选型|依赖"),
            ),
        ),
        (
            "development_code_specification",
            (
                (
                    2,
                    _w(
                        r"functions?|methods?|class(?:es)?|variables?|constants?|type hints?|typing|docstrings?|comments?|naming|snake_case|camelcase|pascalcase|kebab-case|async/await|async|await|promises?|indent\w*|f-strings?|parameteri[sz]ed|pathlib|os\.path|subprocess(?:\.run)?|os\.system"
                    ),
                ),
                (
                    2,
                    r"函数|变数|变量|类别|类名|常数|常量|型别|类型|注解|注释|命名|缩进|缩排|语法|写法|字符串|字串|程式码|代码|异常|回传|返回值",
                ),
                (
                    1,
                    _w(
                        r"names?|imports?|exceptions?|errors?|logging|logger|print|sql|quer(?:y|ies)|lines|style|syntax|return|null|strict\w*|code|const|var"
                    ),
                ),
                (2, _w(r"(?:\d+ )?(?:spaces|tabs)")),
                (1, r"空格|数据库|格式"),
            ),
        ),
        (
            "project_introduction",
            (
                (2, _w(r"(?:this|the|our) (?:project|repo|repository|service|app) is (?:a|an|the)")),
                (2, r"(?:这个|本)(?:项目|专案)是|项目定位|专案定位"),
            ),
        ),
    )
)
_SCENARIOS = {
    "development_test_specification": ("writing or reviewing tests", "撰寫或審查測試"),
    "user_communication": ("answering the user", "回覆使用者"),
    "common_pitfalls_experience": ("debugging a similar problem", "排查類似問題"),
    "important_decision_experience": ("changing the related design", "修改相關設計"),
    "development_practice_specification": ("committing, reviewing or releasing changes", "提交、審查或發佈變更"),
    "project_build_configuration": ("changing the build", "修改建置設定"),
    "project_environment_configuration": ("setting up or configuring the environment", "設定執行環境"),
    "project_tech_stack": ("choosing libraries and tools", "選擇函式庫與工具"),
    "development_code_specification": ("writing or reviewing code", "撰寫或審查程式碼"),
    "user_behavior": ("working with this user", "與此使用者協作"),
}


def category_for(content: str, kind: str) -> str:
    """The category (docs/extraction.md) for a user rule; pitfalls and decisions the user flagged keep their kind."""
    if kind == "decision":
        return "important_decision_experience"
    if kind == "pitfall":
        return "common_pitfalls_experience"
    f = _fold(content)
    best, best_score = "user_behavior", 0
    for cat, cues in _CATEGORY_CUES:
        score = sum(wgt for wgt, pat in cues if pat.search(f))
        if score > best_score:
            best, best_score = cat, score
    return best


_REASONS = {
    "explicit": "the user explicitly asked for this to be kept",
    "correction": "the user corrected the assistant",
    "preference": "the user stated a preference",
    "decision": "the user stated a decision",
    "pitfall": "the user recorded a pitfall",
}


# A session snapshot is the agent's record of the work, not the user's own words: what it says
# can be an important decision, but only something the user asked for in a chat becomes a rule
# that is injected into every new chat (importance >= 0.9, see recall's rule index).
RECORDED_MAX_IMPORTANCE = 0.8


# -- anaphoric continuations ("以後都照這樣做", "就这么办", "do it like that from now on") ----------------
# Such a sentence says nothing by itself: it makes the statement it points at durable. It joins
# that statement (docs/extraction.md, "Continuations") and is never a memory of its own.
_ANAPHOR = re.compile(
    r"这样|这么|照这个|按这个|照此|照做|如此|同样|一样|这种(?:方式|做法|写法)|这个(?:方式|做法|写法)|"
    r"\blike (?:that|this)\b|\b(?:this|that|the same) way\b|\bthe same\b|\bsame (?:thing|here|for|again)\b|"
    r"\bthat'?s how\b|\bkeep doing\b|\bdo (?:it|that|this|so)\b|\bas (?:above|before)\b|\bstick to (?:it|that|this)\b"
)
_DURABLE = re.compile(
    r"以后|今后|往后|每次|每一次|所有|全部|一律|统一|一直|永远|从现在|默认|"
    r"\balways\b|\bevery ?time\b|\beach time\b|\bfrom now on\b|\bgoing forward\b|\bin (?:the )?future\b|"
    r"\bfuture\b|\bkeep doing\b|\bevery(?:where|thing)?\b|\ball (?:the )?\w*\s*(?:code|files|endpoints|projects|repos|apis|of them)\b|\bby default\b"
)
_FILLER = re.compile(
    r"以后|今后|往后|每次|每一次|所有的?|全部|一律|统一|一直|永远|从现在(?:开始|起)?|默认|都|也|就|对|嗯|好的?|是的|没错|可以|"
    r"照|按|来|做|办|吧|啦|呀|哦|喔|吗|请|要|继续|再|以此|为准|这|那|个|样|么|"
    r"\b(?:yes|yep|yeah|ok|okay|right|exactly|perfect|great|good|nice|please|from|now|on|going|forward|in|the|future|"
    r"always|every|each|time|for|all|keep|keeping|doing|do|it|that|this|that'?s|how|i|want|like|same|thing|way|too|also|"
    r"so|everything|everywhere|here|again|as|above|before|stick|to|just|exactly|with|default|by|is|be|should|going)\b"
)
_GENERAL = re.compile(
    r"统一|一律|所有|全部|都|必须|不要|禁止|默认|规范|约定|"
    r"\b(?:always|never|every|all|default|must|convention|rule|don'?t|do not)\b"
)


def _substance(text: str) -> int:
    return len(_CJK.findall(text)) + 3 * len(re.findall(r"[A-Za-z0-9][\w.+#/-]*", text))


_ASKS = re.compile(r"[?？]\s*$|(?:吗|呢|(?<![这那怎什])么)\s*[。.!！]?\s*$")


def anaphoric_only(sentence: str) -> bool:
    """A sentence that only points back ("以後都這樣", "Do it like that from now on")."""
    f = _fold(sentence)
    if not _ANAPHOR.search(f) or _ASKS.search(f):
        return False
    rest = _FILLER.sub(" ", _ANAPHOR.sub(" ", f))
    return _substance(rest) <= 4


# -- enumerated requests ("記住三點：…、…、…", "Please remember a few things: …; …") -------------------
_ENUM_INTRO = re.compile(
    r"(?:记(?:住|一下|下来|下|得|几件事|几点|两件事|三件事)|牢记|备忘|"
    r"\bremember\b|\bkeep in mind\b|\bnote (?:the following|these|this)\b|\bfor future (?:sessions|reference)\b)"
)
_LIST_LINE = re.compile(
    r"^\s*(?:[-*•・]|\d{1,2}[.)）、]|[（(]\d{1,2}[)）]|[一二三四五六七八九十][、.．])\s*(?P<item>\S.*)$"
)
_ORDINAL = re.compile(
    r"(?:^|(?<=[；;，,。\s]))(?:第[一二三四五六七八九十]+(?:点|點|条|條|件)?|首先|其次|再者|最后|最後|然后|然後|"
    r"[（(]?\d{1,2}[)）]|\d{1,2}[.、](?!\d))\s*[，,:：、]?\s*"
)
_ITEM_TRIM = " \t,，;；。.!！、:："


# "記住三點" / "a few things" / "the following": the intro announces several items, so weaker
# separators (；、 ", and") split them; "Remember: A; B" without it is one rule with two clauses.
_PLURAL_CUE = re.compile(
    r"[一二两三四五六七八九十几\d]+\s*(?:点|件|条|项|个|句)|以下|下面|如下|下列|这些|"
    r"\b(?:these|the following|following|a few|few|some|several|two|three|four|five|\d+)\b"
)


_CLAUSE_VERB = re.compile(r"用|放|写|存|走|跑|加|改|要|不|禁止|统一|一律|依|按|保持|保留|必须")


def _split_items(body: str, plural: bool) -> list[str]:
    lines = [ln for ln in body.splitlines() if ln.strip()]
    listed = [m["item"] for m in (_LIST_LINE.match(ln) for ln in lines) if m]
    if len(listed) >= 2:
        return [x.strip(_ITEM_TRIM) for x in listed]
    flat = " ".join(body.split())
    parts = [x.strip(_ITEM_TRIM) for x in _ORDINAL.split(flat)]
    parts = [x for x in parts if x]
    if len(parts) >= 2:
        return parts
    if _CJK.search(flat):
        # "A 用 x、B 用 y、C 用 z": clauses with their own verb are items even without a count word
        parts = [x.strip(_ITEM_TRIM) for x in flat.split("、") if x.strip(_ITEM_TRIM)]
        if len(parts) >= 2 and all(_substance(x) >= 5 and _CLAUSE_VERB.search(_fold(x)) for x in parts):
            return parts
    if not plural:
        return []
    parts = [x.strip(_ITEM_TRIM) for x in re.split(r"[；;]", flat) if x.strip(_ITEM_TRIM)]
    if len(parts) >= 2:
        return parts
    if _CJK.search(flat):
        parts = [x.strip(_ITEM_TRIM) for x in flat.split("、") if x.strip(_ITEM_TRIM)]
        if len(parts) >= 2 and all(_substance(x) >= 5 for x in parts):
            return parts
        return []
    parts = [x.strip(_ITEM_TRIM) for x in re.split(r",\s*(?:and\s+)?|\s+and\s+(?=\w+\s)", flat) if x.strip(_ITEM_TRIM)]
    if len(parts) >= 3 and all(len(x.split()) >= 2 for x in parts):
        return parts
    return []


def enumerated_items(text: str) -> tuple[str, list[str]] | None:
    """(intro, items) when a user turn asks to remember several things at once."""
    t = text.strip()
    m = re.search(r"[:：]|\n", t)
    if m is None:
        return None
    intro, body = t[: m.start()], t[m.end() :]
    if len(intro) > 80 or not _ENUM_INTRO.search(_fold(intro)) or _NOT_MEMORY.search(_fold(intro)):
        return None
    items = [x for x in _split_items(body, bool(_PLURAL_CUE.search(_fold(intro)))) if _substance(x) >= 3]
    return (intro, items) if len(items) >= 2 else None


def _memory(
    content: str, raw: list[str], kind: str, *, sources: list[str] | None, project: str, recorded: bool
) -> MemoryObject:
    cjk = bool(_CJK.search(content))
    category = category_for(f"{' '.join(raw)} {content}", kind)
    scenario = _SCENARIOS.get(category, _SCENARIOS["user_behavior"])[1 if cjk else 0]
    importance = {"explicit": 0.9, "correction": 0.8, "preference": 0.7, "decision": 0.8, "pitfall": 0.75}.get(
        kind, 0.7
    )
    return MemoryObject(
        action="create",
        title=title_for(content),
        content=content,
        category=category,
        keywords=keywords_for(content),
        usage_scenario=[scenario],
        project=project,
        module="",
        importance=min(importance, RECORDED_MAX_IMPORTANCE) if recorded else importance,
        reason=_REASONS[kind],
        score=None,  # the assessment stage scores every candidate (longterm/assess.py)
        sources=list(sources or []),
        signal=kind,
        evidence=" ".join(raw),
    )


def _make_explicit(m: MemoryObject, *, recorded: bool) -> None:
    m.signal = "explicit"
    m.reason = _REASONS["explicit"]
    m.importance = max(m.importance, RECORDED_MAX_IMPORTANCE if recorded else 0.9)


def extract_offline(
    turns: list[Turn],
    *,
    sources: list[str] | None = None,
    project: str = "",
    first_turn: int = 0,
    recorded: bool = False,
) -> list[MemoryObject]:
    """Candidate Memory Objects from the user turns at index >= ``first_turn`` (earlier turns are
    context). Candidates carry ``signal`` and ``evidence`` but no score: the assessment stage
    (``longterm.assess.assess_offline``) scores them and the pipeline keeps those >= 4.

    ``recorded``: the turns come from a session snapshot (see RECORDED_MAX_IMPORTANCE)."""
    out: list[MemoryObject] = []
    # (turn index, sentence index) -> the candidate made from that sentence, for continuations
    made: dict[tuple[int, int], MemoryObject] = {}
    said = ""  # what the assistant said last: "不是 A，是 B" corrects it
    user_turns: list[tuple[int, list[str]]] = []  # earlier user turns, as sentences

    def emit(content: str, raw: list[str], kind: str) -> MemoryObject | None:
        if kind in ("correction", "explicit"):
            content = restructure_correction(content)
        if not content:
            return None
        m = _memory(content, raw, kind, sources=sources, project=project, recorded=recorded)
        out.append(m)
        return m

    for idx, turn in enumerate(turns):
        if turn.role != "user":
            said = turn.text
            continue
        # Only the user's own lines: a pasted warning, log, traceback, quoted doc or chat says
        # "always"/"should" in someone else's voice (docs/extraction.md, "Pasted text").
        text = own_words(turn.text)
        sentences = split_sentences(text)
        if idx < first_turn:
            user_turns.append((idx, sentences))
            continue
        enum = enumerated_items(text)
        if enum is not None:
            intro, items = enum
            for item in items:
                emit(_clean(item), [intro, item], "explicit")
            user_turns.append((idx, sentences))
            continue
        i = 0
        while i < len(sentences):
            s = sentences[i]
            if anaphoric_only(s):
                _continue_statement(s, idx, i, sentences, user_turns, made, emit, recorded=recorded)
                i += 1
                continue
            hit = classify_sentence(s, said)
            if hit is None:
                i += 1
                continue
            start = i
            raw = [s]
            content = _clean(s)
            # "記住：" / "Remember:" alone -> the rule is the next sentence.
            if len(content) < 4 and i + 1 < len(sentences):
                i += 1
                raw.append(sentences[i])
                content = _clean(sentences[i])
            if i + 1 < len(sentences) and _REASON_NEXT.search(sentences[i + 1]):
                i += 1
                raw.append(sentences[i])
                content = f"{content} {sentences[i]}"
            elif hit.kind in ("correction", "explicit") and i + 1 < len(sentences):
                # "No, don't use X. We use Y everywhere." is one correction: what not to do and
                # what to do instead belong in the same memory.
                nxt = sentences[i + 1]
                nhit = classify_sentence(nxt, said)
                follows = (
                    nhit is not None and nhit.kind in ("correction", "preference") and hit.kind == "correction"
                ) or (_NEG_START.search(content) is not None and _POS_START.search(_clean(nxt)) is not None)
                if follows and len(content) + len(nxt) <= 240:
                    i += 1
                    raw.append(nxt)
                    content = f"{content} {_clean(nxt)}"
            m = emit(content, raw, hit.kind)
            if m is not None:
                for k in range(start, i + 1):
                    made[(idx, k)] = m
            i += 1
        user_turns.append((idx, sentences))
    return out


def _statement(s: str) -> bool:
    f = _fold(s)
    return not _QUESTION.search(f) and _substance(s) >= 6 and not anaphoric_only(s) and not _NOT_MEMORY.search(f)


def _continue_statement(
    s: str,
    idx: int,
    i: int,
    sentences: list[str],
    user_turns: list[tuple[int, list[str]]],
    made: dict[tuple[int, int], MemoryObject],
    emit,
    *,
    recorded: bool,
) -> None:
    """Join an anaphoric continuation to the statement it points at (same turn first, then the
    user's previous turn): make that statement's candidate explicit, or create it."""
    durable = bool(_DURABLE.search(_fold(s)))
    target: list[tuple[int, int, str]] = []
    for k in range(i - 1, -1, -1):
        if _statement(sentences[k]):
            target = [(idx, k, sentences[k])]
            break
    if not target and user_turns:
        pidx, psent = user_turns[-1]
        stmts = [(pidx, k, x) for k, x in enumerate(psent) if _statement(x)]
        if stmts and sum(len(x) for _, _, x in stmts) <= 240:
            target = stmts
        elif stmts:
            target = stmts[-1:]
    if not target:
        return
    existing = [made[(t, k)] for t, k, _ in target if (t, k) in made]
    if existing:
        m = existing[-1]
        if durable:
            _make_explicit(m, recorded=recorded)
        m.evidence = f"{m.evidence} {s}".strip()
        return
    text = " ".join(x for _, _, x in target)
    if not durable and not _GENERAL.search(_fold(text)):
        return  # "對，就這樣" after a one-off instruction approves the task, it sets no rule
    if _NOT_MEMORY.search(_fold(text)):
        return
    content = " ".join(_clean(x) for _, _, x in target)
    m = emit(content, [text, s], "explicit" if durable else "preference")
    if m is not None:
        for t, k, _ in target:
            made[(t, k)] = m
