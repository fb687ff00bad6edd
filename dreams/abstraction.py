"""Abstractions of a clump of grains, the pure part: the LLM's prompt and a strict reading of its
answer, and the extractive summary used when no LLM is configured."""
from __future__ import annotations

from collections.abc import Sequence

from core.answers import answer_field
from grains.content import is_text

PROMPT = """Below are related statements from a long-term memory, most central first.
Write ONE short higher-level statement (one or two sentences) that says what they have in common.
Use only what the statements say: no new facts, and keep every name, number and date exactly as written.
Answer with JSON only: {{"abstraction": "..."}}

Statements:
{statements}"""


class BadAbstraction(ValueError):
    """The model's answer is not the JSON asked for; the message says what was wrong."""


def abstraction_prompt(sources: Sequence[str]) -> str:
    return PROMPT.format(statements="\n".join(f"- {s}" for s in sources))


def parse_abstraction(answer: str, *, max_chars: int) -> str:
    """The abstraction of a model answer ``{"abstraction": str}``, whitespace collapsed."""
    text = answer_field(answer, "abstraction", BadAbstraction)
    if not isinstance(text, str) or not is_text(text):  # nothing that shows, or not valid Unicode
        raise BadAbstraction(f"the model's JSON has no text under 'abstraction': {str(answer)[:200]!r}")
    text = " ".join(text.split())
    if len(text) > max_chars:
        raise BadAbstraction(f"the abstraction has {len(text)} characters; at most {max_chars}")
    return text


def extractive(sources: Sequence[str], *, statements: int, max_chars: int | None = None) -> str:
    """The ``statements`` most central sources (given most central first), merged into one text of at most
    ``max_chars`` characters (a source that would pass it is left out, a less central one may still fit; '' when
    none fits).

    Grounded by construction: it says only what the sources say. Each keeps its
    speaker, so "I" still means who said it.
    """
    chosen: list[str] = []
    length = -1  # the spaces between them
    for source in sources[:statements]:
        piece = " ".join(source.split()).rstrip(" .")
        if piece and (max_chars is None or length + 1 + len(piece) + 1 <= max_chars):
            chosen.append(f"{piece}.")
            length += 1 + len(piece) + 1
    return " ".join(chosen)
