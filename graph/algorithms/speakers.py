"""Who a query asks about, and which grains those people speak in (pure, no Django).

A memory of conversations holds turns like "Ana: I moved to Lisbon"; a question like "Where did Ana move?"
asks about what Ana said, yet the words "Ana" and "moved" also match the other speaker's "Wow Ana, you moved!".
Grains spoken by someone the query names rank SPEAKER_BOOST times higher: the query's capitalised words are
compared with each grain's speaker, word by word.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_CAPITALISED = re.compile(r"\b[A-Z][\w-]*")  # "Ana's" names Ana


def named(query: str) -> frozenset[str]:
    """The capitalised words of ``query`` (names, and a sentence's first word, which no speaker is called)."""
    return frozenset(_CAPITALISED.findall(query))


def spoken_by(speakers: Mapping[int, str | None], people: frozenset[str]) -> set[int]:
    """The grains whose speaker has a word among ``people``."""
    if not people:
        return set()
    return {gid for gid, speaker in speakers.items() if speaker and people.intersection(speaker.split())}


def speaker_factors(spoken: Iterable[int], boost: float) -> dict[int, float]:
    """``boost`` for each grain of ``spoken`` (see spoken_by); the others are left out (1.0)."""
    if boost == 1.0:
        return {}
    return dict.fromkeys(spoken, boost)
