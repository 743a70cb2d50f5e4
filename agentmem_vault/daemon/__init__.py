"""The watcher daemon: keeps ``memory/index.md`` true to the session files on disk.

Small rooms, one job each:

- ``debounce``  — per-path quiet timer (pure, injected clock);
- ``scan``      — snapshot of the watched files (injected stat/listdir/read) and their comparison;
- ``reconcile`` — PURE planning: folder snapshot + index text -> actions and reports;
- ``apply``     — carries the actions out through ``BoardWriter`` (the one safe writer);
- ``queue``     — the long-term extraction queue that survives restarts;
- ``watch``     — the observer threads: filter events, put paths on the loop's inbox;
- ``passes``    — which changes are real (own writes by hash), the reconcile pass, Properties;
- ``extraction`` — the worker thread that extracts what the queue says is due;
- ``recall_sync`` — the recall index kept in step with long-term/ (and its heartbeat);
- ``status``    — the status file `daemon status` reads;
- ``service``   — the loop that ties the above together (and its stop check);
- ``process``   — ``daemon run``: instance lock, signals, pid file (``pidfile``), log;
- ``control``   — start / stop / status of the background process.
"""
