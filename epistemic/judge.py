"""The LLM judge of the epistemic layer, the pure part: its prompt and a strict reading of its answer.

The judge is asked about pairs of nearby grains that the rules left
unrelated. Its answer must name one relation of a fixed set; anything else is
a bad answer, never a guess.
"""
from __future__ import annotations

from core.answers import answer_field
from epistemic.rules import Relation

PROMPT = """Two statements from a long-term memory. A was recorded before B.
A: {old}
B: {new}

How does B relate to A? Choose exactly one:
- "supports": B states the same fact as A about the same subject.
- "contradicts": B and A cannot both be true about the same subject and attribute.
- "supersedes": B replaces A as the current truth about the same subject and attribute (a change over time).
- "caused_by": B states something that happened because of what A states.
- "causes": A states something that happened because of what B states.
- "none": anything else, including statements that merely share words or are about different subjects.
Answer with JSON only: {{"relation": "...", "reason": "one short sentence"}}"""

# The judge's word -> (conduit kind, which grain the conduit starts from).
_MEANING = {
    "supports": ("supports", "new"),
    "contradicts": ("contradicts", "new"),
    "supersedes": ("supersedes", "new"),
    "caused_by": ("caused_by", "new"),
    "causes": ("caused_by", "old"),
}


class BadVerdict(ValueError):
    """The judge's answer is not the JSON asked for; the message says what was wrong."""


def judge_prompt(new: str, old: str) -> str:
    return PROMPT.format(old=old, new=new)


def parse_verdict(answer: str) -> Relation | None:
    """The relation a judge answer names, None for "none"; BadVerdict for anything else."""
    relation = answer_field(answer, "relation", BadVerdict, who="the judge")
    if relation == "none":
        return None
    if relation not in _MEANING:
        raise BadVerdict(f"the judge named no known relation: {str(answer)[:200]!r}")
    reason = answer_field(answer, "reason", BadVerdict, who="the judge")
    kind, source = _MEANING[relation]
    return Relation(kind=kind, source=source,
                    reason=("llm: " + reason.strip())[:200] if isinstance(reason, str) and reason.strip() else "llm")
