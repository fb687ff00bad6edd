"""flux_extracts mode, the pure part: the prompt that asks for atomic facts and a strict reading of the answer."""
from __future__ import annotations

from core.answers import answer_field
from grains.content import is_text

PROMPT = """Extract the distinct facts stated in the text below, for a long-term memory.
Each fact is one short sentence that makes sense on its own: name people and things instead of using
pronouns, keep every number, date and name exactly as written, and add nothing that the text does not state.
Leave out greetings and small talk. Answer with JSON only, in the form {{"facts": ["...", "..."]}}.

Text:
<<<
{text}
>>>"""


class BadAnswer(ValueError):
    """The model's answer is not the JSON asked for; the message says what was wrong."""


def extraction_prompt(text: str) -> str:
    return PROMPT.format(text=text)


def parse_facts(answer: str, *, max_facts: int, max_chars: int) -> list[str]:
    """The facts of a model answer ``{"facts": [str, ...]}``, trimmed and without repeats."""
    facts = answer_field(answer, "facts", BadAnswer)
    if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
        raise BadAnswer(f"the model's JSON has no list of strings under 'facts': {str(answer)[:200]!r}")
    # A "fact" that shows nothing, or is not valid text, is no fact: left out, never the caller's invalid input.
    cleaned = list(dict.fromkeys(" ".join(f.split()) for f in facts if is_text(f)))
    if len(cleaned) > max_facts:
        raise BadAnswer(f"the model extracted {len(cleaned)} facts; at most {max_facts} are stored at once")
    too_long = [f for f in cleaned if len(f) > max_chars]
    if too_long:
        raise BadAnswer(f"a fact of {len(too_long[0])} characters is longer than {max_chars}")
    return cleaned
