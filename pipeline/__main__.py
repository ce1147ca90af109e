"""Entry point: `python -m pipeline judge FILE... [--json]` or `python -m pipeline build`."""

from __future__ import annotations

import sys

USAGE = "usage: python -m pipeline {judge,build} ..."


def main(argv: list[str]) -> int:
    """Dispatch to a subcommand; `build` is imported only when asked for, so judging never needs the renderer."""
    if not argv or argv[0] not in ("judge", "build"):
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] == "judge":
        from .cli import judge_main

        return judge_main(argv[1:])
    from .build import main as build_main

    return build_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
