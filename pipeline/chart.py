"""Crash-to-settled chart: per system, the published run's times beside this run's, one SVG per colour scheme,
byte-identical across runs and machines."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

# Fixed, machine-independent rendering: matplotlib's bundled DejaVu Sans drawn as paths, a fixed id salt, no date.
_RC = {
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
_MAX_HEIGHT_IN = 6.0
_FONT = 12


@dataclass(frozen=True)
class Series:
    """One run's crash-to-settled seconds per system (cells with no measurement left out)."""

    label: str  # "published run" | "this run"
    seconds: dict[str, list[float]]


def settle_charts(series: Sequence[Series]) -> dict[str, str]:
    """The chart once per colour scheme: drawn once in the light palette, then recoloured, which halves the cost."""
    light = _draw(series, _SCHEMES["light"])
    charts = {"light": light}
    for scheme, colours in _SCHEMES.items():
        if scheme != "light":
            svg = light
            for role, colour in _SCHEMES["light"].items():
                svg = svg.replace(colour, colours[role])
            charts[scheme] = svg
    return charts


def _label(values: list[float]) -> str:
    mid = median(values)
    text = f"{mid:.1f} s" if mid < 10 else f"{mid:.0f} s"
    low, high = min(values), max(values)
    return text if high - low < 0.05 else f"{text} ({low:.1f}–{high:.1f})"


def _draw(series: Sequence[Series], colours: dict[str, str]) -> str:
    """Median seconds per system (rows) and run (bars), the whisker spanning the fastest to the slowest cell."""
    systems = list(dict.fromkeys(s for run in series for s in run.seconds))
    runs = max(len(series), 1)
    height = min(_MAX_HEIGHT_IN, 0.9 + len(systems) * runs * _ROW_IN)
    band = 0.8 / runs
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(_WIDTH_IN, height))
        fig.patch.set_facecolor(colours["bg"])
        ax.set_facecolor(colours["bg"])
        top = max([max(v) for run in series for v in run.seconds.values() if v] + [1.0])
        for index, run in enumerate(series):
            colour = _RUN_COLOURS[index % len(_RUN_COLOURS)]
            labelled = False
            for row, system in enumerate(systems):
                y = row + (index - (runs - 1) / 2) * band
                values = run.seconds.get(system)
                if not values:
                    ax.text(0, y, " not run" if system not in run.seconds else " no measurement", va="center",
                            fontsize=_FONT - 1, color=colours["fg"])
                    continue
                mid = median(values)
                ax.barh(y, mid, height=band * 0.85, color=colour, label=None if labelled else run.label)
                labelled = True
                ax.plot([min(values), max(values)], [y, y], color=colours["fg"], linewidth=1)
                ax.text(max(values) + top * 0.015, y, _label(values), va="center", fontsize=_FONT - 1,
                        color=colours["fg"])
        ax.set_yticks(range(len(systems)), systems)
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.3)
        ax.set_xlabel("seconds, crash to settled (bar: median; line: range)", color=colours["fg"],
                      fontsize=_FONT - 1)
        ax.tick_params(colors=colours["fg"], labelsize=_FONT)
        ax.grid(axis="x", color=colours["grid"], linewidth=0.6)
        ax.set_axisbelow(True)
        for spine in ax.spines.values():
            spine.set_color(colours["grid"])
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            legend = ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles),
                               fontsize=_FONT, frameon=False)
            for text in legend.get_texts():
                text.set_color(colours["fg"])
        fig.tight_layout()
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None}, facecolor=colours["bg"])
        plt.close(fig)
    return out.getvalue()
