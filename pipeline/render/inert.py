"""Text from artifacts made inert for Markdown and HTML at once, so a hostile string renders as itself."""

from __future__ import annotations

import re
import string

from markupsafe import Markup

from ..model import INVISIBLE

# Characters that mean nothing to Markdown, its extensions or HTML pass through; every other ASCII character
# becomes a numeric character reference, which both Python-Markdown and the browser turn back into the character.
# An invisible character (a bidirectional override, a zero-width space) is shown as its escape, \u202e.
_PLAIN = set(string.ascii_letters + string.digits + " .,;:?/@%()")
_TABLE = {code: f"&#{code};" for code in range(128) if chr(code) not in _PLAIN}
_TABLE.update({ord(char): f"&#92;u{ord(char):04x}" for char in INVISIBLE})
# What opens a Markdown block where a value starts a line: an indent (a code block), or a number then a dot or a
# bracket and a space (an ordered list item). Its spaces and mark are encoded too; "1.5 s" opens nothing.
_OPENING = re.compile(r" +|\d+[.)](?=\s|$)")


def inert(value: object) -> Markup:
    """Escape any value from an artifact for a Markdown page: no markup, link, emphasis, table pipe, line break or
    block, wherever on a line the value is printed."""
    if isinstance(value, Markup):
        return value
    text = str(value)
    opening = _OPENING.match(text)
    cut = opening.end() if opening else 0
    head = "".join(char if char.isdigit() else f"&#{ord(char)};" for char in text[:cut])
    return Markup(head + text[cut:].translate(_TABLE))
