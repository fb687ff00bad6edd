"""A learned re-ranking of the best grains of a retrieval, taught by feedback (pure, no Django).

Signal propagation orders the grains; the ranker then re-orders the best few
by a linear model over a handful of generic features of a grain and its match:

    score = log(signal score / best score in the window) + sum(w_f * x_f) + sum(w_word)

where the features ``x_f`` are the grain's length (log word count), whether it
is a question, whether it was a direct lexical hit, its match strength (the
log score ratio again, so the model can sharpen or soften it), whether it
places something in time when the query asks when, whether its speaker is
someone the query names, its similarity in meaning to the query (when the
semantic entry is on) and whether its speaker speaks of themselves ("I", "my",
"we"); the last sum runs over the query's words that the grain contains. All
weights start at 0: until feedback has taught it something the ranker changes
nothing.

Each pair of one useful and one not-useful grain of the same retrieval moves
the weights by a damped logistic (RankNet-style) step towards ranking the
useful one above the other; the step shrinks as the pair becomes well
ordered and every weight is bounded. What is learned is how much each kind of
evidence is worth for the memory's callers, not that a given grain is good:
no grain rises for every query because it was useful once.
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from graph.algorithms.text import all_words, terms

FEATURES = ("length", "question", "entry", "match", "when", "speaker", "meaning", "self")
WORD_KEY = "word:"  # prefix of a query word's learned weight
FEATURE_KEY = "feature:"


def feature_key(name: str) -> str:
    return FEATURE_KEY + name


def word_key(word: str) -> str:
    return WORD_KEY + word


# A question about time ("When did ...", "What year ...", "How long ago ...") and the words that place a
# statement in time; fixed alternatives and a word set, so both run in linear time.
_ASKS_WHEN = re.compile(r"\b(?:when|what (?:year|month|day|date|time|week)|which (?:year|month|day)|how long)\b")
TIME_WORDS = frozenset(
    """yesterday today tonight tomorrow ago last next recently lately earlier soon weekend week weeks month
    months year years morning afternoon evening night summer winter spring autumn fall monday tuesday
    wednesday thursday friday saturday sunday january february april june july august september october
    november december""".split()
)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def asks_when(query: str) -> bool:
    """Whether ``query`` asks about a time."""
    return _ASKS_WHEN.search(query.lower()) is not None


def query_words(query: str) -> list[str]:
    """The words of a query whose presence in a grain the ranker weighs."""
    return terms(query, max_terms=64)


_SELF = frozenset("i i'm i've i'd i'll me my mine myself we we're we've our ours".split())


@functools.lru_cache(maxsize=8192)
def _content_view(content: str) -> tuple[frozenset[str], float, float, bool, bool]:
    """A content's words, length feature, question feature, whether it speaks of a time and whether its speaker
    speaks of themselves (cached: the same grains come back often)."""
    words, every = frozenset(terms(content, max_terms=100_000)), all_words(content)
    timed = not TIME_WORDS.isdisjoint(words) or _YEAR.search(content) is not None
    return (words, round(math.log1p(len(every)), 6), 1.0 if content.rstrip().endswith("?") else 0.0,
            timed, not _SELF.isdisjoint(every))


def grain_features(*, content: str, query_words: Iterable[str], hops: int, score: float, best: float,
                   when: bool = False, spoken: bool = False, meaning: float = 0.0) -> dict:
    """The ranker's view of one grain of a retrieval (JSON-ready, kept with the trace for learning).

    Its words are the query's words its content states; learned cues are left out, so that the words a
    grain was found useful for do not bring it the weight of the words its competitors were let down by.
    ``when``: the query asks about a time; ``spoken``: the grain's speaker is someone the query names;
    ``meaning``: the cosine similarity of the grain's vector to the query's (0 without one).
    """
    have, length, question, timed, own = _content_view(content)
    return {
        "length": length,
        "question": question,
        "entry": 1.0 if hops == 0 else 0.0,
        "match": round(math.log(max(score, 1e-12) / best), 6) if best > 0 else 0.0,
        "when": 1.0 if when and timed else 0.0,
        "speaker": 1.0 if spoken else 0.0,
        "meaning": meaning,
        "self": 1.0 if own else 0.0,
        "words": sorted(w for w in set(query_words) if w in have),
    }


def weight_keys(words: Iterable[str]) -> list[str]:
    """Every weight a retrieval with these query words may read."""
    return [feature_key(f) for f in FEATURES] + [word_key(w) for w in words]


def adjustment(features: Mapping, weights: Mapping[str, float]) -> float:
    """What the learned weights add to a grain's log score (0 with nothing learned)."""
    total = sum(weights.get(feature_key(f), 0.0) * features.get(f, 0.0) for f in FEATURES)
    return total + sum(weights.get(word_key(w), 0.0) for w in features.get("words", ()))


def learned_score(features: Mapping, weights: Mapping[str, float]) -> float:
    """The ranker's score of a grain: its log match ratio plus the learned adjustment."""
    return features.get("match", 0.0) + adjustment(features, weights)


@dataclass(frozen=True)
class RankerSteps:
    rate: float  # step of a feature weight per pair
    word_rate: float  # step of a query word's weight per pair
    bound: float  # every weight stays within [-bound, bound]
    min_match: float = -0.5  # and the match weight above this (> -1: a better match never ranks lower for it)


def pair_updates(useful: Iterable[Mapping], not_useful: Iterable[Mapping], weights: Mapping[str, float],
                 steps: RankerSteps) -> dict[str, float]:
    """New values of the weights that the pairs (each useful grain, each not-useful grain) move.

    One logistic step per pair, all against ``weights`` as they are: the step
    is scaled by how badly the pair is ordered now (1/(1 + e^margin)), a
    feature moves by the difference between the two grains, a query word by
    +1 when only the useful grain has it and -1 when only the other has it.
    """
    useful, not_useful = list(useful), list(not_useful)
    delta: dict[str, float] = {}
    for good in useful:
        good_score, good_words = learned_score(good, weights), set(good.get("words", ()))
        for bad in not_useful:
            margin = good_score - learned_score(bad, weights)
            push = 1.0 / (1.0 + math.exp(min(margin, 50.0)))
            for f in FEATURES:
                diff = good.get(f, 0.0) - bad.get(f, 0.0)
                if diff:
                    delta[feature_key(f)] = delta.get(feature_key(f), 0.0) + steps.rate * push * diff
            bad_words = set(bad.get("words", ()))
            for w in good_words ^ bad_words:
                sign = 1.0 if w in good_words else -1.0
                delta[word_key(w)] = delta.get(word_key(w), 0.0) + steps.word_rate * push * sign
    lowest = {feature_key("match"): max(-steps.bound, steps.min_match)}
    return {k: max(lowest.get(k, -steps.bound), min(steps.bound, weights.get(k, 0.0) + d))
            for k, d in delta.items() if d}
