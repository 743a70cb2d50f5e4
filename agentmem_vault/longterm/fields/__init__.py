"""Every field of a long-term note (docs/notes.md, Fields): how each memory detection found is
filed (category, keywords, usage scenarios, importance, title, file name), as pure functions of
its text and statement shared by both extraction modes and the evaluation (scope: longterm/scope.py)."""
