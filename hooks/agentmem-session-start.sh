#!/bin/sh
# agentmem sessionStart hook for Cursor, Claude Code and Codex CLI (POSIX shell).
#
#   command:  sh "/path/with spaces/hooks/agentmem-session-start.sh" cursor    (or claude, codex)
#   optional: any further arguments (e.g. --vault "/path/to/vault") are passed to agentmem.
#
# The agent's JSON on stdin goes untouched to `agentmem hook <agent>-session-start`, whose JSON
# answer goes untouched to stdout. If agentmem cannot be started at all the answer is {} (no
# Session ID), so a broken install never breaks the chat. Set AGENTMEM_BIN to pin the program.
agent="${1:-cursor}"
[ "$#" -gt 0 ] && shift
case "$agent" in
  cursor|claude|codex) ;;
  *) agent=cursor ;;
esac
hook="$agent-session-start"

if [ -n "${AGENTMEM_BIN:-}" ]; then
  "$AGENTMEM_BIN" hook "$hook" "$@" && exit 0
elif command -v agentmem >/dev/null 2>&1; then
  agentmem hook "$hook" "$@" && exit 0
else
  for py in python3 python; do
    if command -v "$py" >/dev/null 2>&1; then
      "$py" -m agentmem_vault hook "$hook" "$@" && exit 0
      break
    fi
  done
fi
printf '{}\n'
exit 0
