"""The watcher daemon: keeps ``memory/index.md`` true to the session files on disk. Small modules,
one duty each; docs/daemon.md says which does what, ``service.py`` ties them together."""
