"""Word-level reading shared by the statement reader and the rules: tokens, stems, typed atoms.

Standard library only. Tokens are lowercase; a parallel list of booleans remembers which were
capitalised in the grain, since that alone tells a name from a noun.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from grains.content import split_speaker  # noqa: F401 - the rules read speakers through this module

from . import lexicon as lx
from .lexicon import END, START

PAST_AUX = frozenset({"was", "were", "did", "had"})
ATOM_SLOTS = {"t": "time", "d": "day", "w": "weekday", "y": "year", "r": "relative", "m": "month"}


class Group(NamedTuple):
    """The auxiliaries and adverbs between a subject and its predicate; `end` is where it stops."""

    end: int
    copula: bool
    have: bool
    positive: bool
    past: bool
    hypothetical: bool
    change: str | None
    marker: str
    became: bool


class Tail(NamedTuple):
    """Change markers found after the value: "these days", "since 2020", "anymore"."""

    change: str | None
    marker: str
    anymore: bool


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_TITLES = frozenset("dr. mr. mrs. ms. st. jr. sr. prof. vs. etc. e.g. i.e.".split())
# A dash between words separates clauses. Each alternative starts only where whitespace starts, so a long run of
# spaces is scanned once, not once per space (linear time on any input).
_DASH = re.compile(r"(?<!\s)\s*[\u2014\u2013]\s*|(?<!\s)\s+-+\s+")
_COMPOUND = re.compile(r"[a-z]+-[a-z]+")  # "forty-two"
CONTACT = re.compile(r"\+?\d[\d-]{5,}\d")  # a phone number
_CLOCK = re.compile(r"(\d{1,2})(?::(\d{2}))?([ap]m)?")
_DAY_OF_MONTH = re.compile(r"\d{1,2}(?!\d)")
_YEAR = re.compile(r"(?:19|20)\d\d")
_NUMBER = re.compile(r"(\d+)(?:st|nd|rd|th)?")


def sentences(text: str) -> list[str]:
    merged: list[list[str]] = []
    for part in _SENTENCE_END.split(text.strip()):
        if merged and _ends_with_title(merged[-1][-1]):
            merged[-1].append(part)  # "Dr. Smith" is one sentence
        elif part.strip():
            merged.append([part.strip()])
    return [" ".join(parts).strip() for parts in merged]


def _ends_with_title(part: str) -> bool:
    last = part.rsplit(None, 1)[-1].lower() if part.strip() else ""
    return last in _TITLES or any(last.endswith(t) and not last[-len(t) - 1].isalnum() for t in _TITLES
                                  if len(last) > len(t))


@lru_cache(maxsize=8192)  # a statement's sentences are read by the rules and the causes alike
def normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    text = _DASH.sub(", ", text)
    lowered = text.lower()
    for pattern, repl, needles in lx.COMPILED_CONTRACTIONS:
        if any(n in lowered for n in needles):  # most texts have none of a pattern's needles: no regex run
            changed = pattern.sub(repl, text)
            if changed != text:
                text, lowered = changed, changed.lower()
    return text


def tokens(text: str) -> tuple[list[str], list[bool]]:
    """Lowercase tokens, number words as digits ("forty-two" -> "42"), and which were capitalised."""
    toks, caps = _tokens(text)
    return list(toks), list(caps)


@lru_cache(maxsize=8192)  # a sentence is counted, parsed and searched for causes: tokenised once
def _tokens(text: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    toks: list[str] = []
    caps: list[bool] = []
    for raw in lx.TOKEN.findall(text):
        low = raw.lower()
        compound = "-" in low and _COMPOUND.fullmatch(low) and low.split("-")[0] in lx.NUMBER_WORDS
        for part in low.split("-") if compound else [low]:
            number = lx.NUMBER_WORDS.get(part)
            if number is not None and toks and toks[-1].isdigit() and _joins(int(toks[-1]), number):
                toks[-1] = str(int(toks[-1]) * number if number >= 100 else int(toks[-1]) + number)
                continue
            toks.append(part if number is None else str(number))
            caps.append(raw[:1].isupper())
    return tuple(toks), tuple(caps)


def _joins(before: int, number: int) -> bool:
    """"two hundred", "forty two": a number word that continues the number before it."""
    return number >= 100 or before % 10 == 0 and before >= 20 and 0 < number < 10


def drop_fillers(toks: list[str], caps: list[bool]) -> tuple[list[str], list[bool]]:
    """Leading "Yeah,", "Wow Mel,", "So": not part of the claim."""
    i = 0
    while i < len(toks):
        if toks[i] in lx.FILLERS or toks[i] in {",", ";"}:
            i += 1
        elif i + 1 < len(toks) and toks[i + 1] == "," and caps[i] and toks[i] not in lx.STOPWORDS:
            i += 2  # a vocative: "Caroline, I ..."
        else:
            break
    return toks[i:], caps[i:]


def stem(word: str) -> str:
    """A crude stem: both sides of a comparison get the same treatment, which is all it needs."""
    word = lx.SYNONYMS.get(word, word)
    word = lx.IRREGULAR.get(word, word)
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ation", "ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


def content(toks: list[str]) -> set[str]:
    """Stems of the words that carry meaning; times are left out, as they say when, not what."""
    return {stem(t) for t in toks if t not in lx.STOPWORDS and t not in lx.TIME_WORDS and len(t) > 2
            and not t.isdigit() and t[0].isalnum()}


def canonical(token: str) -> str:
    return lx.SYNONYMS.get(token, token)


def is_verb_cue(toks: list[str], i: int) -> bool:
    """After "Alice's": does a verb follow ("Alice's moving"), making the 's an "is" or "has"?"""
    nxt = toks[i] if i < len(toks) else ""
    return nxt in lx.ARTICLES or nxt in lx.IS_CUES or nxt.endswith("ing") and nxt not in lx.ING_NOUNS


