"""Content normalisation and hashing for exact-duplicate detection (pure)."""
from __future__ import annotations

import hashlib
import re

_SPACE = re.compile(r"\s+")


def normalise(content: str) -> str:
    """Trimmed, with runs of whitespace collapsed to one space."""
    return _SPACE.sub(" ", content).strip()


def content_hash(content: str) -> str:
    """SHA-256 of the normalised, case-folded content: equal facts, equal hash."""
    return hashlib.sha256(normalise(content).casefold().encode("utf-8")).hexdigest()
