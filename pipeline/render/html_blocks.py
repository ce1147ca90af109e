"""mkdocs hooks that carry the generated pages' raw HTML blocks past Markdown untouched.

Most of a results page is tables and details blocks the templates write as HTML. Python-Markdown would feed every
tag of them through two HTML parsers (mkdocs' anchor scan and the raw block extractor) only to emit them exactly as
written. These hooks set each run of such blocks aside before Markdown runs and leave a stand-in that Markdown
places as it would the blocks; afterwards the blocks go back where the stand-in came out, so the page is byte for
byte the same. A block Markdown would rewrite is left to it.
mkdocs loads this file by its path (`hooks:` in mkdocs.yml), so it imports nothing from the package.
"""

from __future__ import annotations

import html
import re
import secrets
from dataclasses import dataclass
from typing import Any

# Block-level tags a top-level HTML block of the templates starts with, at the start of a line.
_START = re.compile(r"<(details|div|ol|p|pre|table|ul)[\s>]")
_FENCE = re.compile(r"(```|~~~)")
# What Markdown rewrites before it stores a raw block: tabs, CRs, its own placeholder marks, space-only lines.
_REWRITTEN = re.compile(r"[\t\r\x02\x03]|^ +$")
# What mkdocs' anchor scan collects from raw HTML: every id, and the name of an <a>.
_ANCHOR = re.compile(r'<[a-zA-Z][^>]*?\sid="([^"]*)"|<a\s[^>]*?\bname="([^"]*)"')


@dataclass
class _Group:
    """Blocks with nothing but blank lines (or nothing) between them, standing in Markdown as one."""

    text: str
    bare: bool  # the stand-in is a bare word paragraph, else a one-tag raw block
    blank_after: bool  # a blank line follows in the page, so Markdown keeps a newline after the last block


_held: dict[str, tuple[str, list[_Group]]] = {}


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
    """Replace each run of top-level raw HTML blocks by a stand-in, keeping the blocks for `on_page_content`. The
    stand-in is a bare word paragraph where a blank line is above (Markdown parses that cheapest), else a
    one-tag raw block, which Markdown places exactly as it would the blocks."""
    token = f"interlockhtmlblock{secrets.token_hex(8)}n"
    if token in markdown:
        return markdown
    lines = markdown.split("\n")
    out: list[str] = []
    groups: list[_Group] = []
    fenced = False
    index, standin = 0, -1
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):
            fenced = not fenced
        opened = None if fenced else _START.match(line)
        end = _end_of_block(lines, index, opened.group(1)) if opened else None
        block = lines[index:(index + 1 if end is None else end + 1)]
        if end is None and opened:  # a block these hooks cannot delimit: the rest of the page is Markdown's
            block = lines[index:]
        held = end is not None and not any(_REWRITTEN.search(part) for part in block)
        if held and groups and not any(out[standin + 1:]):
            groups[-1].text += ("\n\n" if len(out) > standin + 1 else "\n") + "\n".join(block)
            del out[standin + 1:]
        elif held:
            bare = not out or not out[-1]
            standin = len(out)
            out.append(f"{token}{len(groups)}" if bare else f"<div>{token}{len(groups)}</div>")
            groups.append(_Group("\n".join(block), bare, False))
        else:
            if groups and groups[-1].bare and standin == len(out) - 1 and line:
                out.append("")  # the bare stand-in stays a paragraph of its own, as Markdown ends a raw block
            out += block
        if held and end is not None:  # a held block always has its end line
            groups[-1].blank_after = end + 1 == len(lines) or not lines[end + 1].strip(" ")
        index += len(block)
    if not groups:
        return markdown
    _held[page.file.src_uri] = (token, groups)
    return "\n".join(out)


def on_page_content(content: str, page: Any, **_: Any) -> str:
    """Put every run of blocks back where its stand-in came out (with the newline Markdown keeps after a raw
    block followed by a blank line, unless the page ends there) and register the blocks' anchors for mkdocs' link
    check; a stand-in that did not come through intact fails the build."""
    token, groups = _held.pop(page.file.src_uri, (None, []))
    if token is None:
        return content
    found: list[int] = []

    def restore(match: re.Match[str]) -> str:
        number = int(match.group(2))
        found.append(number)
        group = groups[number] if number < len(groups) else None
        if group is None or group.bare != (match.group(1) == "p"):
            raise ValueError(f"{page.file.src_uri}: HTML block {number} did not come through Markdown intact")
        at_end = match.end() == len(content)
        return group.text + ("\n" if group.bare and group.blank_after and not at_end else "")

    restored = re.sub(rf"<(p|div)>{token}(\d+)</\1>", restore, content)
    if found != list(range(len(groups))):
        lost = len(set(range(len(groups))) - set(found))
        raise ValueError(f"{page.file.src_uri}: {lost} HTML block(s) lost or repeated in Markdown")
    anchors = {html.unescape(a or n) for group in groups for a, n in _ANCHOR.findall(group.text)}
    page.present_anchor_ids = (page.present_anchor_ids or set()) | anchors
    return restored
