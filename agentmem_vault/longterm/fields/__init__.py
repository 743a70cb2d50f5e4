"""Every field of a long-term note, derived from what was found (docs/notes.md, Fields).

Detection (``longterm/offline.py``, the model path) decides which memories a conversation holds;
the functions here decide how each one is filed: category, keywords, usage scenarios, importance,
title, file name. They are pure functions of the memory's text and of the statement it came from,
so that both extraction modes and the evaluation share them. Scope is ``longterm/scope.py``.
"""
