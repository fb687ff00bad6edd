"""Causal language: "X because of Y", "Y led to X", "Y, so X", and whether another grain states Y.

Pure, cached per text. A grain's causal clauses are matched against the other grain one
sentence at a time, by content words, so "the storm" in "cancelled because of the storm" finds
"A big storm hit Chicago" but not a grain that merely mentions the same word in passing.
"""
from __future__ import annotations

import re
from functools import lru_cache

from . import lexicon as lx
from . import words as w

# The effect ends on a character that is not a separator, so a run of separators is tried once as the gap before
# a marker, not once per starting point (linear time on a run of commas).
CAUSE_AFTER = re.compile(
    r"^(?P<effect>.*?[^ ,])[ ,]+(?P<marker>because of|because|due to|as a result of|owing to|on account of"
    r"|thanks to|(?:was |were |is |are |been )?caused by)\s+(?P<cause>.+)$")
CAUSE_FIRST = re.compile(
    r"^(?P<marker>because of|because|due to|as a result of|owing to|thanks to)\s+(?P<cause>[^,]+),\s*(?P<effect>.+)$")
CAUSE_BEFORE = re.compile(
    r"^(?P<cause>.+?)\s+(?P<marker>caused|causes|led to|leads to|led|resulted in|results in|triggered"
    r"|is why|was why|is the reason|was the reason)\s+(?P<effect>.+)$")
CAUSE_SO = re.compile(
    r"^(?P<cause>.+?)\s*[,;]\s*(?P<marker>so|therefore|thus|hence|which is why|that is why|and so"
    r"|as a result|consequently)\s*,?\s+(?P<effect>.+)$")
CAUSE_NEXT = re.compile(r"^(?P<marker>therefore|as a result|that is why|this is why|because of this|consequently)"
                        r"\s*,?\s+(?P<effect>.+)$")
CLAUSE_STARTS = lx.PRONOUNS | lx.DETERMINERS | {"i"}
PURPOSE = {"could", "can", "would", "might", "may", "will", "that"}  # "so I could help": a purpose
FIRST_PERSON = {"i", "me", "my", "mine", "myself", "we", "us", "our"}
VAGUE_SUBJECTS = {"it", "this", "that", "these", "those", "they", "there", "you", "which", "what"}
WEATHER = {"rain", "snow", "storm", "hail", "pour", "freez", "sleet", "drizzl", "flood", "wind", "cold", "hot"}

Clause = tuple[str, str, str]  # (effect, marker, cause)
MAX_SENTENCE_CHARS = 600  # a longer "sentence" is not prose a causal link can be read from; it is not parsed
# A word every pattern above needs, in the raw text ("'cause", "cuz" become "because" later): a text
# without one has no causal clause, and is not parsed at all.
ANY_MARKER = re.compile(r"\b(?:because|cause|cuz|coz|due|result|owing|account|thanks|caused|causes|led|leads"
                        r"|resulted|results|triggered|why|reason|so|therefore|thus|hence|consequently)\b", re.I)


def caused_by(effect_grain: str, cause_grain: str) -> str | None:
    """Why `effect_grain` is caused by `cause_grain`, or None.

    Invariant: the cause clause's first content word and at least half of the others (two when
    it has two or more) are in one declarative sentence of `cause_grain`; a first-person cause
    must come from the same speaker; the other grain must not simply restate the effect.
    """
    speaker, clauses = _causal_clauses(effect_grain)
    stated = _stated(cause_grain) if clauses else ()
    if not stated:
        return None
    same_speaker = speaker == w.split_speaker(cause_grain)[0]
    for clause in clauses:
        reason = _stated_cause(clause, stated, same_speaker)
        if reason:
            return reason
    return None


