"""Where one statement ends and the next begins, and which statements are lasting, by the
structure of the clauses (docs/extraction.md, "Offline extraction"): a join word before a noun
phrase names one more thing of the same statement, a 、 between two nouns cuts nothing, an intro
that sets a reach announces lasting items, a deliberation is a question, an environment fact
keeps the rule it leads to."""

from __future__ import annotations

import pytest

from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.sources import Turn


def kept(*texts: str) -> list[str]:
    """The contents kept from a chat whose turns alternate user / assistant, user first."""
    turns = [Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    return [m.content for m in memories_from_turns(turns)[0]]


@pytest.mark.parametrize(
    "text,words",
    [
        ("我特別煩你每次結尾都來一段「重點回顧」，再來一句「祝開發順利」，講完就停。", ["重點回顧", "祝開發順利"]),
        ("别每次都把整个组件贴出来，另外一大串的改动解释，给我 diff 就行。", ["整个组件", "改动解释"]),
        ("Stop adding emoji to commit messages, and also those 'Hope this helps' sign-offs.", ["emoji", "sign-offs"]),
        (
            "樣式那件事是：ledgerly 不用 Bootstrap，按鈕、表格全部用 `ui/kit.css` 的 class，不准寫 inline style。",
            ["Bootstrap", "kit.css"],
        ),
    ],
)
def test_a_join_word_or_a_comma_before_a_noun_phrase_cuts_no_statement(text: str, words: list[str]) -> None:
    """Fault 880: "…，再來一句「…」", "…, and also those …" and "不用 X，按鈕、表格全部用 Y" were cut
    into fragments, each a note of its own that held half of one statement."""
    got = kept(text)
    assert len(got) == 1 and all(w in got[0] for w in words), got


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "a few ground rules for every repo, not just ledgerly:\n- lead with the answer\n"
            "- if you're not sure a flag exists, say so\n- keep replies short unless I ask",
            ["answer", "flag", "short"],
        ),
        ("還有兩個所有專案都適用的：變數名用英文；但是文件用繁體中文寫。", ["英文", "繁體中文"]),
        ("这几条哪个项目都一样：\n1. 改之前先说要动哪些文件\n2. 新依赖先问我", ["哪些文件", "新依赖"]),
    ],
)
def test_an_intro_that_sets_a_reach_announces_lasting_items(text: str, words: list[str]) -> None:
    """Fault 881: the items of a list (or a count) under "this applies in every repo:" /
    "所有專案都適用：" were kept only when each had a rule word of its own; "A；但是 B" after
    "兩個" was one note."""
    got = kept(text, "ok")
    assert len(got) == len(words), got
    assert all(any(w in g for g in got) for w in words), got


@pytest.mark.parametrize(
    "text",
    [
        "在想 ledgerly 要不要換成 SvelteKit，路由比較好寫。",
        "在考虑 ledgerly 要不要拆出一个报表服务，你先对比一下。",
        "wondering whether ledgerly should drop GraphQL. it might be overkill now.",
        "在犹豫 ledgerly 的队列一律用 SQS 还是自己搭 RabbitMQ",
    ],
)
def test_a_deliberation_is_a_question_not_a_rule(text: str) -> None:
    """Fault 882: "要不要…" / "wondering whether … should" / "在猶豫 A 還是 B" was a rule."""
    assert kept(text) == []


def test_an_environment_fact_keeps_its_rule_when_a_symptom_is_named() -> None:
    """Fault 883: a setup fact with its rule and the symptom that follows a slip ("一定要裝 cu118，
    裝錯不會報錯，只會變慢") was dropped as a problem to look at."""
    got = kept(
        "另外 GPU 機器的環境你也知道一下：那幾台是 CUDA 11.8，torch 一定要裝 cu118，裝到 CPU 版不會報錯，只會慢。"
    )
    assert len(got) == 1 and "cu118" in got[0], got


