"""Reading an LLM's JSON answer (pure, no Django): the one parser the extraction, the dream abstraction and the
epistemic judge share before each checks its own field."""
from __future__ import annotations

import json


def answer_field(answer: str, key: str, error: type[Exception], *, who: str = "the model") -> object:
    """The value under ``key`` of an answer that is a JSON object (None when absent or not an object);
    ``error`` with the start of the answer when it is not JSON at all."""
    try:
        data = json.loads(answer)
    except (TypeError, ValueError):
        raise error(f"{who} did not answer JSON: {str(answer)[:200]!r}") from None
    return data.get(key) if isinstance(data, dict) else None
