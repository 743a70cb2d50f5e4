"""Console entry point. Hook commands are dispatched before click is imported: the sessionStart
hook runs on every new chat and must start fast."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"] or (len(args) >= 3 and args[0] == "--vault" and args[2] == "hook"):
        from .hooks import main as hook_main  # fast path: no click, no heavy imports

        sys.exit(hook_main(args))
    from .cli import cli

    cli.main(args=args, prog_name="agentmem")


if __name__ == "__main__":
    main()