@pytest.mark.parametrize(
    "chat,words,gone",
    [
        (["ledgerly 的約定：資料表名一律用複數。", "好", "補充表名那條：關聯表用 `a_b` 的形式。"], ["複數", "a_b"], ""),
        (
            [
                "ledgerly's config file always lives at `~/.ledgerly.toml`.",
                "ok",
                "add to that config rule: respect `$XDG_CONFIG_HOME`.",
            ],
            ["ledgerly.toml", "XDG_CONFIG_HOME"],
            "",
        ),
        (
            [
                "先定：ledgerly 的错误处理统一用 `anyhow`。",
                "好",
                "等等，我想了一下，刚才 anyhow 那条要改：library 里面不要用 anyhow，改用 `thiserror`。",
            ],
            ["thiserror"],
            "统一用 `anyhow`",
        ),
        (
            [
                "ledgerly tests always use jest.",
                "ok",
                "forget the jest rule, we moved to vitest, use `vitest` for every new test.",
            ],
            ["vitest"],
            "always use jest",
        ),
    ],
)
def test_a_supplement_or_reversal_of_a_rule_of_the_same_chat_leaves_one_memory(
    chat: list[str], words: list[str], gone: str
) -> None:
    """Fault 884: "補充 X 那條：…" / "add to that X rule: …" after X in the same chat was a second
    note; "X 那條要改：…" / "forget the X rule" left X as a note next to its replacement."""
    got = kept(*chat)
    assert len(got) == 1 and all(w in got[0] for w in words), got
    assert not gone or gone not in got[0], got


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "the ledgerly queue moves to `expo-sqlite`, not AsyncStorage, it falls over past a few MB. and MMKV is out too, we never touch native modules before launch.",
            ["expo-sqlite", "MMKV"],
        ),
        ("拍板：ledgerly 打包用 Vite，不用 webpack。Parcel 也不要，外掛太少。", ["Vite", "Parcel"]),
    ],
)
def test_an_alternative_ruled_out_after_a_decision_stays_with_it(text: str, words: list[str]) -> None:
    """Fault 885: "X is out too" / "X 也不要" after a decision was a rule of its own."""
    got = kept(text)
    assert len(got) == 1 and all(w in got[0] for w in words), got


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "查到了，ledgerly 的报表差一天是因为 cron 用 UTC 跑。这个坑是这样的：报表的时间一律在渲染时才转当地时间。",
            ["UTC", "渲染"],
        ),
        (
            "found the cause: the CDN cached our 404s for a day. here's the pitfall: in ledgerly always purge the CDN path after an upload.",
            ["404", "purge"],
        ),
    ],
)
def test_a_found_cause_and_the_fix_a_pitfall_label_opens_are_one_pitfall(text: str, words: list[str]) -> None:
    """Fault 886: after "查到了" / "found the cause", "這個坑是這樣的：<fix>" / "here's the pitfall:
    <fix>" was a second note (the cause alone, the fix alone)."""
    got = kept(text)
    assert len(got) == 1 and all(w in got[0] for w in words), got


def test_a_pitfall_story_ends_at_its_fix_and_the_next_turns_fact_is_its_own() -> None:
    """Fault 887: after an incident's fix, the user's next turn ("順便說一下環境：…") was taken into
    the incident's story."""
    got = kept(
        "原因找到了，ledgerly 的時間戳有毫秒有秒，之前一律當秒存。以後入庫前都要先判斷單位，大於 1e12 的當毫秒。",
        "好，已修改。",
        "順便說一下本地測試的環境：要先 `docker compose up -d db`，而且本地 db 的埠是 5433，不是預設的 5432。",
    )
    assert len(got) == 2 and "1e12" in got[0] and "5433" in got[1], got


@pytest.mark.parametrize(
    "chat",
    [
        [
            "we need a `GET /v2/refunds` endpoint in ledgerly. it should accept `from` and `to` and return at most 50 rows."
        ],
        ["做刪除流程", "確認可以用 modal 或跳到新頁面。", "可以，刪除確認用 modal 不要跳新頁"],
        ["我们需要一个导入弹窗。弹窗要能按 Esc 关掉，点遮罩不要关。"],
        [
            "can you build the settings page?",
            "Option A: a grid. Option B: tabs.",
            "sounds good, use tabs for the settings page, not the grid",
        ],
        ["ledgerly 前端要加一个账单列表页，按状态筛选。", "好的。", "可以，状态筛选用下拉框不要用 tab"],
    ],
)
def test_the_spec_of_what_the_user_asks_to_make_now_is_no_lasting_rule(chat: list[str]) -> None:
    """Fault 888: "it should accept …" after "we need a X", and "可以，<X> 用 A 不要用 B" about the X the
    chat is making, were rules (a false note in a chat with no memory)."""
    assert kept(*chat) == []


