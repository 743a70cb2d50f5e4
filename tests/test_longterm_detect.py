"""Candidate detection that holds on new wording (docs/extraction.md, "Offline extraction"):
segmentation into clauses and items, kinds of statement, scope words, decisions and pitfalls as
memories, snapshot Decisions, to-dos left out, and the figures on the development fixtures."""

from __future__ import annotations

import pytest

from agentmem_vault.longterm.evaluate import builtin_set, evaluate, load_fixtures
from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.offline import extract_offline
from agentmem_vault.longterm.sources import Turn, snapshot_turns


def kept(*texts: str, said: str = "") -> list:
    turns = ([Turn("assistant", said)] if said else []) + [Turn("user", t) for t in texts]
    return memories_from_turns(turns)[0]


@pytest.mark.parametrize(
    "text,parts",
    [
        ("回覆一律用繁體中文，另外程式碼註解用英文。", [["繁體中文"], ["註解"]]),
        ("CSS 一律用 Tailwind，還有不要用 !important。", [["Tailwind"], ["!important"]]),
        (
            "Always format with black, and also never commit anything in the notebooks/ folder.",
            [["black"], ["notebooks/"]],
        ),
        ("We log in UTC; plus, every log line needs the request_id field.", [["UTC"], ["request_id"]]),
    ],
)
def test_items_joined_by_also_are_one_memory_each(text: str, parts: list[list[str]]) -> None:
    mems = kept(text)
    assert len(mems) == len(parts), [m.content for m in mems]
    for m, words in zip(mems, parts):
        assert all(w in m.content for w in words), m.content


@pytest.mark.parametrize(
    "text,n",
    [
        (
            "Two things for all changes in this repo: every bug fix comes with a regression test in tests/regress/, "
            "and tests never hit the network, stub HTTP with `responses`.",
            2,
        ),
        ("这个项目有三条规矩：分支名用 feat/xxx 格式，commit 用 Conventional Commits，合并用 rebase。", 3),
        ("這個專案的規矩如下：\n- 不准直接 push main\n- PR 至少要一個人 review\n- CI 沒過不能 merge", 3),
        ("给你说几个约定，前端路由全用懒加载、接口请求全走 src/api 封装、全局样式只放 styles/global.scss。", 3),
        ("Couple of house rules: PR titles in imperative mood, and squash-merge only.", 2),
        ("记两点：一是接口返回统一包一层 code、data、msg；二是错误码放在 errors.go 里集中管理。", 2),
        (
            "A few conventions you should know: migrations are named YYYYMMDD_description.sql; "
            "seed data lives in db/seeds/; and a migration is never edited after it's merged.",
            3,
        ),
    ],
)
def test_a_request_announcing_several_items_gives_one_memory_per_item(text: str, n: int) -> None:
    mems = kept(text)
    assert len(mems) == n, [m.content for m in mems]


def test_never_cut_at_an_ellipsis_and_the_reason_stays_with_the_decision() -> None:
    (m,) = kept("定了：去重用唯一索引，寫入用 INSERT ... ON CONFLICT DO NOTHING，不用 Redis 鎖，因為多一個依賴不值得。")
    assert "ON CONFLICT DO NOTHING" in m.content and "Redis" in m.content and "依賴不值得" in m.content
    assert m.statement is not None and m.statement.kind == "decision"
    assert m.category == "important_decision_experience"


@pytest.mark.parametrize(
    "text,words,kind",
    [
        ("不用 Kafka，先用 Postgres LISTEN/NOTIFY；流量超过 1k/s 再评估。", ["LISTEN/NOTIFY", "1k/s"], "decision"),
        (
            "Final call: monorepo with pnpm workspaces. Separate repos made version bumps painful.",
            ["pnpm workspaces", "version bumps"],
            "decision",
        ),
        (
            "Gotcha: on Windows the tests fail with UnicodeDecodeError because open() defaults to cp1252. "
            "Always pass encoding='utf-8'.",
            ["cp1252", "encoding='utf-8'"],
            "pitfall",
        ),
        (
            "之前排查过，接口偶发 502 是因为 nginx 的 keepalive_timeout 比上游短，调成 75s 就好了。",
            ["502", "keepalive_timeout", "75s"],
            "pitfall",
        ),
        (
            "Going to make it a team convention: every feature flag gets an owner and a removal date in flags.yaml.",
            ["flags.yaml"],
            "convention",
        ),
        (
            "Thanks, that fixed it. From here on, run `npm run typecheck` before you tell me something is done.",
            ["npm run typecheck"],
            "explicit",
        ),
        ("I prefer small PRs, under about 300 changed lines.", ["300"], "preference"),
        (
            "For the record, the dev server runs on port 5173 and proxies /api to localhost:8000.",
            ["5173", "8000"],
            "environment",
        ),
        (
            "When the docker build is mysteriously slow, it's because node_modules isn't in .dockerignore.",
            ["node_modules", ".dockerignore"],
            "pitfall",
        ),
        ("图片资源放 public/images，不是 src/assets。", ["public/images", "src/assets"], "rule"),
        ("本地起服务要先 `docker compose up -d postgres redis`，不然会连不上。", ["docker compose", "连不上"], "rule"),
    ],
)
def test_each_kind_of_statement_is_one_memory_with_its_reason_or_fix(text: str, words: list[str], kind: str) -> None:
    mems = kept(text)
    assert len(mems) == 1, [m.content for m in mems]
    assert all(w in mems[0].content for w in words), mems[0].content
    assert mems[0].statement is not None and mems[0].statement.kind == kind


