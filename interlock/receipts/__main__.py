"""`python -m interlock.receipts FILE`: verify a receipt bundle or a journal and print the result as JSON.

A journal (`.jsonl`) is streamed across its rolled segments, never held whole, and judged as the library opens it:
a torn last line is left out and named (`torn_tail`), and a journal cut back behind its witness is invalid. A
journal file of a single effect whose journal-wide chain does not hold (its entries exported from a shared journal
keep their seq numbers there) is judged by that effect's receipt, and printed in the shape every journal's verdict
takes, that receipt under `effects` and `read_as` saying it was read so. FILE may also be a `postgresql://` URL: the journal stored there is
streamed in seq order and checked whole. `--service FILE` holds the record to the service's own export: a JSON
object of effect id -> how many copies the service holds.

Exit 0 valid with nothing held twice, 1 invalid or an effect held twice (`held_twice`), 2 unreadable input (one
line on stderr naming the file, or the database without its password, and the field or the problem) or a temporary
folder that cannot take the checks a long journal sets aside on disk.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

import msgspec

from ..addresses import is_postgres, safe_address
from ..collector import collector_paused
from ..errors import BundleError, JournalCorrupt, SpillFailed
from ..segments import ENTRY_FIELDS, JournalLines, cut_short
from ..witness import disagreement, witnessed
from . import COVERS, JournalCheck, verify, verify_journal
from ._pg import DatabaseUnreadable, stored_lines

KEPT = 10_000  # effects whose running checks a journal's check holds in memory; the others wait on disk
_COMPACT = json.JSONEncoder(default=str)
_format = msgspec.json.format
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_INDENTED = json.JSONEncoder(indent=2, default=str)
_STEP = re.compile(r"\.?([A-Za-z_][\w.-]*?)(?=\.|\[|$)|\[(\d+)\]|\[\"([^\"]+)\"\]")
EXPORTED = ("one effect's export: the journal-wide chain does not hold, as it does not for an effect's entries taken "
            "from a shared journal, which keep their seq numbers there; the verdict is that effect's receipt")
SNIFFED = 1 << 20  # how much of a file's first line is read to tell whether it is a journal's entry
Verdict = tuple[dict[str, Any], Iterator[tuple[str, dict[str, Any]]] | None]  # and the receipts to print under it


class Unreadable(Exception):
    """One line that says which file and which field could not be read."""


class Refused(Exception):
    """One line, printed as it is, saying which argument cannot be used and why."""


class Opened(NamedTuple):
    """A file read once: its lines as a journal's are streamed, and whether it is a journal."""

    stream: JournalLines
    lines: Iterator[bytes]
    journal: bool


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m interlock.receipts", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a bundle (.json), a list of entries (.json), a journal (.jsonl) or the "
                        "database a journal is stored in (postgresql://...)")
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
        print(_one_line(f"{args.service}: {exc}"), file=sys.stderr)
        return 2
    if args.public_key is not None and not _is_public_key(args.public_key):
        print(f"--public-key: {args.public_key!r} is not a hex Ed25519 public key (64 hex digits)", file=sys.stderr)
        return 2
    where = (safe_address(args.file) if is_postgres(args.file) else args.file) + (f": {args.at}" if args.at else "")
    with ExitStack() as scratch:  # a long journal's checks wait on disk until its receipts are printed
        try:
            result, effects = _checked(args, service, scratch)
            _write(result, effects)
        except Refused as exc:
            print(_one_line(str(exc)), file=sys.stderr)
            return 2
        except (Unreadable, BundleError, JournalCorrupt, SpillFailed, DatabaseUnreadable) as exc:
            print(_one_line(f"{where}: {exc}"), file=sys.stderr)
            return 2
    return 0 if result["valid"] and not result["held_twice"] else 1


