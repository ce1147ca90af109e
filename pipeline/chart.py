"""Crash-to-settled chart: one SVG per colour scheme, byte-identical across runs and machines."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

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

# One colour per system, chosen to stay distinguishable on both backgrounds.
_SYSTEM_COLOURS = ("#8c8c8c", "#d4851c", "#2f7fd1", "#8e5bd0", "#2ea36b", "#c94a6b")


@dataclass(frozen=True)
class Bar:
    """One crash-to-settled measurement; seconds is None when the cell has no measurement."""

    fault: str
    system: str
    seconds: float | None


def settle_charts(bars: Sequence[Bar]) -> dict[str, str]:
    """The chart once per colour scheme: drawn once in the light palette, then recoloured, which halves the cost."""
    light = _draw(bars, _SCHEMES["light"])
    charts = {"light": light}
    for scheme, colours in _SCHEMES.items():
        if scheme != "light":
            svg = light
            for role, colour in _SCHEMES["light"].items():
                svg = svg.replace(colour, colours[role])
            charts[scheme] = svg
    return charts


def _draw(bars: Sequence[Bar], colours: dict[str, str]) -> str:
    """Crash-to-settled seconds per fault (rows) and system (bars) as SVG text."""
    faults = list(dict.fromkeys(b.fault for b in bars))
    systems = list(dict.fromkeys(b.system for b in bars))
    by_cell = {(b.fault, b.system): b.seconds for b in bars}
    height = 1.0 + len(faults) * (0.28 * len(systems) + 0.35)
    band = 0.8 / max(len(systems), 1)
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(8.0, height))
        fig.patch.set_facecolor(colours["bg"])
        ax.set_facecolor(colours["bg"])
        top = max([s for s in by_cell.values() if s is not None] + [1.0])
        labelled: set[str] = set()
        for index, system in enumerate(systems):
            colour = _SYSTEM_COLOURS[index % len(_SYSTEM_COLOURS)]
            for row, fault in enumerate(faults):
                y = row + (index - (len(systems) - 1) / 2) * band
                seconds = by_cell.get((fault, system))
                if seconds is None:
                    if (fault, system) in by_cell:
                        ax.text(0, y, " no measurement", va="center", fontsize=8, color=colours["fg"])
                    continue
                label = None if system in labelled else system
                labelled.add(system)
                ax.barh(y, seconds, height=band * 0.9, color=colour, label=label)
                ax.text(seconds + top * 0.01, y, f"{seconds:.1f} s", va="center", fontsize=9, color=colours["fg"])
        ax.set_yticks(range(len(faults)), faults)
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.15)
        ax.set_xlabel("seconds from crash to settled", color=colours["fg"])
        ax.tick_params(colors=colours["fg"], labelsize=9)
        ax.grid(axis="x", color=colours["grid"], linewidth=0.6)
        ax.set_axisbelow(True)
        for spine in ax.spines.values():
            spine.set_color(colours["grid"])
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            legend = ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles),
                               fontsize=9, frameon=False)
            for text in legend.get_texts():
                text.set_color(colours["fg"])
        fig.tight_layout()
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None}, facecolor=colours["bg"])
        plt.close(fig)
    return out.getvalue()