def test_scope_words_are_kept_with_the_statement() -> None:
    (m,) = kept("這個專案的 API 路徑一律用複數名詞，像 /users 而不是 /user。")
    assert m.statement is not None and m.statement.reach == "project" and "這個專案" in m.statement.scope_words
    (m,) = kept("Keep type hints everywhere, mypy strict is on in all my repos.")
    assert m.statement is not None and m.statement.reach == "all_projects"


@pytest.mark.parametrize(
    "text",
    [
        "TODO: 明天把 migration 跑一遍",
        "My coworker always says we should use tabs. Whatever, not my call.",
        "这个报错怎么解决？UnicodeDecodeError: 'gbk' codec can't decode byte 0xae",
        "We need a settings page.",
    ],
)
def test_todos_reported_rules_and_inline_output_are_not_memories(text: str) -> None:
    assert kept(text) == []


def test_every_snapshot_decision_is_a_decision_and_superseded_retires_it() -> None:
    text = (
        "# Session: 2026-05-25-1318-cursor-main-agent\n\n## Metadata\n- Updated At: 2026-05-25 14:02\n\n"
        "## Current Context\n- 帳單重構\n\n## Decisions\n- 對外 webhook 一律帶 Idempotency-Key\n"
        "- 不用 Kafka，先用 Postgres LISTEN/NOTIFY；流量超過 1k/s 再評估\n- 金額一律用整數分存\n"
        "- [superseded] 用 CRUD 存帳單\n\n## Next Actions\n- 寫測試\n"
    )
    turns = snapshot_turns(text).turns
    mems = extract_offline(turns, recorded=True)
    decisions = [m for m in mems if m.action == "create" and m.category == "important_decision_experience"]
    assert len(decisions) == 3, [m.content for m in mems]
    assert any("LISTEN/NOTIFY" in m.content for m in decisions)
    (gone,) = [m for m in mems if m.action == "delete"]
    assert "CRUD" in gone.content
    assert all(m.statement is not None and m.statement.said_at == "2026-05-25T14:02" for m in mems)
    assert all(m.importance <= 0.8 for m in mems)


def test_development_fixtures_by_kind_reach_the_targets() -> None:
    report = evaluate(load_fixtures(builtin_set("kinds")))
    d = report.to_dict()
    assert d["noise_false_positives"] == 0, report.table()
    assert report.precision >= 0.95 and report.recall >= 0.90, report.summary_line()
    for kind, row in d["by_kind"].items():
        if kind in ("decision", "pitfall", "convention", "environment"):
            assert row["recall"] >= 0.8, (kind, row)


def test_the_statement_carries_its_reason_alternatives_and_the_rule_it_names() -> None:
    (m,) = kept("定了：去重用唯一索引，寫入用 INSERT ... ON CONFLICT DO NOTHING，不用 Redis 鎖，因為多一個依賴不值得。")
    assert m.statement is not None
    assert m.statement.reason.startswith("因為") and any("Redis" in a for a in m.statement.alternatives)
    (r,) = extract_offline([Turn("user", "之前那條「完成前要跑 yarn lint」作廢，以後改成跑 `npm run verify`。")])
    assert r.statement is not None and r.statement.kind == "reversal"
    assert any("yarn lint" in n for n in r.statement.names) and "npm run verify" in r.content


