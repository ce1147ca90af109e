"""`python -m experiments.explore.count_again RESULT...` counts each exploration's stored history again with today's
counting and rewrites the file's counts, keeping what its run recorded; `counted` names the code that counted it.

A change to the code that only counts (`staleness.COUNTING`) leaves the runs standing: `--stale` then names the files
to count again rather than run again, and this renews them in seconds instead of hours."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from experiments.atomic import write_json
from experiments.explore.__main__ import REPO, summarize
from experiments.explore.history import HistoryUnreadable
from experiments.harness import code_now

# What a result file says about its run rather than its counts: counting its history again keeps these.
RUN_FACTS = ("generated", "command", "provenance", "seeds", "seconds", "seconds_per_run", "jobs")


def count_again(path: Path) -> dict[str, Any]:
    """The result file's content counted again from the history it names, which must be the one it was counted
    from; its run's facts are kept and `counted` names the code that counted it."""
    stored, shown = _stored_result(path)
    history = REPO / shown
    if not history.is_file():
        history = path.parent / "history" / Path(shown).name
    if not history.is_file():
        raise HistoryUnreadable(f"{path}: history.path: {shown} is not a file here")
    if hashlib.sha256(history.read_bytes()).hexdigest() != stored["history"]["sha256"]:
        raise HistoryUnreadable(f"{path}: history.sha256: {history} is not the history the file was counted from")
    missing = [key for key in RUN_FACTS if key not in stored]
    if missing:
        raise HistoryUnreadable(f"{path}: {missing[0]}: missing; counting again keeps what the run recorded there")
    try:
        result = summarize(history, path.parent, {key: stored[key] for key in RUN_FACTS})
    except KeyError as exc:
        raise HistoryUnreadable(f"{history}: a row has no field {exc}, which the explorer writes") from None
    except (TypeError, AttributeError, IndexError) as exc:
        raise HistoryUnreadable(f"{history}: a row is not laid out as the explorer writes it ({exc})") from None
    code = code_now()
    result["counted"] = {"commit": code.commit, "dirty": code.dirty,
                         "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return result


def _stored_result(path: Path) -> tuple[dict[str, Any], str]:
    """The stored result file and the history path it names; HistoryUnreadable names the file and the field."""
    try:
        stored = json.loads(path.read_text())
    except OSError as exc:
        raise HistoryUnreadable(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):
        raise HistoryUnreadable(f"{path}: not JSON") from None
    recorded = stored.get("history") if isinstance(stored, dict) else None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("path"), str) or \
            not isinstance(recorded.get("sha256"), str):
        raise HistoryUnreadable(f"{path}: history: expected an object with the history's path and sha256")
    return stored, recorded["path"]


def main(argv: list[str] | None = None) -> int:
    """Rewrite each named result file with its counts from its history; exit 2 at the first that cannot be."""
    args = sys.argv[1:] if argv is None else argv
    if not args or {"-h", "--help"} & set(args):
        print(f"usage: python -m experiments.explore.count_again RESULT...\n\n{__doc__}",
              file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    paths = [Path(arg) for arg in args]
    for path in paths:
        try:
            write_json(path, count_again(path))
        except HistoryUnreadable as exc:
            print(f"explore: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"explore: {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"explore: counted {path} again from its history", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
