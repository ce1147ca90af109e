"""Other writers' lines passed over without folding them: all an append needs of them is where the chain ends and
which effects they name.

A process that checked and folded every line every other process appends would do the whole fleet's reading by
itself, so sixteen writers on one journal would each read sixteen times what they write. Skimming a block of
complete lines costs two searches in C and the parse of two lines: the first line must follow the head this
process holds, the last one (the entry the next append chains to) must carry its seq and the hash of its own
bytes, and every line must name exactly one effect where the journal lays the field out. Anything else is not
skimmed; the reader then checks and folds the block line by line, which names what is wrong.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import msgspec

from .canonical import canonical_bytes, laid_out_holds
from .kinds import KINDS
from .records import Fields, read_fields

_EFFECT_FIELD = re.compile(rb'"effect_id":"([^"\\]*)"')  # an id with an escape in it is never skimmed


def raw_id(effect_id: str) -> bytes:
    """`effect_id` as a line the journal laid out holds it, between the quotes of its field: how `Skim.ids` names
    it. An id that needs an escape never matches one, and a line naming it is not skimmed."""
    return canonical_bytes(effect_id)[1:-1]


class Skim(NamedTuple):
    """What a block of complete lines says: how many, the effects they name, and the last entry, starting at
    `last_start` within the block."""

    lines: int
    ids: list[bytes]
    last: Fields
    last_start: int


def skim(block: bytes, seq: int, head: str | None) -> Skim | None:
    """The skim of `block` (complete lines, each ending in a newline) following the entry `seq` whose hash is
    `head`; None when it cannot be skimmed, and the block must be read line by line."""
    count = block.count(b"\n")
    ids = _EFFECT_FIELD.findall(block)
    if not count or len(ids) != count or block.count(b'"effect_id":') != count:
        return None  # a line naming no effect, one whose id needs an escape, or an effect_id key in its content too
        # (found, then, by reading it whole)
    first_end = block.find(b"\n")
    last_start = block.rfind(b"\n", 0, -1) + 1
    try:
        first = read_fields(block[:first_end])
        last = first if last_start == 0 else read_fields(block[last_start:-1])
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    if first.seq != seq + 1 or first.prev != head or last.seq != seq + count or last.kind not in KINDS:
        return None
    if not laid_out_holds(block[last_start:-1], last.hash):
        return None
    return Skim(count, ids, last, last_start)
