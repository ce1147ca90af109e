"""mkdocs hook: each top-level navigation item is drawn once per set of links it shows, not once per page.

The theme draws the whole navigation into every page, so a site of n scenarios draws about n² items. An item the
current page is not in comes out the same on every page from which its links read the same (its place in the nav,
its titles and the theme's settings being fixed for a build), so it is drawn the first time and reused after. The
item holding the current page is drawn for that page, as the theme draws it. mkdocs loads this file by its path
(`hooks:` in mkdocs.yml); the theme's navigation partial in site/overrides calls `interlock_nav_item`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jinja2
from markupsafe import Markup
from mkdocs.utils import normalize_url


def _leaves(item: Any) -> Iterator[Any]:
    """Every page and link under a navigation item (the item itself when it is one)."""
    children = getattr(item, "children", None)
    if children is None:
        yield item
        return
    for child in children:
        yield from _leaves(child)


def on_env(env: jinja2.Environment, **_: Any) -> jinja2.Environment:
    """Give this build's templates a fresh `interlock_nav_item`."""
    drawn: dict[tuple[str, ...], Markup] = {}

    @jinja2.pass_context
    def interlock_nav_item(context: Any, render: Callable[..., Markup], item: Any, path: str) -> Markup:
        """The theme's `render(item, path, 1)`, reused while the current page is outside the item."""
        if item.active:
            return render(item, path, 1)
        page, base = context.get("page"), context.get("base_url", "")
        key = (path, *(normalize_url(str(leaf.url), page=page, base=base) for leaf in _leaves(item)))
        if key not in drawn:
            drawn[key] = render(item, path, 1)
        return drawn[key]

    env.globals["interlock_nav_item"] = interlock_nav_item
    return env