@pytest.mark.parametrize(
    "chat,words",
    [
        (
            [
                "add a moderation queue",
                "I'll add a JSON endpoint and a fetch() script.",
                "no, that's wrong for this project. ledgerly has no JSON endpoints for its own UI, views return "
                "server-rendered partials swapped in with htmx. no hand-written fetch() js please",
            ],
            ["htmx", "fetch()"],
        ),
        (
            [
                "加一個逾時設定",
                "我把設定寫進 `config.json` ……",
                "錯了，ledgerly 不吃 json 設定。設定都放在 `config.yaml`。",
            ],
            ["json", "config.yaml"],
        ),
        (
            [
                "記住購物車",
                "我把購物車存在 localStorage。",
                "这样不行，ledgerly 的购物车存在服务端，按 session id 存。",
            ],
            ["服务端", "session"],
        ),
    ],
)
def test_a_correction_opener_that_judges_keeps_what_is_so(chat: list[str], words: list[str]) -> None:
    """Fault 889: after "no, that's wrong for this project." / "錯了，" / "这样不行，" the note held only
    the last rule, or nothing, not what the user said is so."""
    got = kept(*chat)
    assert len(got) == 1 and all(w in got[0] for w in words), got


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "fyi for all my repos: branch names are `type/short-desc`, and never push straight to main.",
            ["type/short-desc", "main"],
        ),
        (
            "ledgerly 的迁移都是纯 SQL 放在 `db/migrations/`，并且每次改表结构都必须写回滚脚本。",
            ["db/migrations/", "回滚脚本"],
        ),
        ("ledgerly 的错误一律输出到 stderr，而且除非加了 `--debug`，绝对不要给用户看堆栈。", ["stderr", "堆栈"]),
    ],
)
def test_two_rules_about_different_things_in_one_sentence_are_two(text: str, words: list[str]) -> None:
    """Fault 890: "A, and never B" / "A，而且絕對不要 B" about two different things was one note
    holding two memories (one of them unmatched)."""
    got = kept(text)
    assert len(got) == 2 and words[0] in got[0] and words[1] in got[1], got


@pytest.mark.parametrize(
    "text,words",
    [
        (
            "I don't want you to ever rename public functions in ledgerly without asking. keep `__all__` stable.",
            ["rename", "__all__"],
        ),
        (
            "the ledgerly export kept timing out and I finally found why: the api throttles us after 20 requests. "
            "so the export must reuse one `httpx.Client` for the whole batch.",
            ["20 requests", "httpx.Client"],
        ),
    ],
)
def test_a_dislike_said_as_a_want_and_a_cause_found_in_other_words(text: str, words: list[str]) -> None:
    """Fault 891 (the probe set of this pass): "I don't want you to ever …" was no preference, and
    "I finally found why: <cause>. so <fix>" gave the fix alone."""
    got = kept(text)
    assert len(got) == 1 and all(w in got[0] for w in words), got


def test_a_refusal_of_the_action_the_assistant_offers_keeps_why_and_what_instead() -> None:
    """Fault 892: "Should I run X?" - "NO. don't. <why>. <what to do instead>" gave nothing (the
    opener carried no verdict and no sentence after it said what to do in rule words)."""
    got = kept(
        "plan the staging vpc",
        "The plan is stuck at `Acquiring state lock` for 4 minutes. Should I run `terraform force-unlock`?",
        "NO. don't. state is in the `ledger-tfstate` s3 bucket with dynamodb locking, a plan hanging on 'Acquiring "
        "state lock' just means someone else's atlantis run holds the lock. wait for it or ask in #infra, "
        "force-unlock on a live lock has corrupted state for us before",
    )
    assert len(got) == 1 and "ledger-tfstate" in got[0] and "force-unlock" in got[0], got