def _checked(args: argparse.Namespace, service: dict[str, int] | None, scratch: ExitStack) -> Verdict:
    """The verdict on FILE: a journal's streamed through a check that `scratch` closes once its receipts are
    printed, anything else's read whole."""
    if is_postgres(args.file):
        if args.at:
            raise Refused(f"--at: picks a value inside a JSON file; {safe_address(args.file)} is a database")
        return _verify_database(args.file, _journal_check(args, service, scratch, database=True))
    opened = _opened(Path(args.file), args.archive)
    if opened.journal and not args.at:
        return _verify_journal_file(opened, _journal_check(args, service, scratch, database=False))
    checkpoint = _last_checkpoint(Path(args.checkpoint)) if args.checkpoint else None
    return _verify(_select(_content(opened), args.at), args.public_key, checkpoint, service)


def _journal_check(args: argparse.Namespace, service: dict[str, int] | None, scratch: ExitStack, *,
                   database: bool) -> JournalCheck:
    """The check a journal streams through, held to its checkpoint when there is one."""
    named = _checkpoint_file(args, database)
    checkpoint = _last_checkpoint(Path(named)) if named else None
    return scratch.enter_context(JournalCheck(public_key=args.public_key, checkpoint=checkpoint, service=service,
                                              kept=KEPT))


def _checkpoint_file(args: argparse.Namespace, database: bool) -> str | None:
    """The checkpoints file a journal is held to: the one given, or with a public key the journal's own, which
    is what the key signed of it."""
    given: str | None = args.checkpoint
    if given is not None or args.public_key is None:
        return given
    if database:
        raise Refused(f"{safe_address(args.file)}: a journal's signature is on its checkpoints: give --checkpoint")
    default = f"{args.file}.checkpoints"
    if not Path(default).is_file():
        raise Refused(f"{default}: not found; a journal's signature is on its checkpoints: give --checkpoint")
    return default


def _one_line(text: str) -> str:
    """A message for one terminal line: each control character in it (from a file name or a file's content) shown
    as its escape, so none moves the cursor or colours the terminal."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


def _unparsable(exc: ValueError | RecursionError) -> str:
    """Why a JSON text that no JSON error names could not be read: nested too deeply, or a number too long."""
    return "nested too deeply to read" if isinstance(exc, RecursionError) else str(exc).split(":")[0]


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
            ) -> Verdict:
    """(verdict, the receipts of a whole journal's effects to print under it, or None for one effect's receipt):
    a list of one effect's entries is checked as its bundle would be."""
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


def _opened(path: Path, archive: str | None) -> Opened:
    """`path` read once: a journal when named `.jsonl` or, whatever its name, its first line is an entry of one,
    which is sniffed from the stream the rest is read from."""
    stream = JournalLines(path, archive)
    lines = iter(stream)
    if path.name.endswith(".jsonl"):
        return Opened(stream, lines, True)
    try:
        first = next(lines, None)
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    if first is None:  # no complete line: the file is one line with no newline, or empty
        return Opened(stream, lines, _is_entry(stream.torn))
    return Opened(stream, itertools.chain([first], lines), _is_entry(first))


def _is_entry(line: bytes) -> bool:
    """Whether a first line (as far as `SNIFFED` bytes go) is a journal's entry."""
    try:
        first = json.loads(line[:SNIFFED])
    except (ValueError, RecursionError):
        return False
    return isinstance(first, dict) and ENTRY_FIELDS <= first.keys()


def _load(path: Path, at: str, archive: str | None = None) -> Any:
    return _select(_content(_opened(path, archive)), at)


