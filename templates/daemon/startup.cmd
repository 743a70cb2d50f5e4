@echo off
setlocal DisableDelayedExpansion
rem Written by `agentmem daemon install`; `agentmem daemon uninstall` removes it.
start "" /b {line}
