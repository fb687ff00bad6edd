"""Content normalisation and hashing for exact-duplicate detection, and who speaks in a grain (pure)."""
from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")
# "Name: what they said" (a transcript's convention): a speaker of one or two capitalised words. Labels such as
# "Note:" are no speaker.
_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]{0,30}(?: [A-Z][\w.'-]{0,30})?):\s+(.+)$", re.S)
NOT_SPEAKERS = frozenset({"note", "update", "reminder", "fyi", "todo", "fact", "summary", "context", "edit", "ps",
                          "re", "correction", "source", "news", "important", "warning", "memo"})


def normalise(content: str) -> str:
    """Trimmed, with runs of whitespace collapsed to one space."""
    return _SPACE.sub(" ", content).strip()


def visible(text: str) -> bool:
    """Whether ``text`` shows anything: a character that is not a space, a separator, a control or a format
    character (a zero-width space, a byte-order mark)."""
    return any(unicodedata.category(c)[0] not in "CZ" for c in text)


def is_text(text: str) -> bool:
    """Whether ``text`` shows something and is all valid Unicode (no half of a surrogate pair alone, which JSON's
    "\\ud800" decodes to) without a NUL: what may be stored as a grain's content (the store's own check,
    core.validate.unicode_text, refuses the same, as the caller's error)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text and visible(text)


def split_speaker(text: str) -> tuple[str | None, str]:
    """("Caroline", "I went ...") for "Caroline: I went ..."; (None, text) when no one is named as speaking."""
    m = _SPEAKER.match(text)
    if m and m.group(1).lower() not in NOT_SPEAKERS:
        return m.group(1), m.group(2).strip()
    return None, text.strip()


def content_hash(content: str) -> str:
    """SHA-256 of the normalised, case-folded content: equal facts, equal hash."""
    return hashlib.sha256(normalise(content).casefold().encode("utf-8")).hexdigest()