def _stated_cause(clause: Clause, stated: tuple[tuple[frozenset[str], bool], ...], same_speaker: bool) -> str | None:
    effect, marker, cause = clause
    cause_words, effect_words = w.content(cause.split()), w.content(effect.split())
    if not cause_words or not effect_words or _vague(cause) or _vague(effect):
        return None
    personal = bool(FIRST_PERSON & set(cause.split()))
    if personal and not same_speaker:
        return None  # "because I was sick" is about this speaker, not the other one
    said = frozenset().union(*(words for words, _ in stated))
    if len(effect_words & said) >= max(2, len(effect_words) / 2):
        return None  # the other grain restates the effect: a paraphrase, not its cause
    lead = _lead(cause)
    for words, first_person in stated:
        hit = cause_words & words
        if lead in hit and len(hit) >= max(min(2, len(cause_words)), len(cause_words) / 2) \
                and (first_person or not personal):
            return (f"'{marker}' links '{_clip(effect)}' to its cause '{_clip(cause)}', "
                    f"which the other grain states ({', '.join(sorted(hit))})")
    return None


def _lead(clause: str) -> str:
    """The cause's first content word, usually what it is about: "nature" in "nature brings peace"."""
    return next((next(iter(found)) for t in clause.split() if (found := w.content([t]))), "")


def _vague(clause: str) -> bool:
    """"because it was calming", "so it was a perfect match": whose "it" is unknown across grains."""
    tokens = [t for t in clause.split() if t not in lx.FILLERS and t != ","]
    if tokens[:1] == ["it"] and {w.stem(t) for t in tokens[1:4]} & WEATHER:
        return False  # "because it rained": the weather's "it" refers to nothing
    return bool(tokens) and tokens[0] in VAGUE_SUBJECTS


def _clip(text: str, n: int = 6) -> str:
    parts = [t for t in text.split() if t != ","]
    return " ".join(parts[:n]) + (" ..." if len(parts) > n else "")


@lru_cache(maxsize=8192)
def _causal_clauses(text: str) -> tuple[str | None, tuple[Clause, ...]]:
    """(speaker, ((effect, marker, cause), ...)) over the grain's declarative sentences."""
    speaker, body = w.split_speaker(text)
    if not ANY_MARKER.search(body):
        return speaker, ()
    found: list[Clause] = []
    previous = ""
    for sentence in w.sentences(body):
        plain = "" if sentence.endswith("?") or len(sentence) > MAX_SENTENCE_CHARS else _plain(sentence)
        found += _split(plain, previous) if plain else []
        previous = plain
    return speaker, tuple(found)


def _plain(sentence: str) -> str:
    return " ".join(w.tokens(w.normalise(sentence))[0])


def _split(plain: str, previous: str) -> list[Clause]:
    m = CAUSE_NEXT.match(plain)
    if m and previous:
        return [(m.group("effect"), m.group("marker"), previous)]  # "... . Therefore, ..."
    m = CAUSE_FIRST.match(plain) or CAUSE_AFTER.match(plain)
    if m:
        return [(m.group("effect"), m.group("marker"), m.group("cause"))]
    m = CAUSE_SO.match(plain)
    effect = m.group("effect").split() if m else []
    if m and effect[0] in CLAUSE_STARTS and not set(effect[1:3]) & PURPOSE:
        return [(m.group("effect"), m.group("marker"), m.group("cause"))]
    m = CAUSE_BEFORE.match(plain)
    return [(m.group("effect"), m.group("marker"), m.group("cause"))] if m else []


@lru_cache(maxsize=8192)
def _stated(text: str) -> tuple[tuple[frozenset[str], bool], ...]:
    """Per declarative sentence: its content words, without the cause it gives, and whether it
    is in the first person."""
    _, body = w.split_speaker(text)
    out: list[tuple[frozenset[str], bool]] = []
    for sentence in w.sentences(body):
        if sentence.endswith("?"):
            continue
        plain = _plain(sentence)
        causes = _split(plain, "") if len(sentence) <= MAX_SENTENCE_CHARS else []
        claim = (causes[0][0] if causes else plain).split()
        out.append((frozenset(w.content(claim)), bool(FIRST_PERSON & set(claim))))
    return tuple(out)
