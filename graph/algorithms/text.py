"""Turning free text into full-text query terms (pure, no Django)."""
from __future__ import annotations

import math
import re

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)

# Function words that match nearly every grain and carry no subject.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through to
    too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're you've your
    yours yourself yourselves also just really yeah oh hey hi so like get got""".split()
)


def terms(text: str, max_terms: int) -> list[str]:
    """Distinct lower-cased content words of ``text`` in order of first appearance.

    Possessive ``'s`` is dropped; stopwords are skipped unless nothing else is left.
    """
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w[:-2] if w.endswith("'s") else w for w in words]
    content = [w for w in words if w not in STOPWORDS]
    chosen = content or words
    seen: dict[str, None] = {}
    for word in chosen:
        seen.setdefault(word.replace("'", ""), None)
        if len(seen) >= max_terms:
            break
    return [w for w in seen if w]


def all_words(text: str) -> list[str]:
    """Every word of ``text``, lower-cased, function words included."""
    return _WORD.findall(text.lower())



def fts5_or(words: list[str]) -> str:
    """An FTS5 MATCH expression OR-ing ``words``, each quoted so no query syntax survives."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def rare_terms(
    words: list[str], stems: dict[str, str], doc_freq: dict[str, int], *, max_terms: int, max_docs: float,
    grains: float = math.inf, last_resort: bool = True,
) -> list[str]:
    """The words worth matching: known to the index, rarest first, at most ``max_terms``.

    Words whose stem occurs in more than ``max_docs`` grains are dropped (they
    rank little and cost the most), unless nothing else is left and
    ``last_resort`` holds, in which case the single rarest is kept if it is in
    fewer than half of the ``grains``: one in half of them or more has no
    weight in BM25 (its idf is floored near 0), so matching it would rank every
    grain that has it by length alone, at the cost of scoring them all. Words
    the index has never seen are dropped: they can match nothing.
    """
    known = sorted((doc_freq[stems[w]], i, w) for i, w in enumerate(words) if stems.get(w) in doc_freq)
    chosen = [w for df, _, w in known if df <= max_docs][:max_terms]
    if chosen or not last_resort:
        return chosen
    return [w for df, _, w in known[:1] if df < grains / 2]


def learned_cues(cues: str, content: str, query: str, *, max_terms: int) -> str:
    """``cues`` with the content words of ``query`` that neither ``content`` nor ``cues`` has yet, appended.

    The words a caller used to ask for a grain it then found useful, so that
    the next query in those words finds it too. At most ``max_terms`` are
    kept, the newest; the result is space-separated.
    """
    kept = cues.split()
    have = set(terms(content, max_terms=10_000)) | set(kept)
    kept += [w for w in terms(query, max_terms=64) if w not in have]
    return " ".join(kept[-max_terms:]) if max_terms > 0 else ""
