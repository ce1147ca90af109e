"""`python -m interlock.receipts FILE`: verify a receipt bundle or a journal and print the result as JSON.

Exit 0 valid, 1 invalid, 2 unreadable input (one line on stderr naming the file and the field).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from . import BundleError, verify, verify_journal

_STEP = re.compile(r"\.?([A-Za-z_][\w.-]*?)(?=\.|\[|$)|\[(\d+)\]|\[\"([^\"]+)\"\]")


class Unreadable(Exception):
    """One line that says which file and which field could not be read."""


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m interlock.receipts", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a bundle (.json), a list of entries (.json) or a journal (.jsonl)")
    parser.add_argument("--at", default="", help='JSON path inside FILE, e.g. cells[3].evidence.receipt_bundle')
    parser.add_argument("--public-key", help="hex Ed25519 public key that must have signed the bundle or checkpoint")
    parser.add_argument("--checkpoint", help="a checkpoints file (.checkpoints JSONL); its last checkpoint is used")
    args = parser.parse_args(argv)
    try:
        data = _load(Path(args.file), args.at)
        checkpoint = _last_checkpoint(Path(args.checkpoint)) if args.checkpoint else None
        result = _verify(data, args.public_key, checkpoint)
    except (Unreadable, BundleError) as exc:
        where = args.file + (f": {args.at}" if args.at else "")
        print(f"{where}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, default=str))
    return 0 if result["valid"] else 1


def _verify(data: Any, public_key: str | None, checkpoint: dict | None) -> dict[str, Any]:
    if isinstance(data, list) and checkpoint is None:
        ids = {e.get("effect_id") for e in data if isinstance(e, dict)}
        whole = all(isinstance(e, dict) and "seq" in e for e in data) and len(ids) != 1
        if not whole:
            return verify(data, public_key=public_key)
    if isinstance(data, list):
        return verify_journal(data, public_key=public_key, checkpoint=checkpoint)
    return verify(data, public_key=public_key)


def _load(path: Path, at: str) -> Any:
    try:
        text = path.read_text()
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    if path.suffix == ".jsonl" or path.name.endswith(".jsonl"):
        data = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except ValueError as exc:
                raise Unreadable(f"line {number}: not JSON ({exc.msg})") from None
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise Unreadable(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    return _select(data, at)


def _select(data: Any, at: str) -> Any:
    position = 0
    walked = ""
    while position < len(at):
        step = _STEP.match(at, position)
        if step is None or step.end() == position:
            raise Unreadable(f"cannot parse the path after {walked or 'the start'!r}")
        name, index, quoted = step.groups()
        key: Any = int(index) if index is not None else (quoted if quoted is not None else name)
        walked = at[: step.end()]
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            raise Unreadable(f"{walked}: missing") from None
        position = step.end()
    return data


def _last_checkpoint(path: Path) -> dict[str, Any]:
    lines = [line for line in _load(path, "") if isinstance(line, dict)] if path.suffix == ".jsonl" else None
    if lines is None:
        try:
            lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        except (OSError, ValueError) as exc:
            raise Unreadable(f"checkpoint file {path}: {exc}") from None
    if not lines:
        raise Unreadable(f"checkpoint file {path}: empty")
    if not isinstance(lines[-1], dict):
        raise Unreadable(f"checkpoint file {path}: the last line is not a checkpoint object")
    return lines[-1]


if __name__ == "__main__":
    sys.exit(main())
