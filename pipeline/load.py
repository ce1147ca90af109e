"""Reading a result file with every access typed, so bad input names its file and JSON path instead of crashing."""

from __future__ import annotations

import gzip
import json
import math
import re
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from . import credentials

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
_EXPECTED = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "integer": (int,),
    "number": (int, float),
}
_QUOTED = 60  # characters of a value a message quotes before it cuts the rest
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # half of a pair, or a half with no partner


class BadInput(Exception):
    """A result file the judge cannot read as artifacts; str() is the one line shown to the user."""

    def __init__(self, file: str, path: str, problem: str):
        super().__init__(f"{file}: {path}: {problem}")
        self.file, self.path, self.problem = file, path, problem


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for messages."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def shortened(text: str, limit: int) -> str:
    """Text cut after `limit` characters, saying so and how long it was: "abc… (1,234 characters)"."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def quote(value: Any) -> str:
    """A value from a file as a one-line message quotes it: repr(), cut after _QUOTED characters saying how long."""
    if isinstance(value, str):
        if len(value) <= _QUOTED:
            return repr(value)
        cut = repr(value[:_QUOTED])
        return f"{cut[:-1]}…{cut[-1]} ({len(value):,} characters)"
    return shortened(repr(value), _QUOTED)


class Node:
    """A JSON value together with the file and JSON path it was read from (the path is built only when asked)."""

    __slots__ = ("value", "file", "_parent", "_key")

    def __init__(self, value: Any, path: str | Node, file: str, key: str | int = ""):
        self.value, self.file = value, file
        self._parent, self._key = path, key  # a Node parent and this value's key in it, or the path itself

    @property
    def path(self) -> str:
        """The JSON path, e.g. `cells[3].artifacts["log.jsonl"]`."""
        if isinstance(self._parent, Node):
            return self._parent.child_path(self._key)
        return self._parent

    def bad(self, problem: str) -> BadInput:
        """An error about this value."""
        return BadInput(self.file, self.path or "$", problem)

    def expect(self, kind: str, *, nullable: bool = False) -> Any:
        """This value, which must be of JSON type `kind` (or null when `nullable`)."""
        value = self.value
        if value is None and nullable:
            return None
        ok = isinstance(value, _EXPECTED[kind]) and not (isinstance(value, bool) and kind in ("integer", "number"))
        if not ok:
            raise self.bad(f"expected {kind}{' or null' if nullable else ''}, got {json_type(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.bad(f"expected a finite {kind}, got one too large for a float (it reads as {value})")
        return value

    def count(self, least: int = 0) -> int:
        """This value, which must be an integer of at least `least`: a count no run can make negative."""
        number: int = self.expect("integer")
        if number < least:
            raise self.bad(f"expected a count of at least {least}, got {quote(number)}")
        return number

    def child_path(self, key: str | int) -> str:
        """The JSON path of a member or item."""
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        if _IDENTIFIER.match(key):
            return f"{self.path}.{key}" if self.path else key
        return f"{self.path}[{json.dumps(key)}]"

    def has(self, key: str) -> bool:
        """The object has `key` (with any value, null included)."""
        return key in self.expect("object")

    def at(self, key: str) -> Node:
        """The member `key`, which must be present."""
        obj = self.expect("object")
        if key not in obj:
            raise BadInput(self.file, self.child_path(key), "missing")
        return Node(obj[key], self, self.file, key)

    def get(self, key: str, kind: str, *, nullable: bool = False) -> Any:
        """The member `key`, present and of JSON type `kind`."""
        return self.at(key).expect(kind, nullable=nullable)

    def opt(self, key: str, kind: str, default: Any = None) -> Any:
        """The member `key` when present and not null, else `default`; a present value must have type `kind`."""
        obj = self.expect("object")
        if obj.get(key) is None:
            return default
        return Node(obj[key], self, self.file, key).expect(kind)

    def opt_node(self, key: str) -> Node | None:
        """The member `key` as a node when present and not null."""
        obj = self.expect("object")
        return None if obj.get(key) is None else Node(obj[key], self, self.file, key)

    def items(self) -> list[Node]:
        """The items of this array."""
        return [Node(v, self, self.file, i) for i, v in enumerate(self.expect("array"))]


class _NotJson(Exception):
    """Text json.loads would take that is not JSON: NaN, Infinity, or a key given twice in one object."""


def _no_constant(literal: str) -> Any:
    """json.loads' hook for NaN, Infinity and -Infinity, which are not JSON (and `judge --json` could not print)."""
    raise _NotJson(f"{literal} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads' hook building each object: a key given twice is refused, where json would keep the last."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        key = next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise _NotJson(f"the key {quote(key)} is given twice in one object")
    return obj


def read(path: str | Path) -> Node:
    """Parse one result file; a file that is unreadable, truncated or not JSON is bad input at `$`."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(name, "$", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BadInput(name, "$", f"not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(text.rstrip())
        open_string = exc.msg.startswith("Unterminated string") and '"' not in text[exc.pos + 1:]
        cut = " (truncated?)" if at_end or open_string else ""
        raise BadInput(name, "$", f"not valid JSON{cut}: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except _NotJson as exc:
        raise BadInput(name, "$", f"not valid JSON: {exc}") from None
    except RecursionError:
        raise BadInput(name, "$", "arrays or objects nested too deeply to read") from None
    except ValueError:  # json.loads' only other error: an integer longer than int() converts
        raise BadInput(name, "$", f"an integer of more than {sys.get_int_max_str_digits():,} digits") from None
    _no_lone_surrogate(text, value, name)
    node = Node(value, "", name)
    if credentials.shape_in_json(text, value) is not None:  # one scan of the text; the value is looked for only on
        # a find
        leak = _credential(node)
        if leak is not None:
            at, shape = leak
            raise at.bad(f"holds what looks like a {shape}: a result file never carries a credential, so it is "
                         "neither judged nor shown; remove it from the file")
    node.expect("object")
    return node


def _no_lone_surrogate(text: str, value: Any, file: str) -> None:
    """Refuse a value holding half of a UTF-16 surrogate pair with no partner (JSON can escape one, UTF-8 cannot
    encode it): no page or terminal could show it. The text is scanned first, so a file without one costs a search."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(file, "$", "holds an unpaired surrogate escape (\\ud800 to \\udfff with no partner), "
                                  "which is not text") from None


