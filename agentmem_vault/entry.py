"""Console entry point. Hook commands are dispatched before click is imported: the sessionStart
hook runs on every new chat and must start fast (click alone costs more than the interpreter)."""

from __future__ import annotations

import os
import sys

# Global options that may come before the command name (``agentmem --vault V hook ...``).
_GLOBAL_WITH_VALUE = ("--vault", "--agent")
_GLOBAL_FLAGS = ("--json",)


def is_hook_call(args: list[str]) -> bool:
    i = 0
    while i < len(args):
        a = args[i]
        if a in _GLOBAL_WITH_VALUE:
            i += 2
        elif a in _GLOBAL_FLAGS or a.startswith(("--vault=", "--agent=")):
            i += 1
        else:
            return a == "hook"
    return False


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if is_hook_call(args):
        if argv is None:  # a process of its own, over in milliseconds: no cyclic GC passes (docs/performance.md)
            import gc

            gc.disable()
        from agentmem_vault.fastimport import import_pathlib

        import_pathlib()  # before the hook's imports: pathlib without urllib.parse (docs/performance.md)
        from agentmem_vault.hooks.run import main as hook_main

        code = hook_main(args)
        if argv is None:  # a process of its own (the console script)
            # The answer is written and flushed, every file closed and every lock released: skip
            # the interpreter's teardown of the imported modules (about 3 ms, docs/performance.md).
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        sys.exit(code)
    from agentmem_vault.cli import cli

    cli.main(args=args, prog_name="agentmem")


if __name__ == "__main__":
    main()
