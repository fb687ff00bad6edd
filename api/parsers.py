"""The REST API's body parser (its own module: DRF's settings import it while DRF's views are being imported)."""
from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32  # the API's bodies are objects of items of fields: a few levels; deeper is refused, never walked


class JsonParser(JSONParser):
    """DRF's JSON parser, refusing as invalid JSON (400) a body nested deeper than MAX_DEPTH levels, also one
    deeper than the decoder itself goes (where it would fail the request): nothing past it ever reads such a
    value (a message quoting it, a check walking it)."""

    def parse(self, stream: object, media_type: str | None = None, parser_context: dict | None = None) -> object:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            data = None
        else:
            if _depth_within(data, MAX_DEPTH):
                return data
        raise ParseError(f"JSON parse error - arrays or objects nested deeper than {MAX_DEPTH} levels")


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