@pytest.mark.parametrize(
    "text,word",
    [
        ("The build agents are Debian 12 boxes with no Docker.", "Debian 12"),
        ("I'm on a ThinkPad with Windows 11 and Git Bash.", "Git Bash"),
        ("我們的 CI 跑在自架的 Jenkins 上，沒有外網。", "Jenkins"),
        ("我用的是 zsh 加 oh-my-zsh，别给我 fish 的语法。", "zsh"),
    ],
)
def test_an_environment_fact_needs_no_lead_in(text: str, word: str) -> None:
    # the subject (the user's setup) and a state verb make the fact, not "for the record"
    (m,) = kept(text)
    assert word in m.content and m.statement is not None and m.statement.kind == "environment"


@pytest.mark.parametrize(
    "text,parts",
    [
        (
            "ashgrove 的 job 名稱一律用 snake_case。worker 裡面不准直接 sleep，要用 backoff。",
            [["snake_case"], ["sleep"]],
        ),
        ("ashgrove 的接口统一返回 envelope。别在日志里打印 token，会泄漏。", [["envelope"], ["token"]]),
        ("ashgrove 的日誌一律用 JSON 格式。不要用純文字日誌。", [["JSON", "純文字"]]),
        ("ashgrove never uses global state. shared values come from `context.py`.", [["global state", "context.py"]]),
    ],
)
def test_a_ban_next_to_a_bound_rule_of_its_own_is_a_second_memory(text: str, parts: list[list[str]]) -> None:
    # a ban joins the rule it is the alternative of; next to a rule bound on its own it is one more
    mems = kept(text)
    assert len(mems) == len(parts), [m.content for m in mems]
    for m, words in zip(mems, parts):
        assert all(w in m.content for w in words), m.content


@pytest.mark.parametrize(
    "rule,supplement,words",
    [
        ("roundup 的 HTTP 呼叫一律設 5 秒 timeout", "再補一條剛剛那條規則：重試最多三次", ["timeout", "重試"]),
        ("roundup 的表名一律用复数", "表名那条再加一点：中间表用 a_b 的形式", ["复数", "a_b"]),
        (
            "roundup jobs must be idempotent.",
            "one more for the idempotent rule: they log the job id.",
            ["idempotent", "job id"],
        ),
    ],
)
def test_a_supplement_told_with_an_add_verb_joins_its_rule(rule: str, supplement: str, words: list[str]) -> None:
    # an "add" verb and a name of the earlier rule make a supplement: one memory, its rule first
    (m,) = memories_from_turns([Turn("user", rule), Turn("assistant", "OK."), Turn("user", supplement)])[0]
    assert all(w in m.content for w in words) and m.content.index(words[0]) < m.content.index(words[1])
    task = [
        Turn("user", "幫 roundup 的 parser 寫測試"),
        Turn("assistant", "加了 4 個。"),
        Turn("user", "再補一個空字串的測試案例"),
    ]
    assert memories_from_turns(task)[0] == []


@pytest.mark.parametrize(
    "said,text",
    [
        ("", "給 paywire 的帳單頁加一個匯出按鈕，資料來源是 invoices_view，檔名帶上月份"),
        ("", "好，正事：paywire 的搜尋框要加一個清除按鈕，選了之後游標回到輸入框"),
        ("Renamed it in 6 files.", "ok, but this commit should only have the rename, nothing else."),
        ("I replaced the sleep with polling.", "行，就这么改，这个 PR 只改这个测试"),
        ("The cache key is missing the locale.", "原來是我自己改壞了 config，改回來就好了，不用改程式"),
        ("Probably a stale env file.", "my bad, I had an old .env from another branch, no code change needed."),
        ("測試不穩定是因為 sleep。", "TestUpload 又不穩定了，先這樣"),
    ],
)
def test_what_is_said_about_the_change_being_made_now_is_no_memory(said: str, text: str) -> None:
    # a request to make something with its spec, a reply that scopes this change, the user's own
    # slip: about this chat's work only (docs/extraction.md, "The spec of what is being made now")
    assert kept(text, said=said) == []
    (m,) = kept("ok. from now on every commit in paywire holds one change only.", said=said or "Done.")
    assert "one change" in m.content


