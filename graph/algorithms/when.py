"""Dates named in a query, as spans of time to match grains' dates against (pure, no Django).

Understood: a day ("October 13, 2023", "13 Oct 2023", "13th of October 2023",
"2023-10-13"), a month of a year ("July 2023"), a month of any year after a
preposition ("in June", "during May": a bare "may" or "march" is a verb too),
and a year after a preposition ("in 2022"). Relative dates ("last week") are
not: what they mean depends on when the memory was written, not on the query.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
_ABBREVIATIONS = {m[:3]: i for i, m in enumerate(MONTHS, start=1)} | {"sept": 9}
_NUMBER = {m: i for i, m in enumerate(MONTHS, start=1)} | _ABBREVIATIONS
_MONTH = r"(" + "|".join(sorted(_NUMBER, key=len, reverse=True)) + r")\.?"
_FULL_MONTH = r"(" + "|".join(MONTHS) + r")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PREPOSITION = r"\b(?:in|during|since|until|through|throughout|early|late|mid|last|this|of)\s+"

_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b")
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b")
_ISO_DAY = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b")
_BARE_MONTH = re.compile(rf"{_PREPOSITION}{_FULL_MONTH}\b")
_BARE_YEAR = re.compile(rf"{_PREPOSITION}{_YEAR}\b")


@dataclass(frozen=True)
class Span:
    """[start, end) in UTC; ``month`` alone (start and end None) means that month of any year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None

    def holds(self, when: datetime) -> bool:
        when = when.astimezone(UTC)
        if self.start is None:
            return when.month == self.month
        return self.start <= when < self.end


def _day(year: int, month: int, day: int) -> Span | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:  # 31 February, month 13
        return None
    return Span(start, start + timedelta(days=1))


def _month(year: int, month: int) -> Span:
    start = datetime(year, month, 1, tzinfo=UTC)
    return Span(start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC))


def _year(year: int) -> Span:
    return Span(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


# Most precise first: a stretch of text read by one is not read again by a later one.
_READERS = (
    (_MONTH_DAY_YEAR, lambda m: _day(int(m[3]), _NUMBER[m[1]], int(m[2]))),
    (_DAY_MONTH_YEAR, lambda m: _day(int(m[3]), _NUMBER[m[2]], int(m[1]))),
    (_ISO_DAY, lambda m: _day(int(m[1]), int(m[2]), int(m[3]))),
    (_MONTH_YEAR, lambda m: _month(int(m[2]), _NUMBER[m[1]])),
    (_BARE_MONTH, lambda m: Span(month=_NUMBER[m[1]])),
    (_BARE_YEAR, lambda m: _year(int(m[1]))),
)


def date_spans(text: str) -> list[Span]:
    """The spans of time ``text`` names, most precise first; each stretch of text is read once."""
    lowered = text.lower()
    spans: list[Span | None] = []
    taken = bytearray(len(lowered))  # 1 where a reader has read the character (linear, however many dates)
    for pattern, read in _READERS:
        for m in pattern.finditer(lowered):
            if not any(taken[m.start():m.end()]):
                taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
                spans.append(read(m))
    return [s for s in spans if s is not None]
