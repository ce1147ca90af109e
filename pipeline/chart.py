"""Crash-to-settled chart: per system, the published run's times beside this run's, one SVG per colour scheme,
byte-identical across runs and machines."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.typing import RcKeyType  # noqa: E402

# Fixed, machine-independent rendering: matplotlib's bundled DejaVu Sans drawn as paths, a fixed id salt, no date;
# every text (a system name from a run) drawn as written, never read as mathtext.
_RC: dict[RcKeyType, object] = {
    "text.parse_math": False,
    "font.family": "DejaVu Sans",
    "svg.fonttype": "path",
    "svg.hashsalt": "interlock-results",
    "path.simplify": False,
    "figure.dpi": 100,
    "savefig.dpi": 100,
}

_SCHEMES = {
    "light": {"fg": "#1f2328", "grid": "#d0d7de", "bg": "#ffffff"},
    "dark": {"fg": "#e6edf3", "grid": "#3d444d", "bg": "#1e2129"},
}

# One colour per run (published, this run, ...), distinguishable on both backgrounds.
_RUN_COLOURS = ("#d4851c", "#2f7fd1", "#2ea36b", "#8e5bd0")
# Narrow enough that a phone shows the text at a readable size, short enough for any number of systems.
_WIDTH_IN = 5.6
_ROW_IN = 0.36
_MAX_HEIGHT_IN = 8.0
_FONT = 12


@dataclass(frozen=True)
class Series:
    """One run's (or one measure's) values per row, e.g. crash-to-settled seconds per system; a row with an
    empty list has no measurement."""

    label: str  # "published run" | "this run" | a column title
    values: dict[str, list[float]]


def settle_charts(series: Sequence[Series]) -> dict[str, str]:
    """The settle chart once per colour scheme."""
    return bar_charts(series, "seconds, crash to settled (bar: median; line: range)", "s")


def bar_charts(series: Sequence[Series], xlabel: str, unit: str) -> dict[str, str]:
    """Bars per row and series, once per colour scheme: drawn once in the light palette, then recoloured, which
    halves the cost."""
    light = _draw(series, _SCHEMES["light"], xlabel, unit)
    charts = {"light": light}
    for scheme, colours in _SCHEMES.items():
        if scheme != "light":
            svg = light
            for role, colour in _SCHEMES["light"].items():
                svg = svg.replace(colour, colours[role])
            charts[scheme] = svg
    return charts


class Drawing:
    """Charts drawn in worker processes, one per core, while the caller goes on (writing pages, running mkdocs):
    matplotlib's layout passes cost a results page more than everything else on it. Each chart is queued under
    its file stem (a path relative to a site root) and written as `<stem>-<scheme>.svg` by `write`."""

    def __init__(self) -> None:
        self._pool = ProcessPoolExecutor(max_workers=len(os.sched_getaffinity(0)))
        self._queued: list[tuple[str, Future[dict[str, str]]]] = []

    def __enter__(self) -> Drawing:
        return self

    def __exit__(self, *_: object) -> None:
        self._pool.shutdown(cancel_futures=True)

    def settle(self, stem: str, series: Sequence[Series]) -> None:
        """Queue `settle_charts(series)`."""
        self._queued.append((stem, self._pool.submit(settle_charts, series)))

    def bars(self, stem: str, series: Sequence[Series], xlabel: str, unit: str) -> None:
        """Queue `bar_charts(series, xlabel, unit)`."""
        self._queued.append((stem, self._pool.submit(bar_charts, series, xlabel, unit)))

    def write(self, *roots: Path) -> None:
        """Wait for every queued chart and write it under each root; a worker's failure is raised here."""
        for stem, drawn in self._queued:
            for scheme, svg in drawn.result().items():
                for root in roots:
                    path = root / f"{stem}-{scheme}.svg"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(svg, encoding="utf-8")
        self._queued.clear()


def _wrap(text: str, width: int = 26) -> str:
    """A long row name over lines, broken after `_`, `/` or a space, so the bars keep the width of a phone."""
    lines, line = [], ""
    for token in re.findall(r"[^_/ ]+[_/ ]?", text) or [text]:
        if line and len(line) + len(token) > width:
            lines.append(line.rstrip())
            line = ""
        line += token
    return "\n".join(lines + [line.rstrip()])


def _number(value: float) -> str:
    """A bar's value: three significant digits under 1 (0.25 and 0.253 stay apart), one decimal under 10."""
    if value < 1:
        return f"{value:.3g}"
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def _top(series: Sequence[Series]) -> float:
    """The longest bar of a chart, which sets its axis: values all under 1 still fill the width."""
    return max([max(v) for run in series for v in run.values.values() if v] + [0.0]) or 1.0


def _label(values: list[float], unit: str) -> str:
    mid = median(values)
    text = f"{_number(mid)} {unit}".rstrip()
    low, high = min(values), max(values)
    return text if high - low < 0.05 else f"{text} ({_number(low)}–{_number(high)})"


def _draw(series: Sequence[Series], colours: dict[str, str], xlabel: str, unit: str) -> str:
    """Median per row (a system, a fault) and series (a run, a measure), the whisker spanning the lowest to the
    highest value."""
    systems = list(dict.fromkeys(s for run in series for s in run.values))
    runs = max(len(series), 1)
    height = min(_MAX_HEIGHT_IN, 0.9 + len(systems) * runs * _ROW_IN)
    band = 0.8 / runs
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(_WIDTH_IN, height))
        fig.patch.set_facecolor(colours["bg"])
        ax.set_facecolor(colours["bg"])
        top = _top(series)
        for index, run in enumerate(series):
            colour = _RUN_COLOURS[index % len(_RUN_COLOURS)]
            labelled = False
            for row, system in enumerate(systems):
                y = row + (index - (runs - 1) / 2) * band
                values = run.values.get(system)
                if not values:
                    ax.text(0, y, " not run" if system not in run.values else " no measurement", va="center",
                            fontsize=_FONT - 1, color=colours["fg"])
                    continue
                mid = median(values)
                ax.barh(y, mid, height=band * 0.85, color=colour, label=None if labelled else run.label)
                labelled = True
                ax.plot([min(values), max(values)], [y, y], color=colours["fg"], linewidth=1)
                ax.text(max(values) + top * 0.015, y, _label(values, unit), va="center", fontsize=_FONT - 1,
                        color=colours["fg"])
        ax.set_yticks(range(len(systems)), [_wrap(s) for s in systems])
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.3)
        ax.set_xlabel(xlabel, color=colours["fg"], fontsize=_FONT - 1)
        ax.tick_params(colors=colours["fg"], labelsize=_FONT)
        ax.grid(axis="x", color=colours["grid"], linewidth=0.6)
        ax.set_axisbelow(True)
        for spine in ax.spines.values():
            spine.set_color(colours["grid"])
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            wide = sum(len(text) for text in labels) > 36  # side by side only while the legend fits the width
            legend = ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.0),
                               ncol=1 if wide else len(handles), fontsize=_FONT, frameon=False)
            for text in legend.get_texts():
                text.set_color(colours["fg"])
        fig.tight_layout()
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None}, facecolor=colours["bg"], bbox_inches="tight")
        plt.close(fig)
    return out.getvalue()
