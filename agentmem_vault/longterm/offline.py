"""Rule-based extractor used when there is no model (or with ``--offline``); docs/extraction.md.

Which pieces of the user's words are memories, and of what kind, is decided by
``longterm/detect.py`` (segmentation in ``clauses.py``, kinds of statement in ``kinds.py``, cue
words in ``templates/cues/``); this module turns each into the Memory Object the model would
produce, with ``signal``, ``evidence`` and its ``statement`` but no score: the assessment stage
scores them.

A correction is stored rule first ("Don't use moment. Use date-fns." -> "Use date-fns (instead of
moment)."); titles are cut only between words or CJK characters, never inside an identifier, and
identifiers keep their case; the category is the best-scoring set of cues in the Memory Object's
category list.
"""

from __future__ import annotations

import re

from agentmem_vault.model.textnorm import fold
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn
from agentmem_vault.longterm.detect import anaphoric_only, find_statements
from agentmem_vault.longterm.detect import substance
from agentmem_vault.longterm.kinds import WEIGHTS, classify, retraction_parts, scope_words
from agentmem_vault.longterm.wording import clean
from agentmem_vault.longterm.statement import Statement
from agentmem_vault.longterm.wording import capitalise as _capitalise
from agentmem_vault.longterm.wording import restructure_correction

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# the names the tests and older callers use
classify_sentence = classify
__all__ = ["anaphoric_only", "classify_sentence", "enumerated_items", "extract_offline", "restructure_correction"]


def _fold(text: str) -> str:
    return fold(text)


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
    "rule": "the user stated a rule",
    "environment": "the user described the environment",
    "convention": "the user set a convention",
    "reversal": "the user replaced an earlier rule",
    "supplement": "the user added to an earlier rule",
}
_RECORDED_REASON = "recorded as a decision in the session snapshot"


# A session snapshot is the agent's record of the work, not the user's own words: what it says
# can be an important decision, but only something the user asked for in a chat becomes a rule
# that is injected into every new chat (importance >= 0.9, see recall's rule index).
RECORDED_MAX_IMPORTANCE = 0.8


def _memory(
    content: str, raw: list[str], kind: str, *, sources: list[str] | None, project: str, recorded: bool
) -> MemoryObject:
    cjk = bool(_CJK.search(content))
    category = category_for(f"{' '.join(raw)} {content}", kind)
    scenario = _SCENARIOS.get(category, _SCENARIOS["user_behavior"])[1 if cjk else 0]
    importance = WEIGHTS.get(kind, (4, 0.7))[1]
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


def enumerated_items(text: str) -> tuple[str, list[str]] | None:
    """(intro, items) when a user turn asks to remember several things at once."""
    from agentmem_vault.longterm.clauses import paragraphs
    from agentmem_vault.longterm.detect import enumerated

    return enumerated(paragraphs(text))


def extract_offline(
    turns: list[Turn],
    *,
    sources: list[str] | None = None,
    project: str = "",
    first_turn: int = 0,
    recorded: bool = False,
) -> list[MemoryObject]:
    """Candidate Memory Objects from the user turns at index >= ``first_turn`` (earlier turns are
    context). Candidates carry ``signal``, ``evidence`` and their ``statement`` but no score: the
    assessment stage (``longterm.assess.assess_offline``) scores them and the pipeline keeps
    those >= 4.

    ``recorded``: the turns come from a session snapshot (see RECORDED_MAX_IMPORTANCE)."""
    out: list[MemoryObject] = []
    for f in find_statements(turns, first_turn=first_turn, recorded=recorded):
        # a rule said negatively first is stored rule first (not for a decision's alternatives
        # or a pitfall's symptom)
        content = f.content if f.kind in ("decision", "pitfall") else restructure_correction(f.content)
        action = f.action
        if f.kind == "reversal":
            # the memory is the rule that replaces the old one; a reversal without one only
            # retires the rule it names (curation finds it by the words that name it)
            _, rest, _ = retraction_parts(content)
            content, action = (clean(rest), action) if substance(rest) >= 6 else (content, "delete")
        if not content:
            continue
        signal = "explicit" if f.asked else f.kind
        m = _memory(content, f.raw, signal, sources=sources, project=project, recorded=recorded)
        if f.asked:
            m.importance = max(m.importance, RECORDED_MAX_IMPORTANCE if recorded else 0.9)
        turn = turns[f.turn]
        if recorded and turn.section in ("decision", "superseded"):
            m.reason = _RECORDED_REASON
            m.category = "important_decision_experience"
        words, reach = scope_words(" ".join(f.raw))
        m.statement = Statement(
            kind=f.kind, scope_words=words, reach=reach, said_at=turn.at, order=f.turn, recorded=recorded
        )
        m.action = action
        out.append(m)
    return out
