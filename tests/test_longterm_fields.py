"""Every field of a note (docs/notes.md, Fields): keywords from a real word segmenter, titles
that are the rule, usage scenarios that name the note's subject, importance in the seed's bands,
category by what the statement is, and the field figures of `agentmem eval`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem_vault.longterm.evaluate import evaluate, load_fixtures
from agentmem_vault.longterm.fields.category import category_for, cues
from agentmem_vault.longterm.fields.checks import bad_keyword, is_template, title_problems
from agentmem_vault.longterm.fields.derive import corrects_assistant, derive_offline
from agentmem_vault.longterm.fields.importance import importance_for
from agentmem_vault.longterm.fields.keywords import keywords_for
from agentmem_vault.longterm.fields.scenarios import scenarios_for
from agentmem_vault.longterm.fields.title import title_for
from agentmem_vault.longterm.schema import CATEGORIES, MemoryObject
from agentmem_vault.longterm.sources import Turn

FIXTURES = Path(__file__).parent / "fixtures"
WEBHOOK = "對外 webhook 一律帶 Idempotency-Key，接收端以此去重，不要靠時間戳判斷重複。"


def test_keywords_are_whole_words_in_both_scripts():
    kws = keywords_for(WEBHOOK, "對外 webhook 一律帶 Idempotency-Key")
    assert "Idempotency-Key" in kws and "webhook" in kws
    # the fragments an earlier version cut across words are gone
    assert not {"一律帶", "以此去重", "對外", "一律", "Idempotency"} & set(kws)
    assert "時間戳" in kws and "时间戳" in kws  # a Traditional word and its Simplified twin
    assert len(kws) <= 8 and all(not bad_keyword(k, WEBHOOK) for k in kws)


@pytest.mark.parametrize(
    "content, present, absent",
    [
        (
            "No, don't use requests. Use httpx with the shared AsyncClient.",
            {"httpx", "requests", "AsyncClient"},
            {"Don", "shared"},
        ),
        (
            "Note: even the CLI must build paths with pathlib, never os.path.join.",
            {"pathlib", "os.path.join"},
            {"Note", "even"},
        ),
        ("我不喜歡你每次都貼整個檔案，只要給我改動的部分。", set(), {"喜歡你每次", "每次", "這個專案"}),
        (
            "这个项目统一用 pnpm，lockfile 是 pnpm-lock.yaml。",
            {"pnpm", "pnpm-lock.yaml"},
            {"这个项目统一", "这个项目", "统一"},
        ),
    ],
)
def test_keywords_never_fragments_or_generic_words(content, present, absent):
    kws = keywords_for(content)
    assert present <= set(kws) and not absent & set(kws), kws


def test_keyword_checks():
    assert bad_keyword("一律帶", WEBHOOK) == "fragment"
    assert bad_keyword("Idempotency", WEBHOOK) == "fragment"
    assert bad_keyword("間一律", "時間一律用 UTC") == "fragment"
    assert bad_keyword("這個專案", "這個專案用 pnpm") == "generic"
    assert bad_keyword("Note", "Note: x") == "generic"
    assert bad_keyword("pnpm", "這個專案用 pnpm", "pnpm") == "title"
    assert bad_keyword("Idempotency-Key", WEBHOOK) == ""


@pytest.mark.parametrize(
    "content, title",
    [
        ("決定了：對外 webhook 一律帶 Idempotency-Key，接收端以此去重。", "對外 webhook 一律帶 Idempotency-Key"),
        (
            "Note: always answer me in 繁體中文",
            "always answer me in 繁體中文",
        ),  # CJK text keeps its case (wording.capitalise)
        ("跟你說一下，程式碼註解一律用英文。", "程式碼註解一律用英文"),
        ("A couple of things for this service: run `make db-up` first", "Run `make db-up` first"),
        ("不要用 requests，改用 httpx，並且所有對外呼叫共用同一個 AsyncClient 實例。", "不要用 requests，改用 httpx"),
        (
            "Please don't use requests here. Use httpx, we need the async client.",
            "Please don't use requests here; use httpx",
        ),
        ("上週說好的：部署前先跑 `npm run verify`。", "部署前先跑 `npm run verify`"),
        ("This sprint we use pnpm for the web package.", "We use pnpm for the web package"),
        ("Docker image: python:3.11-slim, not alpine", "Docker image: python:3.11-slim, not alpine"),
        # a head before a colon that only leads to the rule
        (
            "For the deploy script here: always run `./scripts/check-env.sh` first.",
            "Always run `./scripts/check-env.sh` first",
        ),
        ("Going to make it a team convention: every feature flag gets an owner.", "Every feature flag gets an owner"),
        ("踩過一個坑：Next.js 的 middleware 裡不能用 Node 的 fs。", "Next.js 的 middleware 裡不能用 Node 的 fs"),
        ("We always set `retries=0`: a retried charge can bill twice.", "We always set `retries=0`"),
        ("I prefer small functions: keep them under 40 lines", "I prefer small functions: keep them under 40 lines"),
        # where the rule holds is the note's scope, not its title
        ("不論在哪一個專案，Shell 腳本開頭都要加 set -euo pipefail。", "Shell 腳本開頭都要加 set -euo pipefail"),
        # fillers, a relative time as a phrase, a condition alone, an example, a question
        (
            "欸我想了一下，以後表單的錯誤訊息統一放在 i18n 的 errors 命名空間底下。",
            "表單的錯誤訊息統一放在 i18n 的 errors 命名空間底下",
        ),
        ("Honestly, every external call must have a timeout.", "Every external call must have a timeout"),
        ("From this sprint on we're standardising on OpenTelemetry.", "We're standardising on OpenTelemetry"),
        ("When you add a CLI flag, document it in docs/cli.md.", "When you add a CLI flag, document it in docs/cli.md"),
        ("說真的，我很討厭變數名稱用縮寫，像 usr、cfg 這種都不要。", "我很討厭變數名稱用縮寫，像 usr、cfg 這種都不要"),
        (
            "Do you really have to add a docstring to every helper? Private helpers don't need docstrings.",
            "Private helpers don't need docstrings",
        ),
        (
            "Remember that unit tests go in tests/unit, and also that integration tests need a marker",
            "Unit tests go in tests/unit",
        ),
        # the alternative kept with a corrected rule stays with its title
        (
            "Use httpx instead, we need the async client for the worker (instead of requests here).",
            "Use httpx (instead of requests here)",
        ),
    ],
)
def test_title_is_the_rule(content, title):
    got = title_for(content)
    assert got == title and not title_problems(got)


def test_title_checks():
    assert title_problems("決定了：對外 webhook") == ["lead-in"]
    assert title_problems("上週的部署規則") == ["relative time"]
    assert title_problems("部署規則:") == ["dangling colon"]
    assert title_problems("For the deploy script here: always run check-env") == ["lead-in"]
    assert title_problems("Docker image: python:3.11-slim, not alpine") == []
    assert title_problems("對外 webhook 一律帶 Idempotency-Key") == []


def test_usage_scenarios_name_the_subject_or_are_absent():
    sc = scenarios_for(WEBHOOK, "development_code_specification", keywords_for(WEBHOOK))
    assert sc and all("Idempotency-Key" in s or "webhook" in s for s in sc)
    sc = scenarios_for("外部链接要加 rel=noopener，写组件的时候记得。", "development_code_specification", ["noopener"])
    assert "写组件的时候" in sc
    assert scenarios_for("以後都這樣。", "user_behavior", []) == []
    assert is_template("與此使用者協作", WEBHOOK) and not is_template("修改 webhook 重送邏輯時", WEBHOOK)


def test_every_category_has_cues_and_kinds_keep_theirs():
    assert {c for c, _ in cues()} == set(CATEGORIES) - {"important_decision_experience"} | {
        "important_decision_experience"
    }
    assert category_for("anything", "decision") == "important_decision_experience"
    assert category_for("anything", "pitfall") == "common_pitfalls_experience"
    assert category_for("以後回答一律用繁體中文", "explicit") == "user_communication"
    assert category_for("commit message 用 Conventional Commits", "rule") == "development_practice_specification"
    assert (
        category_for("tests must never hit the network; mock HTTP with respx", "rule")
        == "development_test_specification"
    )
    assert category_for("對外 webhook 一律帶 Idempotency-Key", "rule") == "development_code_specification"


@pytest.mark.parametrize(
    "text, kind, category",
    [
        # what the team does around the code: ask first, before a release, how merges go
        ("要升級任何套件之前，一定要先問我一聲", "rule", "development_practice_specification"),
        (
            "Never bump a major version of a dependency before asking me first",
            "rule",
            "development_practice_specification",
        ),
        ("发版前必须先在 staging 验证一遍数据迁移", "rule", "development_practice_specification"),
        ("squash-merge only", "rule", "development_practice_specification"),
        ("Every migration file needs a matching down migration", "explicit", "development_practice_specification"),
        # how the assistant answers, even when the detector read it as a decision
        ("回覆的時候先講結論，再講細節", "decision", "user_communication"),
        ("Keep code blocks in your answers under 30 lines", "rule", "user_communication"),
        ("说实话我特别烦你回答前面加一大段客套话，直接给方案", "preference", "user_communication"),
        # decided, although read as a pitfall; a tool named in a decision stays a decision
        ("我们决定了：日志统一收集到 Loki，因为磁盘老是被写满", "pitfall", "important_decision_experience"),
        ("討論完了，前端狀態管理就用 Pinia", "decision", "important_decision_experience"),
        # the runtime's version is the environment; lines and syntax are the code's
        ("Node 20.11 is what production runs", "rule", "project_environment_configuration"),
        ("Vue 元件一律用 script setup 的寫法", "rule", "development_code_specification"),
        ("Keep the line length at 88 characters", "rule", "development_code_specification"),
        ("每次修 bug 都要先写一个能复现的测试用例", "rule", "development_test_specification"),
        ("所有服務的鏡像都要基於 distroless", "rule", "project_build_configuration"),
        ("表單驗證改用 zod", "rule", "project_tech_stack"),
        ("資料庫用 PostgreSQL 15", "rule", "project_tech_stack"),
        # how the code reads its settings and how its scripts start are the code's
        ("設定請一律從環境變數讀", "rule", "development_code_specification"),
        ("配置要从 config.yaml 读", "correction", "development_code_specification"),
        ("shell 腳本請都加上 set -euo pipefail", "rule", "development_code_specification"),
        # how migrations are made and changed is practice; where they live is the build's
        ("Migrations are written by hand, never autogenerated", "rule", "development_practice_specification"),
        ("以后改数据库结构的时候，请同时写 migration 脚本", "rule", "development_practice_specification"),
        ("keep migrations in db/migrations", "rule", "project_build_configuration"),
        # where secrets are kept is how the team handles them
        ("Never commit .env files; secrets go in the vault.", "explicit", "development_practice_specification"),
        # what the assistant pastes and explains
        ("你可以不要每次都把整個檔案貼出來嗎", "preference", "user_communication"),
        ("The CI runners are Ubuntu 22.04 with no GPU", "environment", "project_environment_configuration"),
    ],
)
def test_category_by_what_the_statement_is(text, kind, category):
    assert category_for(text, kind) == category


def test_importance_bands():
    assert importance_for("rule", "記住：分支名用 feat/ 開頭") >= 0.9
    assert importance_for("rule", "never commit .env files") >= 0.9  # a red line
    assert importance_for("rule", "API 錯誤碼用四位數字", corrects_assistant=True) >= 0.9
    assert 0.7 <= importance_for("rule", "對外 webhook 一律帶 Idempotency-Key") < 0.9
    assert 0.7 <= importance_for("preference", "I prefer small functions") < 0.9
    assert 0.5 <= importance_for("pitfall", "pydantic v2 renamed .dict()") < 0.7
    assert importance_for("rule", "記住：分支名用 feat/ 開頭", recorded=True) <= 0.8
    # "from now on" says how long a rule holds, not that it is asked to be remembered
    assert 0.7 <= importance_for("rule", "For the future: when you add a CLI flag, document it") < 0.9
    assert importance_for("rule", "以後幫我留意：回覆先講結論") >= 0.9
    assert importance_for("rule", "load tests must never run against the shared staging database") >= 0.9
    assert importance_for("rule", "never log request bodies; they contain PII") >= 0.9
    # a red-line word in the premise or the consequence of another prohibition is no red line
    assert importance_for("rule", "Node 20 is what production runs, so don't rely on newer APIs") < 0.9
    assert importance_for("rule", "不能用 KEYS 命令，要用 SCAN，不然会把线上卡住") < 0.9
    # a convention announced as a plan is a project rule, "going forward" or not
    assert 0.7 <= importance_for("convention", "our convention going forward: a CHANGELOG entry per change") < 0.9
    assert importance_for("convention", "記住，這是團隊慣例：每張表都有 created_at") >= 0.9


def test_an_item_of_a_sentence_that_asks_to_remember_is_asked_for():
    said = "Remember that API handlers live in app/api/, and also that every handler gets a pydantic response model."
    m = MemoryObject(
        action="create",
        title="x",
        content="Every handler gets a pydantic response model",
        category="",
        signal="rule",
        evidence="and also that every handler gets a pydantic response model",
    )
    derive_offline(m, turns=[Turn("user", said)])
    assert m.importance >= 0.9


def test_correction_of_the_assistant_is_recognised():
    assert corrects_assistant("No, don't use requests.", "I used requests.get().")
    assert corrects_assistant("不要用 os.system，改用 subprocess.run", "我用 os.system('ls') 跑")
    assert not corrects_assistant("不要用 os.system", "")
    assert not corrects_assistant("I prefer small functions", "Okay, here is the parser.")
    assert corrects_assistant("Please stop using var.", "Here's the code with var declarations.")
    # forbidding a repeat says the assistant did it
    assert corrects_assistant("拜託不要再加 except Exception: pass 把錯誤吞掉", "我在外層加了 try/except。")
    assert corrects_assistant("Semicolons again. TS files never use semicolons.", "Added the retry.")
    assert corrects_assistant("Stop putting emojis in log messages.", "Added logging: logger.info('🚀 up')")
    assert not corrects_assistant("No matter how small the fix is, it needs a test.", "Done.")
    # frustration at a bug is not a correction of the assistant's answer
    assert not corrects_assistant("Ugh. OK, rule for this repo: timestamps are ISO 8601.", "The client reads epoch.")


def test_derived_reasons_say_what_happened():
    m = MemoryObject(
        action="create", title="x", content=WEBHOOK, category="user_behavior", signal="explicit", evidence=WEBHOOK
    )
    m.assessment_reason = "The user explicitly asked for this to be remembered or to hold from now on."
    derive_offline(m, turns=[Turn("user", WEBHOOK)])
    assert "asked" not in m.assessment_reason and "asked" not in m.reason
    # a project convention, not a user habit (the example): never a user_* category
    assert not m.category.startswith("user_") and 0.7 <= m.importance < 0.9
    assert m.title == "對外 webhook 一律帶 Idempotency-Key"


@pytest.mark.parametrize("folder", ["eval", "eval-dev"])
def test_field_figures_on_the_tuned_sets(folder):
    figs = evaluate(load_fixtures(FIXTURES / folder)).field_figures()["all"]
    assert figs["category_accuracy"] >= 0.85 and figs["scope_accuracy"] == 1.0
    assert figs["importance_band_accuracy"] >= 0.9
    assert figs["keywords_bad_share"] <= 0.05 and figs["scenarios_bad_share"] <= 0.10
    assert figs["titles_bad_share"] == 0.0


def test_eval_reports_fields_per_language(cli, tmp_path):
    p = cli("eval", "--offline", "--json", "--set", "fields-unseen", env={"AGENTMEM_VAULT": str(tmp_path / "none")})
    assert p.returncode == 0, p.stderr
    fields = json.loads(p.stdout)["sets"]["fields-unseen"]["fields"]
    assert {"all", "en", "zh-TW", "zh-CN"} <= set(fields)
    for key in ("category_accuracy", "scope_accuracy", "importance_band_accuracy", "keywords_bad_share"):
        assert key in fields["all"]
    p = cli("eval", "--offline", "--set", "dev")
    assert "template scenarios" in p.stdout and "importance" in p.stdout


def test_field_labels_cover_every_expected_memory():
    for folder in ("eval", "eval-dev", "eval-unseen", "eval-fields-unseen"):
        for fx in load_fixtures(FIXTURES / folder):
            for e in fx.expected:
                assert e.get("scope") in ("project", "global", "unscoped"), (fx.id, e)
                assert e.get("importance_band") in ("high", "mid", "low"), (fx.id, e)


def test_the_segmenter_serves_several_threads():
    """The MCP server and the daemon extract from threads; rjieba refuses a second caller while it
    works ("Already borrowed") unless the calls take turns."""
    from concurrent.futures import ThreadPoolExecutor

    from agentmem_vault.longterm.fields import segment

    texts = [WEBHOOK * 40, "這個博客的圖片統一放在 src/assets/ 下面，不然不會壓縮。" * 40] * 8
    for _ in range(5):
        segment._segmenter.cache_clear()  # first use (the dictionary is taught our terms) races too
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(keywords_for, texts))
        assert all(r for r in results)


def test_note_times_follow_the_one_clock_to_the_second(vault, tmp_path, monkeypatch):
    from agentmem_vault.longterm.extract import extract_sources
    from agentmem_vault.longterm.notes import load_notes
    from agentmem_vault.longterm.sources import source_for_transcript

    monkeypatch.setenv("AGENTMEM_NOW", "2026-12-01T20:06:41")
    t = tmp_path / "chat.txt"
    t.write_text("user: 記住：對外 webhook 一律帶 Idempotency-Key。\nassistant: 好的\n", encoding="utf-8")
    extract_sources(vault, [source_for_transcript(t)], offline=True)
    (n,) = load_notes(vault)
    assert n.created == n.updated == "2026-12-01T20:06:41"
    raw = n.path.read_text(encoding="utf-8")
    assert (
        "created: '2026-12-01T20:06:41'" in raw
        or 'created: "2026-12-01T20:06:41"' in raw
        or "created: 2026-12-01T20:06:41" in raw
    )
    assert n.scope == "unscoped" and n.project == ""  # a text file records no workspace


@pytest.mark.parametrize(
    "title, name",
    [
        ('外部連結要加 `rel="noopener"`', "外部連結要加 rel=noopener.md"),  # was: 外部連結要加 `rel= noopener `.md
        ("Docker image: python:3.11-slim", "Docker image - python-3.11-slim.md"),
        ("圖片一律放在 src/assets/posts/ 下面", "圖片一律放在 src-assets-posts 下面.md"),
    ],
)
def test_file_names_are_readable_and_close_to_the_title(title, name):
    from agentmem_vault.longterm.notes import safe_filename

    assert safe_filename(title) == name


@pytest.mark.parametrize(
    "category, text, expected",
    [
        # the user's own preference or machine goes with them (seed 003, 9.6), unless tied to here
        ("development_code_specification", "我比較喜歡用 f-string，不太喜歡 .format()", ("", "global")),
        ("development_code_specification", "I'd rather see type hints on every public function", ("", "global")),
        # a fact about the user's machine is an environment fact: the project's
        (
            "project_environment_configuration",
            "my laptop is an M2 MacBook, images must be multi-arch",
            ("shop", "project"),
        ),
        # a dislike of the assistant's habit is the user's taste, unless it names the team's choice
        ("development_code_specification", "为什么老是用 var 声明变量？一律用 const", ("", "global")),
        ("development_code_specification", "Do you really have to add a docstring to every helper?", ("", "global")),
        ("development_code_specification", "why do you keep leaving print()? we have a logger", ("shop", "project")),
        ("development_code_specification", "I prefer small functions in this repo", ("shop", "project")),
        ("development_code_specification", "在我們這個專案裡我更喜歡用 dataclass", ("shop", "project")),
        ("project_tech_stack", "I'd prefer Svelte over React for new UI work", ("", "global")),
        # words meaning every project, however they are put
        ("development_code_specification", "不管哪個專案，我都用 f-string", ("", "global")),
        ("user_communication", "回我都用繁體中文，不管在哪個專案都一樣", ("", "global")),
        ("development_code_specification", "不論在哪一個專案，Shell 腳本都要加 set -e", ("", "global")),
        ("development_practice_specification", "任何一個專案都一樣，PR 描述要附上測試方式", ("", "global")),
        ("development_code_specification", "Whatever repo we're in, lines wrap at 100", ("", "global")),
        (
            "development_practice_specification",
            "No matter which project it is, use Conventional Commits",
            ("", "global"),
        ),
        ("development_code_specification", "2-space indentation in all my repos", ("", "global")),
        ("development_code_specification", "接口返回的时间一律用 ISO 8601 字符串", ("shop", "project")),
        ("development_code_specification", "對外 webhook 一律帶 Idempotency-Key", ("shop", "project")),
        ("development_code_specification", "對外 webhook 一律帶 Idempotency-Key", ("", "unscoped")),
        ("user_communication", "以後回答一律用繁體中文", ("", "global")),
    ],
)
def test_scope_follows_the_source_and_the_words(category, text, expected):
    from agentmem_vault.longterm.scope import scope_for

    source = "" if expected == ("", "unscoped") else "shop"
    assert scope_for(category, text, source) == expected


def test_the_users_own_way_of_working_is_tied_to_a_project_only_by_words_naming_it():
    from agentmem_vault.longterm.scope import scope_for

    said = "can you not add those 'here's what I changed' summaries?"  # the extractor read "here"
    assert scope_for("user_communication", said, "shop", reach="project") == ("", "global")
    assert scope_for("development_code_specification", "use httpx here", "shop", reach="project") == ("shop", "project")


def test_a_joined_item_is_not_covered_by_the_correction_before_it():
    from agentmem_vault.longterm.fields.derive import apply_fields
    from agentmem_vault.longterm.statement import Statement

    said = "不要再用 console.log 印錯誤了，統一丟給 logger。還有 API 的 base URL 請從 config.ts 讀。"
    turns = [
        Turn("user", "幫我補上 API 呼叫"),
        Turn("assistant", "我用 fetch 寫好了，錯誤直接 console.log。"),
        Turn("user", said),
    ]
    first, second = (
        MemoryObject(action="create", title="x", content=c, category="", signal="rule", evidence=c)
        for c in ("不要再用 console.log 印錯誤了，統一丟給 logger。", "還有 API 的 base URL 請從 config.ts 讀。")
    )
    for m in (first, second):
        m.statement = Statement(kind="rule", order=2)
    apply_fields([first, second], turns, offline=True)
    assert first.importance >= 0.9 and 0.7 <= second.importance < 0.9


def test_an_item_that_points_back_takes_its_neighbours_category():
    from agentmem_vault.longterm.fields.derive import apply_fields

    said = "Two things: e2e tests need `make seed` first, and they must never run in parallel."
    a, b = (
        MemoryObject(action="create", title="x", content=c, category="", signal="rule", evidence=c)
        for c in ("e2e tests need `make seed` first", "they must never run in parallel")
    )
    apply_fields([a, b], [Turn("user", said)], offline=True)
    assert a.category == b.category == "development_test_specification"


def test_a_pitfall_and_its_fix():
    # "記得" in a pitfall's fix asks nobody to remember it; a cause that was found makes a pitfall
    assert importance_for("pitfall", "Celery worker 卡住，原來是 prefetch 設太大，之後記得設成 1") < 0.7
    assert importance_for("pitfall", "記一下這個坑：Celery worker 會卡住") >= 0.9
    assert category_for("上週 migration 卡了二十分鐘，原來是大表加 NOT NULL 欄位沒給預設值", "rule") == (
        "common_pitfalls_experience"
    )
    assert category_for("Always run `alembic check` before `git push`", "rule") == "development_practice_specification"


def test_a_dislike_asked_as_a_question_is_a_preference():
    from agentmem_vault.longterm.fields.derive import apply_fields
    from agentmem_vault.longterm.statement import Statement

    def importance(said: str, kind: str) -> float:
        m = MemoryObject(action="create", title="x", content=said, category="", signal=kind, evidence=said)
        m.statement = Statement(kind=kind, order=2)
        turns = [
            Turn("user", "Fix the header."),
            Turn("assistant", "Here is the whole file again."),
            Turn("user", said),
        ]
        return apply_fields([m], turns, offline=True)[0].importance

    assert (
        0.7
        <= importance("Could you not rewrite my whole file every time? Show me the lines that change.", "preference")
        < 0.9
    )
    assert 0.7 <= importance("可以别再给我推荐 Redux 了吗，状态管理我们用 Zustand。", "preference") < 0.9
    # a request asked as a question still asks, for a rule from now on (0.7-0.9)
    assert (
        0.7 <= importance("Can you make sure every new endpoint gets an OpenAPI example from now on?", "explicit") < 0.9
    )
    assert importance("Can you remember that every new endpoint gets an OpenAPI example?", "explicit") >= 0.9


def test_red_lines_and_requests_by_their_own_words():
    assert importance_for("pitfall", "The migration added a NOT NULL column without a default in prod") < 0.7
    assert importance_for("rule", "测试方面记两条：单测不准访问网络") >= 0.9
    # an absolute prohibition is a red line; a statement that something never happens is none
    assert importance_for("rule", "已經上線的 migration 絕不修改") >= 0.9
    assert importance_for("rule", "这个接口绝不会返回 null，调用方不用判空") < 0.9
    # a sibling's words may ask for an item; they do not make it a red line
    said = "so you stop asking: prod runs on Postgres 15, and slow queries go to the replica"
    assert importance_for("rule", "prod runs on Postgres 15", request=said) < 0.9


@pytest.mark.parametrize(
    ("content", "title"),
    [
        ("By the way, staging deploys go through the VPN.", "Staging deploys go through the VPN"),
        ("Second, invoice numbers are never reused.", "Invoice numbers are never reused"),
        ("Unrelated, but log lines stay under 200 characters.", "But log lines stay under 200 characters"),
        ("另外，前端的日期一律用 dayjs 處理。", "前端的日期一律用 dayjs 處理"),
        ("顺便讲一下，接口的错误码统一放在 errors.ts 里。", "接口的错误码统一放在 errors.ts 里"),
        ("第二，所有金额都用分存整数。", "所有金额都用分存整数"),
    ],
)
def test_a_title_never_opens_with_a_join_word_or_an_ordinal(content, title):
    """A title is one statement standing alone: the word that joined it to the item before
    ("another thing", "另外", "顺便讲一下") or numbered it ("Second,", "第二") is a lead-in, for the
    title rule and for its checker alike (docs/notes.md, Fields)."""
    got = title_for(content)
    assert got == title, got
    assert title_problems(content.rstrip("。.")) == ["lead-in"] and not title_problems(got)