def rows(path: Path, shown: str) -> Iterator[Node]:
    """Each row of a gzipped JSON-lines file (an exploration's history), read as strictly as a result file; bad
    input names the file (as `shown`) and the line."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                where = f"{shown} line {number}"
                try:
                    value = json.loads(line, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
                except (ValueError, RecursionError, _NotJson) as exc:
                    raise BadInput(where, "$", f"not a JSON row: {exc}") from None
                _no_lone_surrogate(line, value, where)
                row = Node(value, "", where)
                if credentials.shape_in_json(line, value) is not None and (leak := _credential(row)) is not None:
                    raise leak[0].bad(f"holds what looks like a {leak[1]}: a history never carries a credential")
                row.expect("object")
                yield row
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise BadInput(shown, "$", f"cannot read the gzipped history: {exc}") from None


def _credential(node: Node) -> tuple[Node, str] | None:
    """The first value under `node` holding a credential's shape, and that shape: a string, or an object's member
    (its key, with its text when the value is a string)."""
    value = node.value
    if isinstance(value, str):
        shape = credentials.shape_in(value)
        return (node, shape) if shape is not None else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        child = Node(item, node, node.file, key)
        if isinstance(key, str):
            shape = credentials.shape_in(json.dumps({key: item}) if isinstance(item, str) else key)
            if shape is not None:
                return child, shape
        found = _credential(child)
        if found is not None:
            return found
    return None