"""How much a grain is believed (pure, no Django).

Confidence starts at a prior that depends on provenance, moves with evidence
(corroboration, support, useful feedback up; contradiction, not-useful
feedback down) and, left alone, drifts with age toward a neutral value: an
old unchecked statement is less certain than a fresh one, but age never makes
a doubted statement more believable. Every result stays in [0, ``upper``].
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfidenceRules:
    upper: float = 0.99
    corroboration: float = 0.05
    contradiction: float = 0.1
    useful: float = 0.02
    not_useful: float = 0.01
    neutral: float = 0.5
    half_life_seconds: float = 180 * 86400.0
    floor: float = 0.2

    def raised(self, confidence: float, by: float) -> float:
        """``confidence`` moved up by ``by`` (a step toward ``upper``, never past it)."""
        return min(self.upper, max(0.0, confidence + by))

    def lowered(self, confidence: float, by: float) -> float:
        return max(0.0, min(self.upper, confidence - by))

    def after_feedback(self, confidence: float, useful: bool) -> float:
        return self.raised(confidence, self.useful) if useful else self.lowered(confidence, self.not_useful)

    def aged(self, confidence: float, elapsed_seconds: float) -> float:
        """Drift toward ``neutral`` from above, halving the distance every half-life (memoryless)."""
        if confidence <= self.neutral or elapsed_seconds <= 0:
            return confidence
        if self.half_life_seconds <= 0:
            return self.neutral
        return self.neutral + (confidence - self.neutral) * 0.5 ** (elapsed_seconds / self.half_life_seconds)

    def below_floor(self, confidence: float) -> bool:
        """A grain believed less than this is quarantined."""
        return confidence < self.floor


def contradiction_loser(a: tuple[int, float], b: tuple[int, float], *, margin: float) -> int | None:
    """Of two contradicting grains ``(id, confidence)``, the one to quarantine, or None.

    The less believed one loses only when the other is believed clearly more
    (by at least ``margin``); close calls keep both, flagged.
    """
    (a_id, a_conf), (b_id, b_conf) = a, b
    if abs(a_conf - b_conf) < margin:
        return None
    return a_id if a_conf < b_conf else b_id
