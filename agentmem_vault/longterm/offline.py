"""Rule-based extractor used when there is no API key (or with ``--offline``).

It reads only what the *user* said (seed 000: information that comes purely from the assistant
is not a memory) and keeps sentences that carry an explicit request ("記住", "from now on", "以後都",
"下次不要", "always use ..."), a correction ("不對，...", "No, don't use ...") or a stated preference
("I prefer", "我習慣", "請用"), plus stated decisions and pitfalls. Questions, one-off task details
("for this file only", "這次先") and chit-chat are left out. The output is the same Memory Objects
the model would produce, with an assessment score already set (explicit = 5, others = 4).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..textnorm import fold
from .schema import MemoryObject
from .sources import Turn

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
        ("explicit", 5, 0.9, r"以后(?:都|一律|请|要|不要|别|也|统一|默认|的)|今后|往后|从现在(?:开始|起)|下次(?:不要|别|记得|请|要)|不要再|别再|永远(?:不要|要)|一律"),
        ("explicit", 5, 0.9, r"\b(?:please\s+)?remember(?:\s+that|\s+to|\s*:|,)|\bnote for (?:the )?future\b|\bfrom now on\b|\bgoing forward\b|\bin (?:the )?future,"),
        ("explicit", 5, 0.85, rf"(?:^|please\s+|you\s+(?:should|must)\s+|we\s+(?:should|must)\s+|make sure (?:to|you)\s+|so\s+|and\s+)(?:always|never)\b|\b(?:always|never)\s+(?:{_EN_VERBS})\b"),
        ("correction", 4, 0.8, r"^(?:不对|错了|不是这样|搞错了|不行|不要这样)|应该(?:是|用|要)|而不是|不要用|别用|改用|换成|不能(?:用|直接)"),
        ("correction", 4, 0.8, rf"^(?:no|nope|wrong|that'?s (?:wrong|not right|incorrect)|not quite|actually)\b|\binstead of\b|\brather than\b|\bdon'?t (?:{_EN_VERBS})\b|\bdo not (?:{_EN_VERBS})\b|\bstop (?:using|writing|adding)\b|\bi (?:said|told you)\b"),
        ("preference", 4, 0.7, r"我(?:比较)?(?:喜欢|偏好|偏爱|习惯|倾向)|请(?:用|使用|改用|统一)|统一(?:用|使用)|预设|默认(?:用|使用|是)|命名请"),
        ("preference", 4, 0.7, r"\bi(?:'d| would)? prefer\b|\bi like (?:to|it when|my|our)\b|\bplease (?:use|write|keep|show|answer|reply|format|put|prefer)\b|\bour convention\b|\bthe convention is\b|\bby default\b|\bwe (?:always )?use\b"),
        ("decision", 4, 0.8, r"(?:决定|定案|拍板)(?:了|用|采用|:|：|，|,)|采用|选用|\bwe(?:'ve)? decided\b|\bdecision:|\blet'?s go with\b|\bwe(?:'ll| will) go with\b"),
        ("pitfall", 4, 0.75, r"踩坑|坑[:：]|注意[:：]|会导致|会被.*(?:弄坏|覆盖|删除)|\bwatch out\b|\bheads up\b|\bgotcha\b|\bpitfall\b|\bbeware\b|\bcaveat\b"),
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
_QUESTION = re.compile(r"[?？]\s*$|(?:吗|么|呢)\s*[。.!！]?\s*$|^(?:should|can|could|would|is|are|do|does|did|why|what|how|which|where|when)\b")
_EXPLICIT_LEAD = re.compile(
    r"^(?:(?:ok|okay|好|好的|嗯)[,，]?\s*)?(?:(?:请|帮我)?(?:记住|记得|牢记|备忘)|please remember(?: that)?|remember(?: that)?|note for (?:the )?future|"
    r"from now on|going forward|in (?:the )?future|heads up|watch out|踩坑记录|踩坑|注意|另外|also|and|"
    r"(?:no|nope|actually|wrong|不对|错了|不是这样|搞错了)(?=[,，:：;；.\s—-]))[\s,，:：;；.—-]*",
    re.I,
)
_SPLIT = re.compile(r"(?<=[。！？\n])|(?<=[.;!?])\s+(?=[A-Z`\"'(])|(?<=；)")
_REASON_NEXT = re.compile(r"^(?:because|since|so that|as |因为|因為|原因|由于|由於|这样|這樣)", re.I)
_ONE_OFF_SCOPE = re.compile(r"\b(?:this|that) (?:file|function|line|variable|component|pr|branch)\b|这个(?:文件|函数|变量|组件)|这里|这行")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _fold(text: str) -> str:
    # textnorm's Traditional->Simplified table lacks 採->采 (as of this writing).
    return fold(text).replace("採", "采")


@dataclass(frozen=True)
class Hit:
    kind: str
    score: int
    importance: float


def classify(sentence: str) -> Hit | None:
    """Which rule (if any) makes this user sentence worth remembering."""
    f = _fold(_QUOTED.sub(" ", sentence))
    if not f or _NOT_MEMORY.search(f):
        return None
    best: Hit | None = None
    for kind, score, imp, pat in _TRIGGERS:
        if pat.search(f):
            if best is None or score > best.score:
                best = Hit(kind, score, imp)
    if best is None:
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
        if para.lstrip().startswith(("```", "    ", "\t", "Traceback", "File \"")):
            continue  # code and logs are not statements of preference
        for s in _SPLIT.split(para):
            s = " ".join(s.split())
            if s:
                out.append(s)
    return out


def _clean(sentence: str) -> str:
    s = sentence.strip()
    prev = None
    while prev != s:
        prev = s
        s = _EXPLICIT_LEAD.sub("", s, count=1).strip()
        # The lead regex works on folded text semantics; try the Traditional forms too.
        s = re.sub(r"^(?:請?記住|記得|不對|錯了|踩坑記錄|另外)[\s,，:：;；.—-]*", "", s).strip()
    if s and s[0].isalpha() and s[0].islower() and not _CJK.match(s[0]):
        s = s[0].upper() + s[1:]
    return s


def _title(content: str) -> str:
    first = re.split(r"[。.;；!！\n]", content, maxsplit=1)[0].strip()
    if _CJK.search(first):
        first = re.split(r"[，,：:]", first)[0] if len(first) > 28 else first
        t = first[:28]
    else:
        words = first.split()
        t = " ".join(words[:10])
    t = t.strip(" ,，:：—-`'\"")
    return t or content[:28]


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
_ZH_SPLIT = re.compile(r"[，。、；：！？「」『』（）()\s,.;:!?\"'`]+|的|了|和|与|與|及|或|在|把|被|要|用|不|都|是|请|請|也|就|会|會|将|將|再|先|后|後|时|時")


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


# category -> (folded cue words); the first category with a cue wins, in this order.
_CATEGORY_CUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("development_test_specification", ("test", "pytest", "jest", "unittest", "fixture", "mock", "coverage", "测试", "单元测")),
    ("user_communication", ("回答", "回复", "答复", "繁体", "简体", "中文", "英文", "语言", "answer", "reply", "respond", "explain", "language", "结论", "段", "diff", "show me", "emoji")),
    ("common_pitfalls_experience", ("踩坑", "坑", "注意", "会导致", "watch out", "heads up", "gotcha", "pitfall", "beware", "caveat", "warns", "breaks", "弄坏")),
    ("important_decision_experience", ("decided", "decision", "go with", "决定", "定案", "采用", "选用", "改用 redis")),
    ("development_practice_specification", ("commit", "push", "pr", "branch", "merge", "rebase", "review", "git", "提交", "分支", "run ", "before", "codegen", "ci", "ruff", "lint", "文档", "document")),
    ("project_build_configuration", ("build", "webpack", "vite", "pyproject", "package.json", "dockerfile", "makefile", "构建", "打包")),
    ("project_environment_configuration", ("env", "port", "config", "环境", "配置", "端口", "utc", "时区", "timezone", "lock", "cache")),
    ("project_tech_stack", ("pnpm", "npm", "yarn", "react", "svelte", "vue", "framework", "library", "python 3", "date-fns", "moment", "redis", "structlog", "框架", "库", "pydantic")),
    ("development_code_specification", ("function", "type hint", "docstring", "naming", "snake_case", "camelcase", "pascalcase", "async", "await", "indent", "空格", "缩进", "命名", "函数", "变量", "注释", "pathlib", "sql", "lines", "style")),
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
    f = _fold(content)
    for cat, cues in _CATEGORY_CUES:
        for cue in cues:
            if (re.search(rf"\b{re.escape(cue)}\b", f) if cue.isascii() and len(cue) <= 4 else cue in f):
                return cat
    if kind == "decision":
        return "important_decision_experience"
    if kind == "pitfall":
        return "common_pitfalls_experience"
    return "user_behavior"


_REASONS = {
    "explicit": "the user explicitly asked for this to be kept",
    "correction": "the user corrected the assistant",
    "preference": "the user stated a preference",
    "decision": "the user stated a decision",
    "pitfall": "the user recorded a pitfall",
}


def extract_offline(turns: list[Turn], *, sources: list[str] | None = None, project: str = "", first_turn: int = 0) -> list[MemoryObject]:
    """Memory Objects from the user turns at index >= ``first_turn`` (earlier turns are context)."""
    out: list[MemoryObject] = []
    for idx, turn in enumerate(turns):
        if idx < first_turn or turn.role != "user":
            continue
        sentences = split_sentences(turn.text)
        i = 0
        while i < len(sentences):
            s = sentences[i]
            hit = classify(s)
            if hit is None:
                i += 1
                continue
            content = _clean(s)
            # "記住：" / "Remember:" alone -> the rule is the next sentence.
            if len(content) < 4 and i + 1 < len(sentences):
                i += 1
                content = _clean(sentences[i])
            if i + 1 < len(sentences) and _REASON_NEXT.search(sentences[i + 1]):
                i += 1
                content = f"{content} {sentences[i]}"
            elif hit.kind == "correction" and i + 1 < len(sentences):
                # "No, don't use X. We use Y everywhere." is one correction: what not to do and
                # what to do instead belong in the same memory.
                nxt = classify(sentences[i + 1])
                if nxt is not None and nxt.kind in ("correction", "preference") and len(content) + len(sentences[i + 1]) <= 240:
                    i += 1
                    content = f"{content} {_clean(sentences[i])}"
            i += 1
            if not content:
                continue
            cjk = bool(_CJK.search(content))
            category = category_for(content, hit.kind)
            scenario = _SCENARIOS.get(category, _SCENARIOS["user_behavior"])[1 if cjk else 0]
            out.append(
                MemoryObject(
                    action="create",
                    title=_title(content),
                    content=content,
                    category=category,
                    keywords=keywords_for(content),
                    usage_scenario=[scenario],
                    project=project,
                    module="",
                    importance=hit.importance,
                    reason=_REASONS[hit.kind],
                    score=hit.score,
                    sources=list(sources or []),
                )
            )
    return out
