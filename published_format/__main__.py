"""`python -m published_format FILE [--cell N]`: verify the gate records of a result file and print them as JSON.

A gate record is a cell's `evidence.receipt_bundle`, `evidence.result_file.receipt_bundle` or
`artifacts["journal.jsonl"]`; each is checked in its own format (the published one, or this journal's).

Exit 0 when every record verifies, 1 when one does not, 2 for unreadable input or a cell with no gate record
(one line on stderr naming the file and the field).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from interlock.errors import BundleError

from . import verify_record

# Where a cell keeps a gate record: (the path as `python -m interlock.receipts --at` writes it, its keys).
PLACES = ((".evidence.receipt_bundle", ("evidence", "receipt_bundle")),
          (".evidence.result_file.receipt_bundle", ("evidence", "result_file", "receipt_bundle")),
          ('.artifacts["journal.jsonl"]', ("artifacts", "journal.jsonl")))


class Unreadable(Exception):
    """Names the field that could not be read."""


def records(data: Any, cell: int | None) -> list[tuple[str, Any]]:
    """(JSON path, gate record) for every gate record of the file's cells, or of one cell."""
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise Unreadable("cells: missing or not a list")
    if cell is not None and not 0 <= cell < len(cells):
        raise Unreadable(f"cells[{cell}]: missing (the file has {len(cells)} cells)")
    found = []
    for i in range(len(cells)) if cell is None else [cell]:
        for shown, keys in PLACES:
            value: Any = cells[i]
            for key in keys:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, (dict, list)) and value:
                found.append((f"cells[{i}]{shown}", value))
    if cell is not None and not found:
        raise Unreadable(f"cells[{cell}]: no gate record (none of {', '.join(s[1:] for s, _ in PLACES)})")
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m published_format", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a result file (results/published/*.json or results/scenarios/*.json)")
    parser.add_argument("--cell", type=int, help="only this cell's gate records")
    args = parser.parse_args(argv)
    try:
        try:
            data = json.loads(Path(args.file).read_text())
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from None
        except UnicodeDecodeError:
            raise Unreadable("not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise Unreadable(f"not JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:
            raise Unreadable("nested too deeply to read") from None
        except ValueError as exc:  # a number longer than Python converts
            raise Unreadable(str(exc).split(":")[0]) from None
        checked = [{"at": at, **verify_record(record)} for at, record in records(data, args.cell)]
    except (Unreadable, BundleError) as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"file": args.file, "valid": all(r["valid"] for r in checked), "records": checked},
                     indent=2, default=str))
    return 0 if all(r["valid"] for r in checked) else 1


if __name__ == "__main__":
    sys.exit(main())
