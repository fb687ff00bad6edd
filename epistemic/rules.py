"""Typed relations between a new grain and an older one: supports, contradicts, supersedes, caused_by.

Pure heuristics, no Django: called on each (new, near neighbour) pair at store time. A false
contradiction or supersession demotes or quarantines a true memory, so a relation needs the
same resolved subject and the same attribute before values are compared at all, and anything
unclear is no relation.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import lexicon as lx
from .causes import caused_by
from .lexicon import DEPARTED, END, START
from .statements import Statement, read
from .words import CONTACT

EXTENDS_DEPARTED = {"residence", "employer", "school", "partner"}  # what "left X" can end
WHEN = {"w", "r", "d", "y", "m"}  # atom kinds that say when


@dataclass(frozen=True)
class Relation:
    """A typed conduit: `source` ("new" or "old") is the grain it starts from.

    supersedes starts from the newer statement, caused_by from the effect; supports and
    contradicts are symmetric and start from "new". `reason` is one short human-readable line.
    """

    kind: str
    source: str
    reason: str


def relation_between(new: str, old: str, *, new_time: float | None = None,
                     old_time: float | None = None) -> Relation | None:
    """`new` was stored after `old`. Times (epoch seconds of when each fact was said/occurred) are optional;
    when both are given, the one with the later time is the newer statement for supersession."""
    for effect, cause, source in ((new, old, "new"), (old, new, "old")):
        reason = caused_by(effect, cause)
        if reason:
            return Relation("caused_by", source, reason)
    a = read(new)
    b = read(old) if a is not None else None  # the old grain is read only when the new one says something
    if a is None or b is None:
        return None
    newer = "old" if new_time is not None and old_time is not None and old_time > new_time else "new"
    return compare(a, b, newer)


def compare(new: Statement, old: Statement, newer: str = "new") -> Relation | None:
    """The relation between two statements, or None unless subject and attribute agree.

    Invariant: contradicts and supersedes need an exact subject match and a present-tense or
    marked statement on both sides; a partial subject match ("launch" / "product launch") can
    only corroborate.
    """
    match, attribute = _same_subject(new, old), _shared_attribute(new, old)
    value = _values(new, old, attribute) if match and attribute else None
    if value is None:
        return None
    states = {_state(new), _state(old)}
    about = f"same subject '{new.who}', attribute '{attribute}'"
    if value == "same" and (len(states) == 1 or states in ({"pos", START}, {"neg", END})):
        if _atoms_conflict(_detail(new), _detail(old)):
            return None
        return Relation("supports", "new", f"{about}: same value ({new.shown})")
    if match != "exact" or "past" in states:
        return None
    if value == "same" and states == {"pos", "neg"}:
        denied = new if not new.positive else old
        return Relation("contradicts", "new", f"{about}: one statement denies the other ('{denied.shown}' negated)")
    if value == "same":
        return _supersedes(new, old, newer, about)
    if not (new.functional and old.functional or value == "count") or states & {END, "neg"}:
        return None  # two values can both hold, or one side only says what no longer holds
    if START in states:
        return _supersedes(new, old, newer, about)
    if _context_differs(new, old):
        return None  # "3 meetings tomorrow" does not deny "2 meetings today"
    return Relation("contradicts", "new", f"{about}: different values ({_shown(old)} vs {_shown(new)})")


def _supersedes(new: Statement, old: Statement, newer: str, about: str) -> Relation:
    later, earlier = (new, old) if newer == "new" else (old, new)
    marked = later if later.change else earlier
    marker = marked.marker or marked.change
    return Relation("supersedes", newer, f"{about}: '{marker}' marks a change ({_shown(earlier)} -> {_shown(later)})")


def _shown(s: Statement) -> str:
    text = " ".join(v for _, v in s.slots) if s.slots else s.shown
    return f"no longer {text}" if s.change == END else text


def _state(s: Statement) -> str:
    if s.change:
        return s.change
    if s.past:
        return "past"
    return "pos" if s.positive else "neg"


def _same_subject(a: Statement, b: Statement) -> str | None:
    """"exact", "partial" (one noun phrase ends the other: "launch" / "product launch") or None."""
    if a.subject_day and b.subject_day and a.subject_day != b.subject_day:
        return None
    if a.subject == b.subject and (a.kind == b.kind or {a.kind, b.kind} == {lx.AGENT, lx.THING}):
        return "exact"  # "User lives in Denver" / "The user lives in Denver"
    if a.kind != b.kind:
        return None
    short, long = sorted((a.subject, b.subject), key=len)
    return "partial" if a.kind != lx.AGENT and long[-len(short):] == short else None


def _shared_attribute(a: Statement, b: Statement) -> str | None:
    if a.attribute == b.attribute:
        return a.attribute
    for one, other in ((a, b), (b, a)):
        if one.attribute == DEPARTED and other.attribute in EXTENDS_DEPARTED:
            return other.attribute
    return None


def _values(a: Statement, b: Statement, attribute: str) -> str | None:
    """"same", "different", "count" (a number of the same thing), or None: not comparable."""
    if attribute in lx.SLOTTED:
        return _slot_values(a, b)
    x, y = set(a.value), set(b.value)
    if not x or not y or _value_kind(x) != _value_kind(y):
        return None
    if bool(x & lx.COUNTRIES) != bool(y & lx.COUNTRIES):
        return None  # "Paris" and "France": different granularity, not different places
    if x <= y or y <= x or "".join(a.value) == "".join(b.value) or _acronym(a.value, b.value):
        return "same"
    counted = {t for t in x if t.isdigit()}, {t for t in y if t.isdigit()}
    if all(counted) and x - counted[0] == y - counted[1]:
        return "count"  # "three children" / "two children"
    return "different"


def _acronym(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
    """"NYC" / "New York City", "LA" / "Los Angeles"."""
    short, long = sorted((x, y), key=len)
    if len(short) != 1 or len(long) < 2:
        return False
    initials = "".join(t[0] for t in long)
    return initials.startswith(short[0]) or short[0].startswith(initials)


def _value_kind(words: set[str]) -> str:
    if any("@" in t or CONTACT.fullmatch(t) for t in words):
        return "contact"
    if all(t.isdigit() for t in words):
        return "number"
    if words & lx.STREET_WORDS and any(t[:1].isdigit() for t in words):
        return "street"
    return "text"


def _slot_values(a: Statement, b: Statement) -> str | None:
    if END in (a.change, b.change) and (not a.slots or not b.slots):
        return "same"  # "was cancelled" ends the event whatever its time
    if _names_other_day(a, b) or _names_other_day(b, a):
        return None
    x, y = _own_slots(a), _own_slots(b)
    if ("relative" in x) != ("relative" in y) and (x.keys() | y.keys()) & {"day", "weekday"}:
        return None  # "tomorrow" against "Friday" depends on when each was said
    shared = x.keys() & y.keys()
    if not shared:
        return None
    if all(x[k] == y[k] or _place_detail(k, x[k], y[k]) for k in shared):
        return "same"
    if (x.keys() ^ y.keys()) & {"weekday", "relative"}:
        return None  # "9am" against "10am on Sundays": maybe both
    return "different"


def _names_other_day(s: Statement, other: Statement) -> bool:
    """"Friday's meeting" and a meeting on Monday are two meetings."""
    return bool(s.subject_day) and dict(other.slots).get("weekday", s.subject_day) != s.subject_day \
        and not other.subject_day


def _own_slots(s: Statement) -> dict[str, str]:
    slots = dict(s.slots)
    if s.subject_day:
        slots.setdefault("weekday", s.subject_day)
    return slots


def _place_detail(slot: str, x: str, y: str) -> bool:
    one, two = set(x.split()), set(y.split())
    return slot == "place" and (one <= two or two <= one)


def _context_differs(a: Statement, b: Statement) -> bool:
    """Beyond its value, either says when (a weekday, a date, "tomorrow") and the other does not agree."""
    if a.slots or b.slots:
        return False
    return {t for t in a.atoms if t[0] in WHEN} != {t for t in b.atoms if t[0] in WHEN}


def _detail(s: Statement) -> frozenset[str]:
    """Atoms beyond the value itself, which the value comparison has already judged."""
    return s.atoms - {f"N:{t}" for t in s.value}


def _atoms_conflict(a: frozenset[str], b: frozenset[str]) -> bool:
    """Corroboration needs no clashing numbers, dates or names: both have some of a kind and none agree."""
    for kind in {t[0] for t in a} & {t[0] for t in b}:
        if not {t for t in a if t[0] == kind} & {t for t in b if t[0] == kind}:
            return True
    return False