def _verb_like(toks: list[str], k: int) -> bool:
    t, nxt = toks[k], toks[k + 1] if k + 1 < len(toks) else ""
    if t in lx.IRREGULAR_PAST or t.endswith("ed"):
        return True
    return t.endswith("s") and not t.endswith("ss") and nxt not in lx.AUX | lx.NEGATIONS | lx.MODALS


def continues_noun(toks: list[str], k: int) -> bool:
    """Is toks[k] a lowercase noun going on from the word before, rather than the verb after it?"""
    t = toks[k]
    if not t.isalpha() or t in lx.STOPWORDS or t in lx.NP_STOP or _verb_like(toks, k):
        return False
    rest = " ".join(toks[k:])
    return not any(pattern.match(rest) for pattern, _ in lx.COMPILED)


def noun_phrase(toks: list[str], i: int) -> tuple[list[str], int]:
    """Up to four words from i that read as a noun phrase; stops at the first verb-looking word."""
    np: list[str] = []
    while i < len(toks) and len(np) < 4 and toks[i] not in lx.NP_STOP:
        if np and _verb_like(toks, i) or toks[i] in lx.PRONOUNS - {"that"}:
            break
        np.append(toks[i])
        i += 1
    while np and np[-1] in lx.PARTICLES:
        np.pop()
        i -= 1
    return [canonical(t) for t in np], i


def name(toks: list[str], caps: list[bool]) -> tuple[list[str], int]:
    """A leading name of up to three words ("Alice", "Dr Smith"); a lowercase grain gives one word."""
    lowercase = not any(caps)
    out: list[str] = []
    while len(out) < (1 if lowercase else 3) and len(out) < len(toks):
        t, k = toks[len(out)], len(out)
        if t in lx.STOPWORDS and t not in lx.TITLES or not t.isalpha():
            break
        if not (caps[k] or lowercase) or out and _verb_like(toks, k):
            break
        if not out and (t.endswith("ing") or t in lx.NOT_NAMES):
            break  # "Taking care of ourselves is vital", "Sounds like fun": no name there
        out.append(t)
    return out, len(out)


def verb_group(toks: list[str], i: int) -> Group | None:
    """Auxiliaries, negation, change adverbs ("now", "no longer", "used to") before the predicate."""
    aux: list[str] = []
    negated = hypothetical = became = False
    change, marker = None, ""
    while i < len(toks):
        t, nxt = toks[i], toks[i + 1] if i + 1 < len(toks) else ""
        if (t, nxt) in {("no", "longer"), ("used", "to")}:
            change, marker, i = END, f"{t} {nxt}", i + 2
            continue
        if t in {"now", "nowadays"}:
            change, marker = START, t
        elif t in lx.NEGATIONS:
            negated = True
        elif t == "'s":
            aux.append("has" if nxt in {"been", "got"} else "is")
        elif t in lx.BECOME or t == "got" and nxt in lx.GOT_STATES:
            became, change, marker = True, START, t
            aux += [] if t == "got" else ["is"]
        elif t in lx.AUX:
            aux.append(t)
        elif t in lx.MODALS:
            hypothetical = True
        elif t not in lx.ADVERBS:
            break
        i += 1
    if i >= len(toks):
        return None
    used = set(aux)
    past = bool(used & PAST_AUX) or not used - PAST_AUX and (toks[i].endswith("ed") or toks[i] in lx.IRREGULAR_PAST)
    return Group(end=i, copula=bool(used & lx.BE) or became and not aux, have=bool(aux) and aux[-1] in lx.HAVE,
                 positive=not negated, past=past, hypothetical=hypothetical, change=change, marker=marker,
                 became=became)


