"""Pasted text in a user's message (docs/extraction.md, "Pasted text"): tool warnings, linter and
compiler output, tracebacks, CI logs, quoted docs and chats, code. The offline extractor reads only
the lines the user wrote; a rule the user states next to a paste is still extracted."""

from __future__ import annotations

import pytest

from agentmem_vault.longterm.extract import memories_from_turns
from agentmem_vault.longterm.lexicon import log_levels, log_levels_weak, output_starts
from agentmem_vault.longterm.noise import own_words, pasted_lines
from agentmem_vault.longterm.schema import MemoryObject
from agentmem_vault.longterm.sources import Turn

PIP_ROOT = (
    "WARNING: Running pip as the 'root' user can result in broken permissions and conflicting behaviour "
    "with the system package manager. It is recommended to use a virtual environment instead: "
    "https://pip.pypa.io/warnings/venv"
)


def kept(*turns: tuple[str, str]) -> list[MemoryObject]:
    mems, _, _, _ = memories_from_turns([Turn(r, t) for r, t in turns])
    return mems


@pytest.mark.parametrize(
    "line",
    [
        PIP_ROOT,
        "WARN  [main] c.e.App - Always close the session before returning",
        "ERROR: you should never run this as root",
        "npm WARN deprecated uuid@3.4.0: Please upgrade to version 7 or higher.",
        "npm ERR! code ERESOLVE",
        "warning: unused variable: `x`",
        "error[E0308]: mismatched types",
        'hint: You can replace "git config" with "git config --global" to set a default preference',
        "remote: Always use a pull request to change main.",
        "[notice] To update, run: pip install --upgrade pip",
        "##[warning]Node.js 16 actions are deprecated. Please update the following actions to use Node.js 20",
        "::warning file=app.js,line=1::Always use strict mode",
        "[WARN] 检测到 Node 版本过低，请使用 Node 18 及以上版本",
        "【错误】以后请统一使用公司镜像",
        "警告：不要在主線程呼叫網路請求",
        "src/app/db.py:57:5: E722 Do not use bare `except`",
        "/usr/lib/python3.12/site-packages/x.py:12: DeprecationWarning: Use timezone-aware objects instead",
        "main.go:14:2: should always check the error (errcheck)",
        "src/index.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.",
        " --> src/client.rs:41:9",
        '  File "/app/src/clock.py", line 8, in now',
        "\tat com.example.App.main(App.java:12)",
        "    at Object.<anonymous> (/app/x.js:3:9)",
        "  12:5   error    Unexpected console statement   no-console",
        "  |         ^^^^^^^ help: if this is intentional, prefix it with an underscore",
        "41 |     let retries = 3;",
        "Traceback (most recent call last):",
        "ValueError: 配置项 timeout 应该是整数，不要用字符串",
        "java.lang.IllegalStateException: never call this from the UI thread",
        "(node:4242) [DEP0040] DeprecationWarning: The `punycode` module is deprecated. Please use a userland alternative",
        "thread 'main' panicked at src/main.rs:3:5:",
        "2026-11-30T10:15:09.0000000Z Warning: You should always pin actions to a full length commit SHA.",
        "2026-11-30 10:02:11,345 INFO always retry on 503",
        "Nov 30 10:15:02 host sshd[42]: please use key-based auth",
        "[10:42] alice: going forward please always rebase before merging",
        "[2026-11-30 10:02] 张伟：以后提交前都要跑一遍 lint",
        "> Always run `make lint` before opening a pull request.",
        "＞ 以後都用 pnpm",
        "$ npm install --always-auth",
        ">>> always_use_this()",
        "PS C:\\Users\\me> Set-ExecutionPolicy RemoteSigned",
        "me@box:~/app$ make lint",
        "    # always use the session helper here",
        "web-1  | npm WARN config production Use `--omit=dev` instead.",
        "api_1 | always retry on 503",
        "[main] WARN  c.e.Config - Never use the default admin password",
        'time=2026-11-30T10:15:02Z level=warn msg="always retry" component=client',
        "level=error msg=never-retry-post",
        '{"level":"error","msg":"請使用 TLS 1.2 以上版本"}',
        "E       AssertionError: 不要用字符串比较，应该用整数",
        "main.cpp(12): warning C4996: 'strcpy': Consider using strcpy_s instead.",
        "@@ -10,7 +10,7 @@ def load(path):",
        "diff --git a/src/x.py b/src/x.py",
    ],
)
def test_pasted_lines_are_recognised(line):
    assert pasted_lines(line) == [True], line


