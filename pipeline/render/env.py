"""The Jinja environment for site templates: every value a template prints is escaped unless code marked it safe."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..model import Cell, Scenario, Tally
from ..outcomes import CANNOT_SAY, LANDED, NOT_LANDED, REFUSED_PREFIX
from .inert import inert

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "site" / "templates"

_IDENT = re.compile(r"^[A-Za-z0-9_]+$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


_CHECKOUT = str(REPO) + "/"


def _finalize(value: object) -> object:
    """Applied to every {{ expression }}: text from a run can never become Markdown or HTML, and a path inside the
    checkout is shown relative to it, whichever stage wrote it."""
    if value is None:
        return Markup("null")
    if isinstance(value, str) and not isinstance(value, Markup):
        value = value.replace(_CHECKOUT, "")
    return inert(value)


def plain(value: Any) -> str:
    """A JSON-ish value as one readable line (strings as themselves, containers as sorted JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def ident(value: str) -> Markup:
    """A name that goes into a shell command or code block verbatim, so it must be a plain identifier."""
    if not _IDENT.match(value):
        raise ValueError(f"not a plain identifier: {value!r}")
    return Markup(value)


def ident_path(value: str) -> Markup:
    """A dotted module path that goes into a directive verbatim, so it must be nothing else."""
    if not _DOTTED.match(value):
        raise ValueError(f"not a dotted module path: {value!r}")
    return Markup(value)


def wrap_points(value: str) -> Markup:
    """An outcome code or a name made inert, with a line-break point after each `_`, `:` and `/`, so a narrow
    column breaks it between its words (REFUSED:stale_<wbr>premise, after_<wbr>commit/<wbr>none) and never inside
    one."""
    text = str(inert(value))
    for mark in (str(inert("_")), str(inert(":")), str(inert("/"))):
        text = text.replace(mark, mark + "<wbr>")
    return Markup(text)


def sentence(value: str) -> str:
    """A clause that follows a full stop on the page, with its first letter made a capital."""
    return value[:1].upper() + value[1:]


def yes_no(value: bool | None) -> str:
    return "cannot say" if value is None else ("yes" if value else "no")


def answer_word(value: bool | None) -> str:
    return "cannot say" if value is None else ("matches" if value else "DIFFERS")


def held_mark(cell: Cell) -> Markup:
    """Held or VIOLATED, styled; the calendar's double booking is named because it is the worse violation."""
    if cell.invariant_held:
        return Markup('<span class="interlock-held">held</span>')
    extra = ", double booked" if cell.truth.double_booked else ""
    return Markup(f'<span class="interlock-violated">VIOLATED{extra}</span>')


def seconds(value: float | None) -> str:
    return "no measurement" if value is None else f"{value:.1f} s"


def write_list(writes: tuple[str, ...] | None) -> str:
    if writes is None:
        return "unknown"
    return ", ".join(writes) if writes else "none"


def entry_field(entry: Mapping[str, Any], *keys: str) -> str:
    """The first of `keys` a journal entry has, as one line; empty when it has none."""
    for key in keys:
        if key in entry:
            return plain(entry[key])
    return ""


def log_text(log: Any) -> str:
    """A worker log as text: stored text as is, parsed JSON lines back as one JSON object per line."""
    if isinstance(log, str):
        return log or "(empty)"
    return "\n".join(json.dumps(line, sort_keys=True, ensure_ascii=False) for line in log) or "(empty)"


def repo_path(path: str) -> str:
    """A result file's path relative to the repository when it lies inside it."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(REPO))
    except ValueError:
        return str(path)


def want_of(run: Scenario, fault: str) -> str:
    """What a fault wants, from the ground truth of its first cell (every cell of a fault wants the same)."""
    cell = next(c for c in run.cells if c.fault == fault)
    owner = f"; live object owned by {cell.truth.want_owner}" if cell.truth.want_owner else ""
    noun = "event" if cell.scenario == "calendar" else "write"  # the word the cells under it use
    return f"{cell.truth.want} agent {noun}{'' if cell.truth.want == 1 else 's'}{owner}"


def tally(value: Tally) -> str:
    return f"{value.k}/{value.n}"


_COLUMN_TITLES = {"agent_writes": "agent writes", "invariant_held": "invariant", "answer_matches": "answer",
                  "can_prove": "proof", "seconds_to_settle": "seconds", "cell": "cell"}


def column_title(column: str) -> str:
    return _COLUMN_TITLES.get(column, column)


def figure(value: Any, column: str | None = None) -> str:
    """One published-or-ours figure as a word: yes/no for flags, "cannot say" for an answer that claims neither,
    the value itself otherwise."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "cannot say" if column == "answer_matches" else "none"
    return plain(value)


def truth_sources(run: Scenario) -> str:
    names = {"versions": "the version listing and live object", "write_log": "the recording proxy's write log",
             "events_list": "the events on the slot"}
    return "; ".join(dict.fromkeys(names.get(c.truth.source, c.truth.source) for c in run.cells))


def outcome_words() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The judge's table of outcome strings, grouped by what each claims, for the pages that state the rule."""
    return (("landed", tuple(sorted(LANDED))), ("not landed", (*sorted(NOT_LANDED), REFUSED_PREFIX + "*")),
            ("cannot say", tuple(sorted(CANNOT_SAY))))


def environment() -> jinja2.Environment:
    """Templates are Markdown with HTML blocks; autoescape plus the inert finalizer cover both languages."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        plain=plain, ident=ident, ident_path=ident_path, yes_no=yes_no, answer_word=answer_word, held_mark=held_mark,
        wrap_points=wrap_points, sentence=sentence,
        seconds=seconds,
        write_list=write_list, entry_field=entry_field, log_text=log_text, repo_path=repo_path, want_of=want_of,
        truth_sources=truth_sources, tally=tally,
        column_title=column_title, figure=figure,
    )
    env.globals["outcome_words"] = outcome_words()
    return env