def strip_tail_markers(value: list[str], caps: list[bool]) -> tuple[list[str], list[bool], Tail]:
    """The value without "now", "these days", "anymore", and the change those words mark."""
    change, marker, anymore = None, "", False
    keep: list[int] = []
    for k, t in enumerate(value):
        prev, nxt = value[k - 1] if k else "", value[k + 1] if k + 1 < len(value) else ""
        if t == "anymore":
            anymore = True
        elif t in {"now", "nowadays"} and prev not in {"right", "just", "for", "by", "until", "till"}:
            change, marker = START, t  # "right now" is the present, not a change
        elif (t, nxt) == ("these", "days"):
            change, marker = START, "these days"
        elif (prev, t) != ("these", "days"):
            if t == "since" and (nxt.isdigit() or nxt[:3] in lx.MONTHS or nxt in {"last", "then"}):
                change, marker = START, "since"
            keep.append(k)
    return [value[k] for k in keep], [caps[k] for k in keep], Tail(change, marker, anymore)


def head(value: list[str], caps: list[bool] | None = None) -> tuple[str, ...]:
    """The value's head words: "a senior engineer at Google for years" -> ("senior", "engineer").

    A capitalised word is a name even when it looks like a function word ("Go", "Nice").
    """
    caps = caps or [False] * len(value)
    out: list[str] = []
    for t, cap in zip(value, caps, strict=False):
        if t in lx.DETERMINERS and not out:
            continue
        if (t in lx.BOUNDARY or t in lx.DETERMINERS) and not (cap and t.isalpha() and t not in lx.PARTICLES):
            break
        out.append(canonical(t))
    if len(out) == 1 and out[0].endswith("ing"):
        # "love spending time in the studio": a gerund's object belongs to the value
        for t in value[value.index(out[0]) + 1:][:3]:
            if t in lx.BOUNDARY - {"time", "own"}:
                break
            if t not in lx.DETERMINERS:
                out.append(t)
    return tuple(out[:5])


def is_occupation(value: list[str]) -> bool:
    words = head(value)
    return bool(words) and words[-1] in lx.OCCUPATIONS


def looks_like_org(value: list[str], caps: list[bool]) -> bool:
    named = [t for t, c in zip(value, caps, strict=False) if c and t not in lx.STOPWORDS]
    return bool(named) and not set(value) & lx.CLUB_WORDS


def _time(t: str) -> str | None:
    """"3pm" -> "15:00", "9:30" -> "09:30"; a bare number is no time."""
    m = _CLOCK.fullmatch(t)
    if not m or not (m.group(2) or m.group(3)):
        return None
    hour = int(m.group(1)) % 12 + (12 if m.group(3) == "pm" else 0) if m.group(3) else int(m.group(1))
    return f"{hour:02d}:{m.group(2) or '00'}"


def atoms(value: list[str], caps: list[bool] | None = None) -> list[str]:
    """Typed values: t:15:00, d:march-3, m:june, w:friday, y:2024, r:last-week, n:30, c:<contact>, N:<name>."""
    caps = caps or [False] * len(value)
    return [a for k in range(len(value)) if (a := _atom(value, caps, k))]


def _atom(value: list[str], caps: list[bool], k: int) -> str | None:
    t, prev, nxt = value[k], value[k - 1] if k else "", value[k + 1] if k + 1 < len(value) else ""
    if t in lx.CLOCK_WORDS:
        return f"t:{lx.CLOCK_WORDS[t]}"
    if _time(t):
        return f"t:{_time(t)}"
    if "@" in t or CONTACT.fullmatch(t):
        return f"c:{t}"
    if t in lx.MONTHS.values() or t in lx.MONTHS:
        day = _DAY_OF_MONTH.match(nxt) or _DAY_OF_MONTH.match(prev)
        return f"d:{lx.MONTHS[t[:3]]}-{int(day.group(0))}" if day else f"m:{lx.MONTHS[t[:3]]}"
    if t in lx.WEEKDAYS or t[:-1] in lx.WEEKDAYS and t.endswith("s"):
        return f"w:{t.removesuffix('s') if t not in lx.WEEKDAYS else t}"
    if t in lx.DAY_WORDS or t in lx.RELATIVE and prev in {"last", "next", "this"}:
        return f"r:{prev}-{t}" if prev in {"last", "next", "this"} else f"r:{t}"
    if _YEAR.fullmatch(t):
        return f"y:{t}"
    number = _NUMBER.fullmatch(t)
    if number:
        beside_month = prev in lx.MONTHS.values() or nxt in lx.MONTHS.values() or prev in lx.MONTHS
        return None if beside_month else f"n:{int(number.group(1))}"
    if caps[k] and t.isalpha() and t not in lx.STOPWORDS:
        return f"N:{t}"
    return None


def slots(value: list[str]) -> tuple[tuple[str, str], ...]:
    """When and where, for events: ("time", "15:00"), ("weekday", "friday"), ("place", "room 4")."""
    found = {ATOM_SLOTS[a[0]]: a[2:] for a in atoms(value) if a[0] in ATOM_SLOTS}
    if "day" in found:
        found.setdefault("month", found["day"].split("-")[0])  # "June 14" is in June
    for k, t in enumerate(value):
        after = head(value[k + 1:]) if t in {"at", "in"} else ()
        if after and not atoms(list(after[:1])):
            found["place"] = " ".join(after)
            break
    return tuple(sorted(found.items()))
