"""`python -m pipeline judge FILE... [--json]`: re-judge result files from their artifacts alone."""

from __future__ import annotations

import argparse
import json
import sys

from .derive import derive
from .load import BadInput
from .tables import as_text


def judge_main(argv: list[str]) -> int:
    """Print a table per scenario (or every cell as JSON); bad input is one line on stderr and exit 2."""
    parser = argparse.ArgumentParser(prog="python -m pipeline judge", description=__doc__)
    parser.add_argument("files", nargs="+", metavar="FILE", help="result file (results/scenarios/*.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per cell")
    args = parser.parse_args(argv)
    try:
        scenarios = [derive(path) for path in args.files]
    except BadInput as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([cell.as_json() for s in scenarios for cell in s.cells], indent=1))
    else:
        print("\n\n".join(as_text(s) for s in scenarios))
    return 0
