"""What a credential looks like: a result file holding one is refused before it is judged or shown on a page."""

from __future__ import annotations

import re

SHAPES = {
    "Anthropic API key": re.compile(r"sk-ant-[A-Za-z0-9_-]{16,}"),
    "Google API key": re.compile(r"AIza[0-9A-Za-z_-]{35}"),
    "Google OAuth access token": re.compile(r"ya29\.[0-9A-Za-z_-]{20,}"),
    "private key (PEM)": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "service-account key field": re.compile(r'"private_key(_id)?"\s*:\s*"[^"]{8,}'),
    "password in a database URL": re.compile(r"postgres(?:ql)?://[^/\s:@\"']+:[^@\s\"']+@"),
    "GitHub token": re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    "AWS access key id": re.compile(r"AKIA[0-9A-Z]{16}"),
}


def shape_in(text: str) -> str | None:
    """The name of the first credential shape `text` holds, or None."""
    return next((name for name, shape in SHAPES.items() if shape.search(text)), None)