@pytest.mark.parametrize(
    "line",
    [
        "From now on, always create the environment with `uv venv`.",
        "Error handling should always log the request id.",
        "error handling: always wrap with our AppError",
        "Note: we always use pnpm in this repo.",
        "note that CI runs on Node 20",
        "Warning: never run migrations on Friday.",
        "注意：以後 migration 不要在週五跑。",
        "記住：回答用繁體中文。",
        "- use pnpm, never npm",
        "1. Always rebase before merging.",
        "    - nested item: keep imports sorted",
        "| tool | rule |",
        "2026-12-01 we decided to go with Postgres.",
        "localhost:8080 is the dev port, never 3000.",
        "Use INFO level for request logs.",
        "I prefer f-strings over % formatting.",
        "The server always starts at 10:00 on weekdays.",
        "-> always use the wrapper",
        "Help me set this up: we use uv.",
        "- [ ] always write a test for the parser",
        "tool | rule: pnpm | always",
        "Everything (1) should go through the gateway.",
        "E2E tests always run against staging.",
    ],
)
def test_the_users_own_lines_are_kept(line):
    assert pasted_lines(line) == [False], line


def test_output_continues_on_indented_and_weak_lines_until_a_blank_line():
    text = "\n".join(
        [
            "WARNING: The script foo is installed in '/root/.local/bin' which is not on PATH.",
            "  Consider adding this directory to PATH or, if you prefer to suppress this warning, use --no-warn-script-location.",
            "Caused by: always check the PATH first",
            "Warning: you should always pin this",
            "From now on, install tools with pipx.",
            "Warning: never run migrations on Friday.",
            "",
            "  indented but after a blank line",
        ]
    )
    assert pasted_lines(text) == [True, True, True, True, False, False, False, False]


def test_a_diff_hunk_is_pasted_until_a_blank_line_and_a_weak_line_joins_the_output_after_it():
    text = "\n".join(
        [
            "@@ -1,3 +1,3 @@",
            "-import requests",
            "+import httpx",
            " # always use httpx",
            "From now on we use httpx.",
            "",
            "- never use requests",
            "Error: Cannot find module 'x'",
            "    at Object.<anonymous> (/app/x.js:3:9)",
        ]
    )
    assert pasted_lines(text) == [True, True, True, True, False, False, False, True, True]


def test_fenced_blocks_are_pasted_to_the_closing_fence_or_the_end():
    text = "Here's the helper:\n```python\n# Always use this\nx = 1\n```\nIs it used?\n~~~\nnever closed\n"
    assert pasted_lines(text) == [False, True, True, True, True, False, True, True]


def test_own_words_blanks_pasted_lines_and_tolerates_crlf():
    text = f"pip says:\r\n{PIP_ROOT}\r\nFrom now on, always use `uv venv`.\r\n"
    assert own_words(text).splitlines() == ["pip says:", "", "From now on, always use `uv venv`."]


def test_the_word_lists_are_data_files():
    assert {"WARNING", "warning", "hint", "错误"} <= set(log_levels())
    assert "Warning" in log_levels_weak() and "Note" not in log_levels_weak()
    assert "Traceback (most recent call last)" in output_starts() and "##[" in output_starts()


# -- end to end: what the offline pipeline keeps ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"pip printed this:\n{PIP_ROOT}\nCan I ignore it in Docker?",
        "ruff check says:\nsrc/app/db.py:57:5: E722 Do not use bare `except`\nFound 1 error.\ncan you fix it?",
        "Upstream's README says:\n> Always run `make lint` before a PR. You should never push to `main`.\nWhat does that mean?",
        "同事在群里发的：\n[2026-11-30 10:02] 张伟：以后提交前都要跑一遍 lint，不要直接推 main\n你觉得合理吗？",
        '跑 lint 出現：\n  44:17  error  Do not use "any" as a type. Use "unknown" instead  no-explicit-any\n幫我看一下',
        'Crash:\nTraceback (most recent call last):\n  File "/srv/a.py", line 3, in <module>\n'
        "ValueError: 配置项 timeout 应该是整数，不要用字符串\n帮我看看",
        "The helper:\n```python\n# Always use this instead of requests.get; never hardcode the timeout.\n```\nStill used?",
        "cargo says:\nwarning: unused variable\n  = note: `#[warn(unused_variables)]` on by default\nwhy?",
    ],
)
def test_pasted_output_alone_yields_no_memory(text):
    assert kept(("user", text), ("assistant", "Let me look.")) == []


@pytest.mark.parametrize(
    "text,must",
    [
        (f"pip complained:\n{PIP_ROOT}\nFrom now on, always create the environment with `uv venv` first.", "uv venv"),
        (
            "ruff check says:\nsrc/app/db.py:57:5: E722 Do not use bare `except`\n\n"
            "In our code, never catch `Exception` either; catch what the call raises.",
            "Exception",
        ),
        ("> 张伟：以后接口都返回驼峰字段\n> 李娜：收到\n我们这个项目的接口字段统一用 snake_case。", "snake_case"),
        (
            "git pull 跳出這個：\nhint: Pulling without specifying how to reconcile divergent branches is\n"
            "以後 git pull 一律用 rebase，不要產生 merge commit。",
            "rebase",
        ),
    ],
)
def test_the_users_own_rule_next_to_a_paste_is_kept_alone(text, must):
    mems = kept(("user", text), ("assistant", "Noted."))
    assert len(mems) == 1, [m.content for m in mems]
    assert must in mems[0].content
    assert "WARNING" not in mems[0].content and "E722" not in mems[0].content and "张伟" not in mems[0].content
