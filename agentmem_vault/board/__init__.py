"""The board (``memory/index.md``): its table, rules, summary, writes, Session IDs and chat
registration, in one place (docs/board.md "Where the rules live"). Nothing is imported here: the
sessionStart hook imports only the modules it needs."""
