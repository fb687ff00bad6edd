"""Acts of judgement on the memory: a relation a caller asserts (supports, contradicts, supersedes,
caused_by: epistemic.services, applied once), and an operator's corrections by hand (quarantine or activate a
grain, override its confidence, block or unblock a client: grains.corrections, each audited)."""
from __future__ import annotations

from epistemic.services import relation_assert
from grains.corrections import caller_block_set, grain_confidence_set, grain_status_set

__all__ = ["caller_block_set", "grain_confidence_set", "grain_status_set", "relation_assert"]
