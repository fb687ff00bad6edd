"""The hallucination gate of the dream cycle (pure, no Django).

An abstraction is accepted only when every one of its sentences is grounded in
the source grains: most of its content words occur in them, and every number
and every name it mentions occurs in them exactly. One unsupported sentence
rejects the whole abstraction, and the rejection names it and says why.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from epistemic import words as w


@dataclass(frozen=True)
class GateResult:
    accepted: bool
    reason: str = ""
    failing_sentence: str = ""


@dataclass(frozen=True)
class Evidence:
    """What the sources say, as the gate compares it: content stems, numbers, names."""

    stems: frozenset[str]
    numbers: frozenset[str]
    names: frozenset[str]


def _read(sentence: str) -> tuple[set[str], set[str], set[str]]:
    toks, caps = w.tokens(w.normalise(sentence))
    numbers = {t for t in toks if t.isdigit()}
    # A capitalised word that is not the sentence's first word and not a function word is a name
    # (people, places, months, weekdays, brands).
    names = {t for i, (t, cap) in enumerate(zip(toks, caps, strict=False)) if cap and i > 0 and t.isalpha()
             and t not in w.lx.STOPWORDS}
    return w.content(toks), numbers, names


def evidence(sources: Sequence[str]) -> Evidence:
    stems: set[str] = set()
    numbers: set[str] = set()
    names: set[str] = set()
    for source in sources:
        _, body = w.split_speaker(source)
        toks, caps = w.tokens(w.normalise(body))
        s, n, m = _read(body)
        stems |= s
        numbers |= n
        # sentence-initial names too
        names |= m | {t for t, cap in zip(toks, caps, strict=False) if cap and t.isalpha()}
        speaker = w.split_speaker(source)[0]
        if speaker:
            names |= {t.lower() for t in speaker.split()}
    return Evidence(frozenset(stems), frozenset(numbers), frozenset(names))


def gate(abstraction: str, sources: Sequence[str], *, min_support: float) -> GateResult:
    """Accept ``abstraction`` only if each sentence is supported by ``sources``.

    A sentence is supported when at least ``min_support`` of its content words
    (stemmed) occur in the sources, and all of its numbers and names do.
    """
    sentences = [s for s in w.sentences(w.split_speaker(abstraction)[1]) if s.strip()]
    if not sentences:
        return GateResult(False, "the abstraction is empty")
    known = evidence(sources)
    for sentence in sentences:
        stems, numbers, names = _read(sentence)
        missing_numbers = sorted(numbers - known.numbers)
        if missing_numbers:
            return GateResult(False, f"number {', '.join(missing_numbers)} is in no source grain", sentence)
        missing_names = sorted(names - known.names)
        if missing_names:
            return GateResult(False, f"name {', '.join(missing_names)} is in no source grain", sentence)
        if not stems:
            continue
        support = len(stems & known.stems) / len(stems)
        if support < min_support:
            unsupported = ", ".join(sorted(stems - known.stems))
            return GateResult(False, f"only {support:.0%} of its content words are in the sources "
                                     f"(not: {unsupported})", sentence)
    return GateResult(True)