@pytest.mark.parametrize(
    "text,word",
    [
        ("every worker in ferrypod sets `prefetch_count` to 1.", "prefetch_count"),
        ("nobody imports from `ferrypod.internal` outside the core package.", "ferrypod.internal"),
        ("ferrypod 的每個 queue 名稱都帶環境前綴，像 prod.orders。", "prod.orders"),
        ("ferrypod 里谁都不直接读 os.environ，配置都从 settings 对象拿。", "os.environ"),
        ("what I want kept is simple: each ferrypod task logs its `task_id` on the first line.", "task_id"),
    ],
)
def test_a_plain_statement_of_every_thing_of_a_kind_is_a_rule(text: str, word: str) -> None:
    # a quantified subject with a verb of its own needs no modal (docs/extraction.md, "Kinds of statement")
    (m,) = kept(text)
    assert word in m.content and m.statement is not None and m.statement.kind == "rule"


@pytest.mark.parametrize(
    "text",
    [
        "each export file in ferrypod is about 2M rows.",
        "nobody here wants to own the quarterly scan.",
        "ferrypod 的每個 worker 都有點慢。",
        "every time I run `make test` in ferrypod it fails with a timeout.",
    ],
)
def test_a_state_a_wish_or_a_symptom_of_every_thing_is_no_rule(text: str) -> None:
    assert kept(text) == []


@pytest.mark.parametrize(
    "text,word,rule",
    [
        ("Don't say the `saltmine` build is green until `make ci` passes locally.", "make ci", True),
        ("saltmine 别贴整段日志给我，只给报错那几行就行。", "日志", True),
        ("don't worry about the saltmine lint job, I'll look at it.", "", False),
        ("don't merge the saltmine branch yet, I'm still reviewing.", "", False),
        ("别忘了下班前把 saltmine 那个 PR 合了", "", False),
    ],
)
def test_a_negative_imperative_is_a_rule_whatever_its_verb(text: str, word: str, rule: bool) -> None:
    # docs/extraction.md, "Kinds of statement": "don't <verb>" / "別 <verb>" at a sentence's head
    mems = kept(text)
    assert (len(mems) == 1 and word in mems[0].content) if rule else mems == [], [m.content for m in mems]


@pytest.mark.parametrize(
    "fact,question",
    [
        ("我的筆電是 M2 的 MacBook。", "brew 裝 postgres 為什麼一直失敗？"),
        ("Our build agents run Debian 12.", "Why can't they find python3.12?"),
        ("我们的 CI 跑在自建的 Jenkins 上。", "帮我看看这个流水线为什么卡住"),
    ],
)
def test_the_setup_in_a_turn_that_asks_is_the_situation_unless_a_lead_keeps_it(fact: str, question: str) -> None:
    # docs/extraction.md, "Lead-ins and symptoms": no lead, no memory; "for the record" keeps it
    assert kept(f"{fact} {question}") == [] and len(kept(fact)) == 1
    lead = "跟你說一下環境，" if fact[0] > "~" else "For the record, "
    (m,) = kept(f"{lead}{fact} {question}")
    assert m.statement is not None and m.statement.kind == "environment"


@pytest.mark.parametrize(
    "text",
    ["I'm on my laptop today, so builds are slow.", "我今天用公司電腦，明天換回來。", "Which Postgres is staging on?"],
)
def test_a_passing_state_or_a_question_about_the_setup_is_no_memory(text: str) -> None:
    assert kept(text) == []


@pytest.mark.parametrize(
    "text,words",
    [
        ("Could you stop adding a 'Hope this helps!' line to every reply? It wastes space.", ["every reply"]),
        ("Why do you keep wrapping one-liners in a function? Inline them, please.", ["Inline"]),
        ("你可不可以不要每次都幫我加 type: ignore？型別錯就直接修。", ["type: ignore", "直接修"]),
        ("为什么你总是把配置写死在代码里？用 .env 不行吗？", ["写死", ".env"]),
    ],
)
def test_a_dislike_asked_as_a_question_is_a_preference_with_its_remedy(text: str, words: list[str]) -> None:
    (m,) = kept(text)
    assert all(w in m.content for w in words) and m.statement is not None and m.statement.kind == "preference"


@pytest.mark.parametrize(
    "text",
    [
        "Can you not just use a dict here?",
        "Could you not touch the migrations in this PR?",
        "为什么这个测试一直失败？",
        "你能不能先别提交，等我看完？",
        "推播那件事後來跟 PM 討論完了",
        "消息队列选型的事定下来了。",
    ],
)
def test_a_question_or_an_announcement_without_its_content_is_no_memory(text: str) -> None:
    assert kept(text) == []


def test_a_decision_said_before_its_settling_word_is_kept() -> None:
    (m,) = kept("消息队列用 Kafka，不用 RabbitMQ，就这么定了。")
    assert "Kafka" in m.content and m.statement is not None and m.statement.kind == "decision"


