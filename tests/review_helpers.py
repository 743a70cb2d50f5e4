"""Shared by the regression tests of the hook/daemon/extraction reviews: a rule note (importance >= 0.9) as Obsidian would hold it."""

RULE = """---
id: lt-abc123
title: 回答語言
category: user_communication
keywords: [繁體中文]
importance: 0.95
score: 5
status: active
updated: 2026-11-29T15:20
---
以後回答一律用繁體中文，程式碼註解維持英文。
"""
