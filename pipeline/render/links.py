"""Where each generated page and file of one run lives, and the relative links between them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from markupsafe import Markup

from ..model import Cell

_UNSAFE = re.compile(r"[^a-z0-9_-]+")


def slug(text: str) -> str:
    """A path segment or anchor from any name: lower case, runs of other characters folded to one dash."""
    return _UNSAFE.sub("-", text.lower()).strip("-") or "x"


def unique(base: str, taken: set[str]) -> str:
    """`base`, else `base-2`, `base-3`, ...: the first name `taken` does not hold, added to it, so two names that fold
    to one slug never share a file."""
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


@dataclass(frozen=True)
class RunLinks:
    """Links as seen from the run's own pages; `folder` is the run's directory under the docs root."""

    folder: str  # "scenarios/<slug>"
    anchors: Mapping[int, str] = field(default_factory=dict)  # each cell's anchor on the cells page, by its index

    @classmethod
    def of(cls, folder: str, cells: Iterable[Cell]) -> RunLinks:
        """The links of a run with these cells: each cell's anchor is its fault and system, numbered where another
        cell's already folds to the same one ("no check" and "No-Check"), so no two cells share one."""
        taken: set[str] = set()
        return cls(folder, {cell.index: unique(f"{slug(cell.fault)}--{slug(cell.system)}", taken) for cell in cells})

    @property
    def path(self) -> Markup:
        return Markup(self.folder)

    @property
    def scenario(self) -> Markup:
        return Markup("../")

    @property
    def cells(self) -> Markup:
        return Markup("cells/")

    @property
    def chart(self) -> dict[str, Markup]:
        return {"light": Markup("settle-light.svg"), "dark": Markup("settle-dark.svg")}

    def anchor(self, cell: Cell) -> Markup:
        return Markup(self.anchors[cell.index])

    def heading_id(self, cell: Cell) -> Markup:
        return Markup("{#" + self.anchor(cell) + "}")

    def cell(self, cell: Cell) -> Markup:
        return Markup("cells/#") + self.anchor(cell)

    def raw_name(self, cell: Cell) -> Markup:
        return Markup(f"{cell.index:03d}-") + self.anchor(cell) + Markup(".json")

    def raw(self, cell: Cell) -> Markup:
        return Markup("cells/") + self.raw_name(cell)
