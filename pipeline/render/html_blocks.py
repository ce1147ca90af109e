"""mkdocs hooks that carry the generated pages' raw HTML blocks past Markdown untouched.

Most of a results page is tables and details blocks the templates write as HTML. Python-Markdown would feed every
tag of them through two HTML parsers (mkdocs' anchor scan and the raw block extractor) only to emit them exactly as
written. These hooks set each such block aside before Markdown runs and leave a one-tag raw block in its place,
which Markdown treats as it would the block (same place, same lines around it); afterwards the block goes back
where the stand-in came out, so the page is byte for byte the same. Blocks with only blank lines between them
share one stand-in. A block Markdown would rewrite is left to it.
mkdocs loads this file by its path (`hooks:` in mkdocs.yml), so it imports nothing from the package.
"""

from __future__ import annotations

import html
import re
import secrets
from typing import Any

# Block-level tags a top-level HTML block of the templates starts with, at the start of a line.
_START = re.compile(r"<(details|div|ol|p|pre|table|ul)[\s>]")
_FENCE = re.compile(r"(```|~~~)")
# What Markdown rewrites before it stores a raw block: tabs, CRs, its own placeholder marks, space-only lines.
_REWRITTEN = re.compile(r"[\t\r\x02\x03]|^ +$")
# What mkdocs' anchor scan collects from raw HTML: every id, and the name of an <a>.
_ANCHOR = re.compile(r'<[a-zA-Z][^>]*?\sid="([^"]*)"|<a\s[^>]*?\bname="([^"]*)"')

_held: dict[str, tuple[str, list[str]]] = {}


def _end_of_block(lines: list[str], start: int, tag: str) -> int | None:
    """The line where the tag opened on `start` is balanced again, when that line ends with its closing tag:
    Markdown then stores exactly these lines as one raw block."""
    opening, closing = re.compile(rf"<{tag}[\s>]"), f"</{tag}>"
    depth = 0
    for end in range(start, len(lines)):
        depth += len(opening.findall(lines[end])) - lines[end].count(closing)
        if depth <= 0:
            return end if depth == 0 and lines[end].endswith(closing) else None
    return None


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace each top-level raw HTML block by a one-tag stand-in, keeping the block for `on_page_content`."""
    token = f"interlockhtmlblock{secrets.token_hex(8)}n"
    if token in markdown:
        return markdown
    lines = markdown.split("\n")
    out: list[str] = []
    blocks: list[str] = []
    fenced = False
    index = standin = 0
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):
            fenced = not fenced
        opened = None if fenced else _START.match(line)
        end = _end_of_block(lines, index, opened.group(1)) if opened else None
        if end is None:
            if opened:  # a block these hooks cannot delimit: the rest of the page is Markdown's
                return markdown if not blocks else _hold(page, token, blocks, out + lines[index:])
            out.append(line)
            index += 1
            continue
        block = lines[index:end + 1]
        if any(_REWRITTEN.search(part) for part in block):
            out += block
        elif blocks and len(out) > standin + 1 and not any(out[standin + 1:]):
            # Only blank lines since the last stand-in: Markdown would emit both blocks a blank line apart.
            del out[standin + 1:]
            blocks[-1] += "\n\n" + "\n".join(block)
        else:
            standin = len(out)
            out.append(f"<div>{token}{len(blocks)}</div>")
            blocks.append("\n".join(block))
        index = end + 1
    return _hold(page, token, blocks, out) if blocks else markdown


def _hold(page: Any, token: str, blocks: list[str], lines: list[str]) -> str:
    _held[page.file.src_uri] = (token, blocks)
    return "\n".join(lines)


def on_page_content(content: str, page: Any, **_: Any) -> str:
    """Put every block back where its stand-in came out and register its anchors for mkdocs' link check; a
    stand-in that did not come through intact fails the build."""
    token, blocks = _held.pop(page.file.src_uri, (None, []))
    if token is None:
        return content
    pieces = content.split(f"<div>{token}")
    restored = [pieces[0]]
    for number, piece in enumerate(pieces[1:]):
        index, closed, rest = piece.partition("</div>")
        if not closed or index != str(number) or number >= len(blocks):
            raise ValueError(f"{page.file.src_uri}: HTML block {number} did not come through Markdown intact")
        restored += [blocks[number], rest]
    if len(pieces) - 1 != len(blocks):
        raise ValueError(f"{page.file.src_uri}: {len(blocks) - len(pieces) + 1} HTML block(s) lost in Markdown")
    anchors = {html.unescape(a or n) for block in blocks for a, n in _ANCHOR.findall(block)}
    page.present_anchor_ids = (page.present_anchor_ids or set()) | anchors
    return "".join(restored)
