"""The watcher daemon: keeps ``memory/index.md`` true to the session files on disk.

Small rooms, one job each:

- ``debounce``  — per-path quiet timer (pure, injected clock);
- ``scan``      — snapshot of the watched files (injected stat/listdir/read) and their comparison;
- ``reconcile`` — PURE planning: folder snapshot + index text -> actions and reports;
- ``apply``     — carries the actions out through ``VaultWriter`` (the one safe writer);
- ``queue``     — the long-term extraction queue that survives restarts;
- ``service``   — the observer threads, the rescan timer and the loop that ties the above together;
- ``control``   — start / stop / status of the background process.
"""
