"""`python -m interlock.receipts FILE`: verify a receipt bundle or a journal and print the result as JSON.

A journal (`.jsonl`) is read across its rolled segments and judged as the library opens it: a torn last line is
left out and named (`torn_tail`), and a journal cut back behind its witness is invalid. `--service FILE` holds
the record to the service's own export: a JSON object of effect id -> how many copies the service holds.

Exit 0 valid with nothing held twice, 1 invalid or an effect held twice (`held_twice`), 2 unreadable input (one
line on stderr naming the file and the field).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from ..errors import BundleError, JournalCorrupt
from ..segments import journal_bytes
from ..witness import disagreement, witnessed
from . import verify, verify_journal

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
    parser.add_argument("--archive", help="where a segmented journal's archived segments are")
    parser.add_argument("--service", help="the service's export: a JSON object of effect id -> copies it holds")
    args = parser.parse_args(argv)
    try:
        service = _service(Path(args.service)) if args.service else None
    except Unreadable as exc:
        print(f"{args.service}: {exc}", file=sys.stderr)
        return 2
    try:
        data = _load(Path(args.file), args.at, args.archive)
        checkpoint = _last_checkpoint(Path(args.checkpoint)) if args.checkpoint else None
        result = _verify(data, args.public_key, checkpoint, service)
        if not args.at and _is_journal(Path(args.file)):
            result = _journal_report(Path(args.file), args.archive, result)
    except (Unreadable, BundleError, JournalCorrupt) as exc:
        where = args.file + (f": {args.at}" if args.at else "")
        print(f"{where}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, default=str))
    return 0 if result["valid"] and not result["held_twice"] else 1


def _verify(data: Any, public_key: str | None, checkpoint: dict[str, Any] | None,
            service: dict[str, int] | None) -> dict[str, Any]:
    if isinstance(data, list) and checkpoint is None:
        ids = {e.get("effect_id") for e in data if isinstance(e, dict)}
        whole = all(isinstance(e, dict) and "seq" in e for e in data) and len(ids) != 1
        if not whole:
            return verify(data, public_key=public_key, service=service)
    if isinstance(data, list):
        return verify_journal(data, public_key=public_key, checkpoint=checkpoint, service=service)
    return verify(data, public_key=public_key, service=service)


def _service(path: Path) -> dict[str, int]:
    """The service's export: every effect id it holds with how many copies; a count must be a whole number >= 0."""
    data = _load(path, "")
    if not isinstance(data, dict):
        raise Unreadable(f"expected an object of effect id -> copies, got {type(data).__name__}")
    for effect_id, copies in data.items():
        if type(copies) is not int or copies < 0:
            raise Unreadable(f"{effect_id}: copies must be a whole number >= 0, got {copies!r}")
    return data


def _is_journal(path: Path) -> bool:
    return path.suffix == ".jsonl" or path.name.endswith(".jsonl")


def _load(path: Path, at: str, archive: str | None = None) -> Any:
    try:
        text = journal_bytes(path, archive).decode() if _is_journal(path) else path.read_text()
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    if _is_journal(path):
        data = _journal_lines(text)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise Unreadable(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    return _select(data, at)


def _journal_lines(text: str) -> list[Any]:
    """The complete lines of a JSONL journal; a last line with no newline is a torn append and is left out, as
    the library sets it aside (`_journal_report` says so in the result)."""
    data = []
    for number, line in enumerate(text.split("\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            data.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise Unreadable(f"line {number}: not JSON ({exc.msg})") from None
    return data


def _journal_report(path: Path, archive: str | None, result: dict[str, Any]) -> dict[str, Any]:
    """Add what the library would do on opening this journal file: set aside a torn last line, and refuse a
    journal cut back behind its witness."""
    raw = journal_bytes(path, archive)
    end = raw.rfind(b"\n") + 1
    result["torn_tail"] = raw[end:].decode("utf-8", "replace") or None
    mark = witnessed(path)
    if mark is not None:
        count = raw.count(b"\n", 0, end)
        last_line = raw[raw.rfind(b"\n", 0, end - 1) + 1:end] if end else b""
        last = json.loads(last_line).get("hash") if last_line.strip() else None
        why = disagreement(mark, end=end, entries=count, last=last)
        if why is not None:
            result["problems"].append(f"line {count + 1}: {why} ({path}.witness)")
            result["valid"] = False
    return result


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
