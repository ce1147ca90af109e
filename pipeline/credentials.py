"""What a credential looks like: a result file holding one is refused before it is judged or shown on a page."""

from __future__ import annotations

import json
import re
from typing import Any

SHAPES = {
    "Anthropic API key": re.compile(r"sk-ant-[A-Za-z0-9_-]{16,}"),
    "Google API key": re.compile(r"AIza[0-9A-Za-z_-]{35}"),
    "Google OAuth access token": re.compile(r"ya29\.[0-9A-Za-z_-]{20,}"),
    "private key (PEM)": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "service-account key field": re.compile(r'"private_key(_id)?"\s*:\s*"[^"]{8,}'),
    "OAuth client secret or refresh token field": re.compile(r'"(?:client_secret|refresh_token)"\s*:\s*"[^"]{8,}'),
    "Google OAuth client secret": re.compile(r"GOCSPX-[0-9A-Za-z_-]{20,}"),
    "Google OAuth refresh token": re.compile(r"\b1//0[0-9A-Za-z_-]{30,}"),
    "password in a database URL": re.compile(r"(?i:postgres(?:ql)?)://[^/\s:@\"']+:[^@\s]+@"),
    "password in a connection string": re.compile(r"(?i:\bpassword)\s*=\s*[^\s'\";]{4,}"),
    "GitHub token": re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    "AWS access key id": re.compile(r"AKIA[0-9A-Z]{16}"),
}


def shape_in(text: str) -> str | None:
    """The name of the first credential shape `text` holds, or None."""
    return next((name for name, shape in SHAPES.items() if shape.search(text)), None)


def shape_in_json(text: str, value: Any) -> str | None:
    """`shape_in` for JSON `text` read as `value`: over the text as written, and where the text escapes characters
    (`\\u002d` for a dash, `\\/` for a slash), over the value written out again, so no escape hides a key."""
    if "\\u" in text or "\\/" in text:
        text = json.dumps(value, ensure_ascii=False)
    return shape_in(text)

