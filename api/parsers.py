"""The REST API's body parser (its own module: DRF's settings import it while DRF's views are being imported)."""
from __future__ import annotations

import codecs

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json

MAX_DEPTH = 32  # the API's bodies are objects of items of fields: a few levels; deeper is refused, never walked


class JsonParser(JSONParser):
    """DRF's JSON parser, refusing as invalid JSON (400) a body nested deeper than MAX_DEPTH levels, also one
    deeper than the decoder itself goes (where it would fail the request): nothing past it ever reads such a
    value (a message quoting it, a check walking it)."""

    def parse(self, stream: object, media_type: str | None = None, parser_context: dict | None = None) -> object:
        """DRF's parse, also refusing a body said to be in another charset than UTF-8 (it was decoded so, and
        stored garbled) and an object giving a key twice (the last one won, unseen)."""
        charset = (parser_context or {}).get("encoding") or "utf-8"
        try:
            utf8 = codecs.lookup(charset).name == "utf-8"
        except LookupError:
            utf8 = False
        if not utf8:
            raise ParseError(f"JSON parse error - the body must be UTF-8, as JSON is (its Content-Type says "
                             f"charset={charset[:40]})")
        try:
            data = json.load(codecs.getreader("utf-8")(stream), object_pairs_hook=_once_each,
                             parse_constant=json.strict_constant if self.strict else None)
        except RecursionError:
            data = None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        else:
            if _depth_within(data, MAX_DEPTH):
                return data
        raise ParseError(f"JSON parse error - arrays or objects nested deeper than {MAX_DEPTH} levels")


def _once_each(pairs: list[tuple[str, object]]) -> dict:
    """An object's keys, each given once (JSON leaves a key given twice to the reader: refused here)."""
    found = dict(pairs)
    if len(found) < len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"the key {twice[:100]!r} is given twice in one object")
    return found


def _depth_within(value: object, limit: int) -> bool:
    """Whether ``value``'s arrays and objects nest at most ``limit`` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True
