"""Synthetic but realistic grains for benchmarks (pure, seeded, no Django).

Words follow a Zipf law over a large vocabulary, as in real text; grains come
in conversations (a shared context, consecutive times), mention people,
places, numbers and dates, so the graph is connected the way real use connects it.
"""
from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_ONSETS = ["b", "br", "c", "ch", "d", "f", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "pl", "r", "s", "sh",
           "st", "t", "tr", "v", "w", "z"]
_NUCLEI = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io"]
_CODAS = ["", "n", "r", "s", "l", "m", "nd", "st", "x", "ck"]
VERBS = ["visited", "bought", "painted", "fixed", "lost", "found", "cooked", "planned", "started", "finished",
         "read", "wrote", "sold", "borrowed", "built", "moved", "adopted", "learned", "booked", "cancelled"]
TEMPLATES = [
    "{p} {v} a {a} {n} in {l} on {d}.",
    "{p} said the {n} near {l} costs {x} dollars.",
    "{p} and {q} {v} the {a} {n} together.",
    "The {n} that {p} {v} was {a}.",
    "{p} plans to visit {l} with {q} in {m}.",
    "{p} has {x} {n}s and wants a {a} {n2}.",
    "{p} thinks the {n} from {l} is better than the {n2}.",
]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def _words(count: int, rng: random.Random) -> list[str]:
    pool = {o + n + c + n2 + c2
            for o, n, c, n2, c2 in itertools.product(_ONSETS, _NUCLEI, _CODAS, _NUCLEI, ["", "n", "l"])}
    return rng.sample(sorted(pool), count)


@dataclass(frozen=True)
class SyntheticGrain:
    content: str
    context: str
    occurred_at: datetime


class Corpus:
    """A seeded generator of grains and of queries about them."""

    def __init__(self, seed: int = 7, vocabulary: int = 20000, people: int = 800, places: int = 300) -> None:
        self.rng = random.Random(seed)
        words = _words(vocabulary + people + places, self.rng)
        self.nouns, rest = words[:vocabulary], words[vocabulary:]
        self.people = [w.capitalize() for w in rest[:people]]
        self.places = [w.capitalize() + "ton" for w in rest[people:]]
        self._weights = list(itertools.accumulate(1.0 / (r + 1) ** 1.07 for r in range(vocabulary)))

    def _noun(self) -> str:
        return self.rng.choices(self.nouns, cum_weights=self._weights)[0]

    def grains(self, count: int, per_context: int = 20) -> Iterator[SyntheticGrain]:
        start = datetime(2025, 1, 1, tzinfo=UTC)
        for i in range(count):
            conversation = i // per_context
            rng = self.rng
            text = rng.choice(TEMPLATES).format(
                p=rng.choice(self.people), q=rng.choice(self.people), v=rng.choice(VERBS), a=self._noun(),
                n=self._noun(), n2=self._noun(), l=rng.choice(self.places), x=rng.randint(2, 999),
                m=rng.choice(MONTHS), d=f"{rng.randint(1, 28)} {rng.choice(MONTHS)}",
            )
            yield SyntheticGrain(f"{text} (note {i})", f"conv-{conversation}",
                                 start + timedelta(hours=conversation, seconds=i % per_context))

    def query_about(self, content: str) -> str:
        """A question sharing two or three words with ``content``, plus a word it lacks."""
        words = [w.strip(".,()") for w in content.split() if len(w.strip(".,()")) > 3 and not w[0].isdigit()]
        picked = self.rng.sample(words, min(len(words), self.rng.randint(2, 3)))
        return "What about " + " ".join(picked + [self._noun()]) + "?"