def _content(opened: Opened) -> Any:
    """What an opened file holds: a journal's entries, each line parsed, or the file's JSON."""
    if opened.journal:
        return _journal_entries(opened.lines)
    try:
        raw = b"".join(line + b"\n" for line in opened.lines) + opened.stream.torn
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unreadable(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:
        raise Unreadable(_unparsable(exc)) from None


def _journal_entries(lines: Iterable[bytes]) -> list[Any]:
    """Every complete line of a journal, parsed (for `--at` and for a journal of one effect); a line that is not
    UTF-8 JSON is unreadable input, named by its line number."""
    data = []
    try:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line.decode()))
            except UnicodeDecodeError:
                raise Unreadable(f"line {number}: not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise Unreadable(f"line {number}: not JSON ({exc.msg})") from None
            except (ValueError, RecursionError) as exc:
                raise Unreadable(f"line {number}: {_unparsable(exc)}") from None
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    return data


def _not_blank(lines: Iterable[bytes], blank: list[int]) -> Iterator[bytes]:
    """The lines that hold anything, so the chain is checked over the entries there are; the number of each blank
    one (from 1) is noted in `blank`."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield line
        else:
            blank.append(number)


def _verify_journal_file(opened: Opened, check: JournalCheck) -> Verdict:
    """Verify a journal file in one streamed pass through `check`, then say what the library would do on opening
    it: set aside a torn last line, and refuse a journal cut back behind its witness. Returns the verdict and the
    receipts to print after it."""
    stream = opened.stream
    blank: list[int] = []
    try:
        with collector_paused():
            check.scan(_not_blank(opened.lines, blank))
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    if check.checkpoint is None and check.effects == 1 and check.chain:
        result, effects = _exported_effect(check)
    else:
        result, effects = check.summary(), check.receipts()
        if any(problem.endswith(": not an object") for problem in result["problems"]):
            _journal_entries(JournalLines(stream.path, stream.archive))  # names the first line that is not JSON
    if blank:
        more = f" (and {len(blank) - 1} more)" if len(blank) > 1 else ""
        result["problems"].append(f"line {blank[0]}: blank{more}: the library refuses to open a journal with a blank "
                                  "line")
        result["valid"] = False
    result["torn_tail"] = stream.torn.decode("utf-8", "replace") or None
    if stream.torn and not cut_short(stream.torn):
        result["problems"].append(f"line {stream.lines + 1}: has no newline and is not the start of an entry, so no "
                                  "crash tore it (the library refuses to open the journal)")
        result["valid"] = False
    mark = witnessed(stream.path)
    if mark is not None:
        why = disagreement(mark, end=stream.end, entries=stream.lines)
        if why is not None:
            hint = "; a journal whose rolled segments were archived is read with --archive DIR" if (
                stream.archive is None) else ""
            result["problems"].append(f"line {stream.lines + 1}: {why} ({stream.path}.witness){hint}")
            result["valid"] = False
    return result, effects


def _exported_effect(check: JournalCheck) -> Verdict:
    """A journal file of one effect whose journal-wide chain does not hold, judged as that effect's export: its
    entries, taken from a shared journal, keep their seq numbers there. The verdict is the effect's receipt (its own
    chain, every hash), in the shape of any journal's, and says it was read so (`read_as`)."""
    eid, outcome = next(check.receipts())
    problems = [p if p.startswith("entries[") else f"effect {eid}: {p}" for p in outcome["problems"]]
    problems += check.unnamed()
    result = {"valid": not problems, "tamper_evident": outcome["tamper_evident"], "signed": outcome["signed"],
              "entries": check.entries, "held_twice": [eid] if outcome["held_twice"] else [], "problems": problems,
              "covers": COVERS, "read_as": EXPORTED}
    return result, iter([(eid, outcome)])


def _verify_database(url: str, check: JournalCheck) -> Verdict:
    """Verify the journal stored in the database at `url` in one streamed pass through `check`."""
    with collector_paused():
        check.scan(stored_lines(url))
    return check.summary(), check.receipts()


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
    try:
        if path.suffix == ".jsonl":
            lines = [line for line in _load(path, "") if isinstance(line, dict)]
        else:
            lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError, Unreadable) as exc:
        raise Unreadable(f"checkpoint file {path}: {exc}") from None
    except RecursionError as exc:
        raise Unreadable(f"checkpoint file {path}: {_unparsable(exc)}") from None
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
