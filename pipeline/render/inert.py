"""Text from artifacts made inert for Markdown and HTML at once, so a hostile string renders as itself."""

from __future__ import annotations

import string

from markupsafe import Markup

# Characters that mean nothing to Markdown, its extensions or HTML pass through; every other ASCII character
# becomes a numeric character reference, which both Python-Markdown and the browser turn back into the character.
_PLAIN = set(string.ascii_letters + string.digits + " .,;:?/@%()")
_TABLE = {code: f"&#{code};" for code in range(128) if chr(code) not in _PLAIN}


def inert(value: object) -> Markup:
    """Escape any value from an artifact for a Markdown page: no markup, link, emphasis, table pipe or line break."""
    if isinstance(value, Markup):
        return value
    return Markup(str(value).translate(_TABLE))
