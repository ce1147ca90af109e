"""`python -m pipeline judge FILE... [--json]`: re-judge result files from their artifacts alone.

Exit 0 when every verdict a file stores equals the derived one (or it stores none), 1 when any differs (each
difference is one line on stderr), 2 when a file cannot be read as artifacts (one line naming file and field).
"""

from __future__ import annotations

import argparse
import json
import sys

from .derive import derive
from .load import BadInput
from .model import printable
from .tables import as_text


def judge_main(argv: list[str]) -> int:
    """Print a table per scenario (or every cell and disagreement as JSON), then every disagreement, loudly."""
    parser = argparse.ArgumentParser(prog="python -m pipeline judge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE", help="result file (results/*/*.json)")
    parser.add_argument("--json", action="store_true", help="print {cells, disagreements} as one JSON object")
    args = parser.parse_args(argv)
    try:
        scenarios = [derive(path) for path in args.files]
    except BadInput as exc:
        print(printable(str(exc)), file=sys.stderr)
        return 2
    found = [d for s in scenarios for d in s.disagreements]
    if args.json:
        print(json.dumps({"cells": [{"file": s.source, **cell.as_json()} for s in scenarios for cell in s.cells],
                          "disagreements": [d.as_json() for d in found]}, indent=1))
    else:
        print("\n\n".join(as_text(s) for s in scenarios))
    for disagreement in found:
        print(f"disagreement: {disagreement.line()}", file=sys.stderr)
    return 1 if found else 0
