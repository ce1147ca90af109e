"""`python -m interlock.receipts FILE`: verify a receipt bundle or a journal and print the result as JSON.

A journal (`.jsonl`) is streamed across its rolled segments, never held whole, and judged as the library opens it:
a torn last line is left out and named (`torn_tail`), and a journal cut back behind its witness is invalid. A
journal holding a single effect is checked as that effect's receipt, as a bundle of its entries would be. `--service FILE` holds
the record to the service's own export: a JSON object of effect id -> how many copies the service holds.

Exit 0 valid with nothing held twice, 1 invalid or an effect held twice (`held_twice`), 2 unreadable input (one
line on stderr naming the file and the field) or a temporary folder that cannot take the checks a long journal
sets aside on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Iterator

import msgspec

from ..collector import collector_paused
from ..errors import BundleError, JournalCorrupt
from ..segments import JournalLines
from ..witness import disagreement, witnessed
from . import JournalCheck, verify, verify_journal
from ..errors import SpillFailed

KEPT = 10_000  # effects whose running checks a journal's check holds in memory; the others wait on disk
_COMPACT = json.JSONEncoder(default=str)
_format = msgspec.json.format
_INDENTED = json.JSONEncoder(indent=2, default=str)
_STEP = re.compile(r"\.?([A-Za-z_][\w.-]*?)(?=\.|\[|$)|\[(\d+)\]|\[\"([^\"]+)\"\]")


class Unreadable(Exception):
    """One line that says which file and which field could not be read."""


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m interlock.receipts", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a bundle (.json), a list of entries (.json) or a journal (.jsonl)")
    parser.add_argument("--at", default="", help='JSON path inside FILE, e.g. cells[3].evidence.receipt_bundle')
    parser.add_argument("--public-key", help="hex Ed25519 public key that must have signed the bundle or checkpoint")
    parser.add_argument("--checkpoint", help="a checkpoints file (.checkpoints JSONL); its last checkpoint is used "
                        "(default with --public-key on a journal: the journal's own, FILE.checkpoints)")
    parser.add_argument("--archive", help="where a segmented journal's archived segments are")
    parser.add_argument("--service", help="the service's export: a JSON object of effect id -> copies it holds")
    args = parser.parse_args(argv)
    try:
        service = _service(Path(args.service)) if args.service else None
    except Unreadable as exc:
        print(f"{args.service}: {exc}", file=sys.stderr)
        return 2
    if args.public_key is not None and not _is_public_key(args.public_key):
        print(f"--public-key: {args.public_key!r} is not a hex Ed25519 public key (64 hex digits)", file=sys.stderr)
        return 2
    journal = not args.at and _is_journal(Path(args.file))
    if journal and args.public_key is not None and args.checkpoint is None:
        args.checkpoint = f"{args.file}.checkpoints"  # what the key signed of a journal: its checkpoints
        if not Path(args.checkpoint).is_file():
            print(f"{args.checkpoint}: not found; a journal's signature is on its checkpoints: give --checkpoint",
                  file=sys.stderr)
            return 2
    effects: Iterator[tuple[str, dict[str, Any]]] | None = None
    with ExitStack() as scratch:  # a long journal's checks wait on disk until its receipts are printed
        try:
            checkpoint = _last_checkpoint(Path(args.checkpoint)) if args.checkpoint else None
            if journal:
                check = scratch.enter_context(JournalCheck(public_key=args.public_key, checkpoint=checkpoint,
                                                           service=service, kept=KEPT))
                result, effects = _verify_journal_file(Path(args.file), args.archive, check)
            else:
                result, effects = _verify(_load(Path(args.file), args.at, args.archive), args.public_key, checkpoint,
                                          service)
            _write(result, effects)
        except (Unreadable, BundleError, JournalCorrupt, SpillFailed) as exc:
            where = args.file + (f": {args.at}" if args.at else "")
            print(f"{where}: {exc}", file=sys.stderr)
            return 2
    return 0 if result["valid"] and not result["held_twice"] else 1


def _is_public_key(text: str) -> bool:
    """Whether `text` is 32 bytes in hex, as an Ed25519 public key is given."""
    try:
        return len(bytes.fromhex(text)) == 32
    except ValueError:
        return False


def _write(result: dict[str, Any], effects: Iterator[tuple[str, dict[str, Any]]] | None) -> None:
    """Print the result as indented JSON; a journal's receipts are made and printed one at a time, under
    `effects`, so a long journal is never held as one document."""
    text = json.dumps(result, indent=2, default=str)
    if effects is None:
        print(text)
        return
    out = sys.stdout
    out.write(text[:-2] + ',\n  "effects": {')
    separator = "\n    "
    for eid, outcome in effects:
        body = indented(outcome).replace("\n", "\n    ")
        out.write(f"{separator}{json.dumps(eid)}: {body}")
        separator = ",\n    "
    out.write("}\n}\n" if separator == "\n    " else "\n  }\n}\n")


def indented(value: Any) -> str:
    """`json.dumps(value, indent=2, default=str)` byte for byte, a few times faster: json's C encoder writes it
    compact and msgspec lays it out (json indents in pure Python); json indents it whenever msgspec refuses the
    text, as it does NaN, Infinity and a lone surrogate."""
    try:
        return _format(_COMPACT.encode(value), indent=2)
    except msgspec.DecodeError:
        return _INDENTED.encode(value)


def _verify(data: Any, public_key: str | None, checkpoint: dict[str, Any] | None, service: dict[str, int] | None
            ) -> tuple[dict[str, Any], Iterator[tuple[str, dict[str, Any]]] | None]:
    """(verdict, the receipts of a whole journal's effects to print under it, or None for one effect's receipt)."""
    if isinstance(data, list) and checkpoint is None:
        ids = {e.get("effect_id") for e in data if isinstance(e, dict)}
        whole = all(isinstance(e, dict) and "seq" in e for e in data) and len(ids) != 1
        if not whole:
            return verify(data, public_key=public_key, service=service), None
    if isinstance(data, list):
        result = verify_journal(data, public_key=public_key, checkpoint=checkpoint, service=service)
        return result, iter(result.pop("effects").items())
    return verify(data, public_key=public_key, service=service), None


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
    """Whether `path` is a journal: named `.jsonl`, or, whatever its name, its first line an entry of one."""
    if path.name.endswith(".jsonl"):
        return True
    try:
        with open(path, "rb") as f:
            first = json.loads(f.readline(1 << 20))
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and {"seq", "kind", "hash", "effect_id"} <= first.keys()


def _load(path: Path, at: str, archive: str | None = None) -> Any:
    if _is_journal(path):
        return _select(_journal_entries(path, archive), at)
    try:
        text = path.read_text()
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    return _select(data, at)


def _journal_entries(path: Path, archive: str | None) -> list[Any]:
    """Every complete line of a journal, parsed (for `--at` and for a journal of one effect); a line that is not
    UTF-8 JSON is unreadable input, named by its line number."""
    data = []
    try:
        for number, line in enumerate(JournalLines(path, archive), 1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line.decode()))
            except UnicodeDecodeError:
                raise Unreadable(f"line {number}: not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise Unreadable(f"line {number}: not JSON ({exc.msg})") from None
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    return data


def _verify_journal_file(path: Path, archive: str | None, check: JournalCheck
                         ) -> tuple[dict[str, Any], Iterator[tuple[str, dict[str, Any]]] | None]:
    """Verify a journal file in one streamed pass through `check`, then say what the library would do on opening
    it: set aside a torn last line, and refuse a journal cut back behind its witness. Returns the verdict and, for
    a journal of several effects, the receipts to print after it."""
    stream = JournalLines(path, archive)
    try:
        with collector_paused():
            check.scan(filter(bytes.strip, stream))
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    result = check.summary()
    effects: Iterator[tuple[str, dict[str, Any]]] | None = check.receipts()
    if any(problem.endswith(": not an object") for problem in result["problems"]):
        _journal_entries(path, archive)  # names the first line that is not JSON, when one is not
    if check.checkpoint is None and check.effects == 1:
        result, effects = verify(_journal_entries(path, archive), public_key=check.public_key,
                                 service=check.service), None
    result["torn_tail"] = stream.torn.decode("utf-8", "replace") or None
    mark = witnessed(path)
    if mark is not None:
        why = disagreement(mark, end=stream.end, entries=stream.lines)
        if why is not None:
            result["problems"].append(f"line {stream.lines + 1}: {why} ({path}.witness)")
            result["valid"] = False
    return result, effects


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
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped reading (`| head`): the rest is not wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's own flush stays quiet
        code = 1
    sys.exit(code)
