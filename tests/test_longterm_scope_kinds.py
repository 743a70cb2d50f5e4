"""Scope of the kinds `eval-unseen5` got wrong (docs/extraction.md, "Round 3 held-out unseen5: the
failures by kind"): a fact said of all the user's machines, and a separate preference after an
incident's story."""

from __future__ import annotations

import pytest

from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.scope import scope_for
from agentmem_vault.longterm.sources import Turn

ENV = "project_environment_configuration"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("On every machine I use, python comes from pyenv, so give me pyenv commands.", ("", "global")),
        ("none of my laptops have nvm, node comes from mise", ("", "global")),
        ("我所有的電腦上 Java 都是用 SDKMAN 裝的", ("", "global")),
        ("不管哪台電腦，我的 git 都設了 pull.rebase=true", ("", "global")),
        ("我的几台 Mac 装的都是 OrbStack", ("", "global")),
        # one machine, or the project's machines, stay the project's
        ("my work laptop for this repo only has 8GB of RAM", ("shop", "project")),
        ("the CI machines only have Java 17", ("shop", "project")),
        ("我這台筆電是 Intel 的 Mac，image 要能在 amd64 上跑", ("shop", "project")),
    ],
)
def test_a_fact_of_all_the_users_machines_goes_with_them_into_every_project(text, expected):
    assert scope_for(ENV, text, "shop") == expected


@pytest.mark.parametrize(
    ("said", "pitfall", "preference"),
    [
        (
            "終於找到 fernkit 上傳一直失敗的原因：nginx 的 client_max_body_size 還是預設的 1m，大一點的檔案就被擋。"
            "把它調到 50m 就好了。另外你回答的時候程式碼區塊請標語言，這個每個專案都適用。",
            "client_max_body_size",
            None,
        ),
        (
            "brambleapp 登录测试不稳定的原因查清楚了：fixture 在测试之间共用了 session cookie，顺序一变就挂。"
            "每个测试用自己的 client 之后就稳了。另外别每次回答最后都附一段改动总结，我自己会看 diff。",
            "cookie",
            "总结",
        ),
        (
            "root cause of the memory spike in lanternd: we cached every rendered page forever in a plain dict. "
            "an LRU with maxsize=512 fixed it. and one more thing, unrelated: answer me in short paragraphs "
            "without headings, whatever repo we're in.",
            "LRU",
            "headings",
        ),
    ],
)
def test_a_preference_after_an_incident_is_not_part_of_the_incident(said, pitfall, preference):
    kept = memories_from_turns([Turn("user", said)], project="shop")[0]
    incident = [m for m in kept if pitfall in m.content]
    assert len(incident) == 1, [m.content for m in kept]
    # the project's pitfall stays the project's, without the user's preference glued on
    assert (incident[0].project, incident[0].scope) == ("shop", "project")
    assert all(w not in incident[0].content for w in ("回答", "answer me", "總結", "总结"))
    if preference is not None:
        pref = [m for m in kept if preference in m.content]
        assert len(pref) == 1 and pref[0].scope == "global", [(m.content, m.scope) for m in kept]
