"""Kinds of statement by the structure of a turn, not its phrases (docs/extraction.md, "Offline
extraction"): what goes on about a rule joins it, lists that are session state give nothing, a
preference list gives one memory per item, a lead-in or symptom is no rule, a fix said as one
makes a pitfall, a correction said after its opener, a supplement in the same chat."""

from __future__ import annotations

import pytest

from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.sources import Turn


def kept(*texts: str) -> list[str]:
    """The contents kept from a chat whose turns alternate user / assistant, user first."""
    turns = [Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    return [m.content for m in memories_from_turns(turns)[0]]


@pytest.mark.parametrize(
    "chat,words",
    [
        (["Never log raw request bodies. Not in dev, not in tests, not behind a debug flag either."], ["debug flag"]),
        (
            ["Please always put the ticket id in the branch name, like `feat/PAY-1-x`. Goes for every repo I work in."],
            ["every repo"],
        ),
        (["接口返回的金额必须用整数分。浮点数之前在对账时差过几分钱，财务追了一周。"], ["对账"]),
        (["commit message 一律用英文寫。而且標題不超過 50 個字元。"], ["50"]),
        (["rebase is fine. last thing: no emoji. Not in replies, not in commit messages."], ["emoji", "commit"]),
        (["行，那就定 Element Plus，不用 Naive UI 了。主要原因就是表格。这个定下来就别再摇摆了"], ["表格"]),
    ],
)
def test_what_goes_on_about_a_rule_joins_it(chat: list[str], words: list[str]) -> None:
    """Fault 410: a rule's continuation (scope, exception, reason, example, a pointer) was a note
    of its own."""
    got = kept(*chat)
    assert len(got) == 1 and all(w in got[0] for w in words), got


@pytest.mark.parametrize(
    "text",
    [
        "dumping my list so i dont forget, don't do any of it yet:\n1. deployctl diff should ignore the label\n"
        "2. every service needs a health endpoint",
        "我列一下明天要做的，你先不用做：\n- fct_orders 改成 insert_overwrite 看看成本\n- 所有頁面都要補 loading 狀態",
        "待办先记一下：\n1. 所有接口都要加限流\n2. 升级 Node 到 20",
        "你上次說可以導入 Great Expectations，這個我再想想，先不要。",
        "The nightly export is off by one day again, but only for orders placed near midnight. what am I missing?",
        "登录接口每次都要两秒多才返回，日志贴一下：\n\n```\nWARN slow query 2103ms\n```\n\n是数据库的问题吗？",
        "writing an extractor for the returns csv. needs to be deduped on return_id and written as parquet. can you sketch it",
        "Staging always returns 502 after a deploy, here's what I see:\n\n```\n502 Bad Gateway\n```\n\nwhat could cause it?",
        "訂位 App 的狀態管理一直沒定下來，現在很亂，我想這週收斂掉。",
        "I think tabs are nicer than spaces honestly but whatever, not a hill I'll die on.",
    ],
)
def test_session_state_lead_ins_and_symptoms_give_nothing(text: str) -> None:
    """Fault 411: to-do / question list items, a deferral, a symptom or a task's need said with
    "only" / "每次都" / "needs to", an undecided choice, a hedge were rules."""
    assert kept(text) == []


@pytest.mark.parametrize(
    "text,items",
    [
        (
            "有两个习惯先说清楚，所有项目都适用：\n第一，TS 里别写 `any`，我特别烦这个。类型不确定就用 `unknown`。\n"
            "第二，回复先给结论再解释。",
            [["any", "unknown"], ["结论"]],
        ),
        ("先說我的偏好。第一，回答要簡短。第二，不要用表情符號。", [["簡短"], ["表情符號"]]),
        (
            "A few preferences about how you reply to me:\n1. keep answers short\n2. no apologies at the start",
            [["short"], ["apolog"]],
        ),
    ],
)
def test_a_list_under_a_preferences_lead_gives_one_memory_per_item(text: str, items: list[list[str]]) -> None:
    """Fault 412: lines opened by 第一/第二 were no list; reply preferences failed the gate."""
    got = kept(text)
    assert len(got) == len(items), got
    for content, words in zip(got, items, strict=True):
        assert all(w in content for w in words), content


@pytest.mark.parametrize(
    "chat,words",
    [
        (
            [
                "the worker keeps dying with OOM",
                "What is it loading?",
                "found it: the reader loaded every row group at once. fix was to set `batch_size=50_000`.",
            ],
            ["row group", "batch_size"],
        ),
        (
            [
                "Windows 用户反馈 yaml 报错",
                "可能是 BOM。",
                "对，就是 BOM。改法：读完先去掉 BOM 再解析。以后 yaml 第 1 行报错先查 BOM。",
            ],
            ["BOM", "第 1 行"],
        ),
    ],
)
def test_a_fix_said_as_one_makes_a_pitfall(chat: list[str], words: list[str]) -> None:
    """Fault 413: a cause and a labelled fix without an incident lead gave nothing ("fix was to"
    read as a task, "第 1 行" as one-off wording)."""
    got = kept(*chat)
    assert len(got) == 1 and all(w in got[0] for w in words), got


def test_a_correction_after_its_opener_keeps_what_is_so() -> None:
    """Fault 414: "No." alone, then what is so, then the rule: only the rule was kept."""
    got = kept(
        "add a profile page",
        "Here it is, with `getServerSideProps` loading the user.",
        "No. This project uses the App Router, there's no `getServerSideProps` here. "
        "Please stop suggesting pages-router code.",
    )
    assert len(got) == 1 and "App Router" in got[0] and "stop suggesting" in got[0], got


@pytest.mark.parametrize(
    "chat,words",
    [
        (
            [
                "make the button blue",
                "Done, inline style.",
                "we never use inline styles here. colors come from `theme.ts`.",
            ],
            ["inline", "theme.ts"],
        ),
        (
            ["可以記一下嗎？我們的 CI runner 沒有對外網路。測試要下載的東西都要放到 `third_party/` 底下。"],
            ["網路", "third_party/"],
        ),
    ],
)
def test_a_ban_keeps_its_alternative_and_a_bare_request_what_follows(chat: list[str], words: list[str]) -> None:
    """Fault 436: a ban and what to do instead were two notes; "可以記一下嗎？" alone kept nothing."""
    got = kept(*chat)
    assert len(got) == 1 and all(w in got[0] for w in words), got


def test_a_supplement_in_the_same_chat_adds_to_the_last_rule() -> None:
    """Fault 415: "補充一下：…" without naming a rule was a second note."""
    got = kept("以後 API 都要用 pydantic 驗證輸入。", "好。", "補充一下：驗證失敗一律回 422，錯誤欄位放在 `loc`。")
    assert len(got) == 1 and "pydantic" in got[0] and "422" in got[0], got
