"""Weight updates from feedback (pure, no Django)."""
from __future__ import annotations


def reinforce(weight: float, *, rate: float, upper: float) -> float:
    """Useful: add ``rate``, capped at ``upper``."""
    return min(upper, weight + rate)


def penalise(weight: float, *, factor: float, lower: float) -> float:
    """Not useful: multiply by ``factor``, floored at ``lower``."""
    return max(lower, weight * factor)


def clamp(value: float, lower: float, upper: float) -> float:
    return max(lower, min(upper, value))