@pytest.mark.parametrize(
    "text,parts",
    [
        (
            "I honestly don't like nested ternaries. Also, early returns please, in every function.",
            [["ternaries"], ["returns"]],
        ),
        ("別老是把密碼印在 log 裡。還有錯誤訊息請一律用英文寫。", [["密碼"], ["英文"]]),
        ("我很讨厌 utils.py 越写越大。另外常量请都放到 constants.py 里。", [["utils.py"], ["constants.py"]]),
        ("The PR looks fine. Also, when you add a migration, please add its rollback too.", [["rollback"]]),
    ],
)
def test_a_request_opened_by_also_after_another_statement_is_one_memory_of_its_own(
    text: str, parts: list[list[str]]
) -> None:
    mems = kept(text)
    assert len(mems) == len(parts), [m.content for m in mems]
    for m, words in zip(mems, parts):
        assert all(w in m.content for w in words), m.content


@pytest.mark.parametrize(
    "text", ["Looks good. Also please fix the typo in the header.", "好喔，另外可以再跑一次測試嗎？"]
)
def test_also_before_a_one_off_task_or_a_question_is_no_memory(text: str) -> None:
    assert kept(text) == []


def chat(*pairs: str) -> list:
    return memories_from_turns([Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(pairs)])[0]


def test_an_incident_told_over_several_turns_is_one_pitfall_with_symptom_cause_and_fix() -> None:
    mems = chat(
        "Figured out why the search page went blank in Safari.",
        "What was it?",
        "Our bundle used Array.prototype.at, which Safari 14 lacks.",
        "I see.",
        "We added core-js polyfills to the build. If a page breaks only in Safari again, check the browserslist first.",
    )
    (m,) = mems
    assert m.statement is not None and m.statement.kind == "pitfall"
    assert all(w in m.content for w in ("blank", "Array.prototype.at", "core-js", "browserslist")), m.content
    (z,) = chat(
        "上線後報表一直是空的，原因查到了。",
        "是什麼？",
        "排程的 cron 用的是 UTC，報表卻按台北時間算日期。已經把排程改成 Asia/Taipei，之後新的排程都要明確寫時區。",
    )
    assert "UTC" in z.content and "Asia/Taipei" in z.content and "。已經" in z.content


def test_an_incident_without_the_users_fix_or_with_a_slip_is_no_memory() -> None:
    assert (
        chat("Why does the worker crash at night?", "It runs out of memory; always stream the CSV.", "ok thanks") == []
    )
    assert chat("找到問題了，是我在 config.ts 打錯字，已經修好。") == []
    assert chat("Found the bug: a typo in utils.py, lenght instead of length. Fixed.") == []
    assert chat("原因找到了", "是什麼？", "好像是網路的問題吧？") == []


@pytest.mark.parametrize(
    "text,n",
    [
        (
            "我们组有几个硬性要求你记一下：接口必须做参数校验；异常不许吞掉，至少要打日志；还有就是禁止在循环里查数据库。",
            3,
        ),
        ("前端有三個約定：元件用 PascalCase 命名；樣式一律用 CSS Modules；還有就是，圖片都放 public/images。", 3),
        ("For the record: staging uses the eu-west-1 bucket, and every upload must set the x-amz-acl header.", 2),
    ],
)
def test_every_item_boundary_counts_at_once(text: str, n: int) -> None:
    # "A；B；还有就是 C" is three items (not "A；B" and C); a fact ", and" a rule are two
    assert len(kept(text)) == n, [m.content for m in kept(text)]


def test_numbered_items_after_a_colon_and_a_correction_naming_what_it_replaces() -> None:
    mems = kept("我们的约定有三条：1. 接口返回统一包一层 data；2. 错误码用字符串；3. 时间一律 ISO 8601。")
    assert [m.content for m in mems if "1." in m.content] == [] and len(mems) == 3, [m.content for m in mems]
    (m,) = kept("No, not pytest.mark.skip. Use xfail with a reason.")
    assert "xfail" in m.content
    assert kept("Could you stop here for a moment? I need to check something.") == []
    assert kept("FYI I'll be away tomorrow.") == []


def test_a_problem_report_about_the_setup_is_no_environment_fact() -> None:
    assert kept("the dev server keeps crashing with EADDRINUSE") == []
    assert [m.content for m in kept("The dev server runs on port 5173 behind Caddy.")] != []
