#!/bin/sh
# agentmem hook for Cursor, Claude Code and Codex CLI (POSIX shell); one script for both events.
#
#   command:  sh "/path/with spaces/hooks/agentmem-hook.sh" start cursor    (start|end; cursor|claude|codex)
#   optional: any further arguments (e.g. --vault "/path/to/vault") are passed to agentmem.
#
#   start -> `agentmem hook <agent>-session-start`: registers the chat, answers with its Session ID
#   end   -> `agentmem hook <agent>-session-end` (Codex: codex-stop): queues the transcript
#
# The agent's JSON on stdin goes untouched to agentmem, whose JSON answer goes untouched to stdout.
# If agentmem cannot be started at all (or the event is unknown) the answer is {}: no Session ID,
# nothing queued, so a broken install never breaks the chat. Set AGENTMEM_BIN to pin the program.
kind="${1:-}"
[ "$#" -gt 0 ] && shift
agent="${1:-cursor}"
[ "$#" -gt 0 ] && shift
case "$agent" in
  cursor|claude|codex) ;;
  *) agent=cursor ;;
esac
case "$kind" in
  start|session-start) hook="$agent-session-start" ;;
  end|session-end|stop)
    case "$agent" in codex) hook=codex-stop ;; *) hook="$agent-session-end" ;; esac ;;
  *)
    echo "agentmem-hook.sh: first argument must be start or end (got '$kind')" >&2
    printf '{}\n'
    exit 0 ;;
esac

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
