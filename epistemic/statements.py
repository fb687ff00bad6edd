"""A grain read as one statement: subject, attribute, value, polarity and change marker.

Pure and cheap: regular expressions and word lists over a few dozen words, cached per text. A
grain without one clear subject-attribute-value shape (chatty turns, questions, several claims)
reads as no statement, so the rules say nothing about it rather than guess.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import NamedTuple

from . import lexicon as lx
from . import words as w
from .lexicon import AGENT, END, EVENT, START, THING


@dataclass(frozen=True)
class Statement:
    """Who (subject words and kind), what (attribute), which value, and how it is said.

    `value` holds the head words of the value; `slots` the time/day/place parts of a slotted
    attribute (an event's schedule, a birth); `atoms` every typed number, date, time and name
    after the verb. `change` is START ("moved to", "now") or END ("no longer", "used to",
    "quit") with its words in `marker`; `past` is a plain past tense with no change marker.
    """

    subject: tuple[str, ...]
    kind: str  # AGENT, EVENT, THING, or "pronoun" (unresolved: the rules never compare those)
    attribute: str
    functional: bool  # one value at a time: two different values cannot both hold
    value: tuple[str, ...]
    slots: tuple[tuple[str, str], ...]
    atoms: frozenset[str]
    positive: bool
    change: str | None
    marker: str
    past: bool
    subject_day: str = ""  # "Friday's meeting": the day names which event, as well as when

    @property
    def who(self) -> str:
        return " ".join(self.subject)

    @property
    def shown(self) -> str:
        return " ".join(self.value) or "-"


class _Subject(NamedTuple):
    words: tuple[str, ...]
    kind: str
    owned: list[str] | None  # "Carol's manager": the possessed noun phrase
    end: int
    day: str = ""


class _Clause(NamedTuple):
    """A subject with its verb group, and the words that follow them."""

    subject: tuple[str, ...]
    kind: str
    day: str
    group: w.Group
    rest: list[str]
    caps: list[bool]


@lru_cache(maxsize=8192)
def read(text: str) -> Statement | None:
    """The one statement a grain makes, or None when it makes none or several."""
    speaker, body = w.split_speaker(text)
    claims = [s for s in w.sentences(body) if not s.endswith("?") and len(w.tokens(s)[0]) >= 3]
    if not claims or len(claims) > 2:
        return None  # a turn of several claims: which one would a relation be about?
    parsed = [p for p in (parse(s, speaker) for s in claims) if p is not None]
    return parsed[0] if len(parsed) == 1 else None


def parse(sentence: str, speaker: str | None) -> Statement | None:
    """One declarative sentence as a statement; None when it has no subject-verb-value shape."""
    toks, caps = w.drop_fillers(*w.tokens(w.normalise(sentence)))
    if not 3 <= len(toks) <= 20:
        return None
    subject = _subject(toks, caps, speaker)
    if subject is None or subject.kind == "pronoun":
        return None
    group = w.verb_group(toks, subject.end)
    if group is None or group.hypothetical:
        return None
    clause = _Clause(subject.words, subject.kind, subject.day, group, toks[group.end:], caps[group.end:])
    if subject.owned is not None:
        return _possessed(clause, subject.owned)
    return _predicate(clause)


def _subject(toks: list[str], caps: list[bool], speaker: str | None) -> _Subject | None:
    """The sentence's subject: the speaker for "I"/"my", a name, or a noun phrase."""
    me = (speaker.lower(),) if speaker else ("@me",)
    first = toks[0]
    if first in {"i", "my"}:
        owned, end = w.noun_phrase(toks, 1) if first == "my" else (None, 1)
        return _Subject(me, AGENT, owned, end) if owned != [] else None
    if first in lx.PRONOUNS or first in lx.PRONOUN_OWNERS:
        return _Subject((first,), "pronoun", None, len(toks))
    if first in lx.DETERMINERS:
        np, end = w.noun_phrase(toks, 1)
        return _owner(tuple(np), toks, end) if np else None
    name, end = w.name(toks, caps)
    if len(name) == 1 and end < len(toks) and w.continues_noun(toks, end):
        np, end = w.noun_phrase(toks, 0)  # "Project deadline is Friday": a noun phrase without "the"
        return _owner(tuple(np), toks, end)
    return _owner(tuple(name), toks, end, person=True) if name else None


def _owner(words: tuple[str, ...], toks: list[str], end: int, *, person: bool = False) -> _Subject | None:
    """"Carol's manager ...", "Friday's meeting ...": a possessive after the subject words."""
    kind = AGENT if person else _thing_kind(list(words))
    if end >= len(toks) or toks[end] != "'s" or w.is_verb_cue(toks, end + 1):
        return _Subject(words, kind, None, end)
    owned, after = w.noun_phrase(toks, end + 1)
    if not owned:
        return None
    if words[-1] in lx.DAY_WORDS:
        return _Subject(tuple(owned), _thing_kind(owned), None, after, day=words[-1])
    return _Subject(words, kind, owned, after)


def _thing_kind(np: list[str]) -> str:
    """"the flight to Denver" is an event: its head noun, before any preposition, is one."""
    core = np[: next((k for k, t in enumerate(np) if t in lx.PARTICLES), len(np))]
    return EVENT if core and core[-1] in lx.EVENT_NOUNS else THING


def _possessed(clause: _Clause, owned: list[str]) -> Statement | None:
    """"Carol's manager is Dave" names an attribute; "Alice's sister lives in Lyon" a new subject."""
    event = _thing_kind(owned) == EVENT
    if clause.group.copula and not event and not _lexicon(" ".join(clause.rest), AGENT, True):
        return _owned(clause, owned)
    kind = EVENT if event else AGENT if clause.kind == AGENT else THING
    return _predicate(clause._replace(subject=clause.subject + tuple(owned), kind=kind))


def _lexicon(text: str, kind: str, copula: bool) -> tuple[int, lx.Predicate] | None:
    """(words used, predicate) for the first known verb phrase that starts `text`."""
    for pattern, predicate in _fitting(kind, copula):
        m = pattern.match(text)
        if m:
            return len(m.group(0).split()), predicate
    return None


@cache
def _fitting(kind: str, copula: bool) -> tuple[tuple[re.Pattern, lx.Predicate], ...]:
    """The known verb phrases a subject of ``kind`` may take, in order (with or without a copula before them)."""
    return tuple((pattern, p) for pattern, p in lx.COMPILED if _fits(p, kind, copula))


def _fits(p: lx.Predicate, kind: str, copula: bool) -> bool:
    if p.after == "be" and not copula or p.after == "verb" and copula:
        return False
    if p.subject == THING:
        return kind != AGENT
    return (p.subject == EVENT) == (kind == EVENT)


def _predicate(c: _Clause) -> Statement | None:
    """A known verb phrase, an event's when and where, "X is ...", or any verb and its object."""
    rest = c.rest
    hit = _lexicon(" ".join(rest), c.kind, c.group.copula)
    if hit:
        used, p = hit
        marker = " ".join(rest[:used]) if p.change else ""
        return _build(c, p.attribute, used, change=p.change, marker=marker, negative=p.negative)
    if c.kind == EVENT and c.group.copula and (rest[0] in lx.PLACE_PREPS or w.atoms(rest)):
        return _build(c, "schedule", 0)
    if c.group.copula and not rest[0].endswith("ing"):
        return _copula(c)
    if rest[0] in lx.STOPPERS and len(rest) > 1 and rest[1].endswith("ing"):
        stopped = _predicate(c._replace(rest=rest[1:], caps=c.caps[1:]))
        return stopped and replace(stopped, change=END, marker=rest[0], past=False)
    if rest[0] in lx.HAVE or c.group.have and not _participle(rest[0]):
        return _build(c, "have", 1 if rest[0] in lx.HAVE else 0)
    if rest[0] in lx.STOPWORDS or not rest[0].isalpha():
        return None
    if len(rest) > 1 and rest[1] in lx.PARTICLES:
        return _build(c, f"{w.stem(rest[0])} {rest[1]}", 2)
    return _build(c, w.stem(rest[0]), 1)


def _participle(word: str) -> bool:
    return (word.endswith(("ing", "ed", "en")) or word in lx.IRREGULAR_PAST) and word not in lx.STATUSES


def _copula(c: _Clause) -> Statement | None:
    """"X is ...": an age, a relationship status, a role, or a plain description."""
    rest, person = c.rest, c.kind == AGENT
    became = {"change": START, "marker": c.group.marker} if c.group.became else {}
    if person and rest[0].isdigit() and (len(rest) == 1 or rest[1] in {"years", "year"}):
        return _build(c, "age", 0, limit=1)
    if person and rest[0] in lx.STATUSES and len(rest) <= 3:
        return _build(c, "relationship", 0, limit=1, **became)
    if rest[0] in lx.MOODS:
        return None  # "I'm excited", "swamped with work": how someone feels today is no lasting fact
    if rest[0] in lx.PREPOSITIONS:
        return _build(c, f"is {rest[0]}", 1, **became)
    if len(rest) > 2 and rest[1] in lx.PREPOSITIONS and rest[0] not in lx.DETERMINERS:
        return _build(c, f"is {rest[0]} {rest[1]}", 2, **became)  # "interested in", "closed on"
    if not person and c.subject[-1] in lx.FUNCTIONAL:
        return _build(c, "is", 0, functional=True, **became)  # "the wifi password is ...": one at a time
    return _build(c, "role" if person and w.is_occupation(rest) else "is", 0, **became)


def _owned(c: _Clause, np: list[str]) -> Statement | None:
    """"Carol's manager is Dave", "my new phone number is ...": the possessed noun is the attribute."""
    change, marker = (START, c.group.marker) if c.group.became else (None, "")
    if np[0] in lx.NEW_MARKERS | lx.OLD_MARKERS and len(np) > 1:
        change, marker, np = (START if np[0] in lx.NEW_MARKERS else END), np[0], np[1:]
    noun = " ".join(np)
    attribute = lx.NOUN_ATTRIBUTES.get(noun, noun)
    if attribute == "employer" and c.rest[:1] == ["as"]:
        attribute = "role"
    skip = 1 if c.rest[0] in lx.PREPOSITIONS and attribute not in lx.SLOTTED else 0
    kin = np[-1] in lx.ANIMALS or np[-1] in lx.FAMILY  # one may have several dogs or sons
    if kin and c.rest[skip:skip + 1] in (["named"], ["called"]):
        attribute, skip = f"{noun} name", skip + 1
    single = attribute in lx.FUNCTIONAL or np[-1] in lx.FUNCTIONAL or attribute.startswith("favourite ")
    functional = single and not kin
    return _build(c, attribute, skip, change=change, marker=marker, functional=functional)


def _build(c: _Clause, attribute: str, start: int, *, limit: int | None = None, change: str | None = None,
           marker: str = "", negative: bool = False, functional: bool | None = None) -> Statement | None:
    """The statement whose value is c.rest[start:start + limit]; None when the value is empty."""
    end = None if limit is None else start + limit
    value, caps, tail = w.strip_tail_markers(c.rest[start:end], c.caps[start:end])
    positive = c.group.positive != negative
    if change is None:
        change, marker = (c.group.change, c.group.marker) if c.group.change else (tail.change, tail.marker)
    if tail.anymore and not positive and change is None:
        change, marker, positive = END, "not ... anymore", True
    if value[:1] == ["no"]:
        positive, value, caps = not positive, value[1:], caps[1:]
    if not positive and change is not None:
        return None  # "did not move to X" states neither a change nor a value
    if attribute in {"is", "have", "own"}:
        attribute, value, caps = _named_thing(attribute, value, caps)
    slotted = attribute in lx.SLOTTED
    head, slots = (() if slotted else w.head(value, caps)), (w.slots(value) if slotted else ())
    if not head and not slots and not (attribute == "schedule" and change == END):
        return None
    if attribute == "age" and not head[0].isdigit():
        return None
    if marker == "joined" and not w.looks_like_org(value, caps):
        attribute = "joined"  # "joined a book club" is no new employer
    return Statement(
        subject=c.subject, kind=c.kind, attribute=attribute,
        functional=attribute in lx.FUNCTIONAL if functional is None else functional, value=head,
        slots=slots, atoms=frozenset(w.atoms(value, caps)), positive=positive, change=change,
        marker=marker, past=c.group.past and change is None and attribute not in {"birth", "age"},
        subject_day=c.day,
    )


def _named_thing(attribute: str, value: list[str], caps: list[bool]) -> tuple[str, list[str], list[bool]]:
    """"has a dog named Rex" -> ("dog name", "rex"); "has a cat" -> ("pet", "cat")."""
    core = [t for t in value if t not in lx.DETERMINERS]
    for k, t in enumerate(core[1:-1], start=1):
        if t in {"named", "called"} and (core[k - 1] in lx.ANIMALS or core[k - 1] in lx.FAMILY):
            at = value.index(t) + 1
            return f"{w.canonical(core[k - 1])} name", value[at:], caps[at:]
    if attribute != "is" and core and core[0] in lx.ANIMALS:
        return "pet", value, caps
    return attribute, value, caps
