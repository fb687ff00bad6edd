"""The dream cycle's own work: which clumps are worth a dream, an abstraction of one, and the record of each
dream (accepted with its level-1 grain, or rejected with the reason). The run as a whole is memory.dreaming."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from core.conf import flux_setting as S
from core.llm import ollama_generate_json
from dreams.abstraction import abstraction_prompt, parse_abstraction
from dreams.candidates import Clump, ClumpRules, select_clumps
from dreams.gate import GateResult
from dreams.models import Dream, DreamStatus
from dreams.selectors import cluster_views
from grains.activity import activity_record

DREAMER = "flux-dreams:system"
Abstracter = Callable[[list[str]], str]


def llm_abstraction(sources: list[str]) -> str:
    """The configured LLM's abstraction of ``sources`` (LLMUnavailable / LLMBadAnswer / BadAbstraction)."""
    return parse_abstraction(ollama_generate_json(abstraction_prompt(sources)), max_chars=S("MAX_CONTENT_CHARS"))


@dataclass(frozen=True)
class DreamRunResult:
    candidates: int
    accepted: list[int] = field(default_factory=list)   # dream ids
    rejected: list[int] = field(default_factory=list)
    error: str = ""


def clump_rules() -> ClumpRules:
    return ClumpRules(min_sources=S("DREAM_MIN_SOURCES"), max_sources=S("DREAM_MAX_SOURCES"),
                      min_internal_weight=S("DREAM_MIN_INTERNAL_WEIGHT"),
                      recent_seconds=S("DREAM_RECENT_DAYS") * 86400.0, per_cycle=S("DREAM_PER_CYCLE"))


def dream_candidates(*, now: datetime) -> list[Clump]:
    """Up to DREAM_PER_CYCLE of the best clumps not dreamt of in their present form."""
    rules = clump_rules()
    done = set(Dream.objects.values_list("signature", flat=True))
    views = cluster_views(limit=rules.per_cycle * 4, min_size=rules.min_sources, now=now)
    return select_clumps(views, rules, done=done, now=now.timestamp())


def dream_record(clump: Clump, *, text: str, method: str, verdict: GateResult, now: datetime,
                 grain_id: int | None = None, reason: str | None = None) -> Dream:
    """The dream of ``clump``, accepted when it has its level-1 grain, and its activity event; an unchanged
    clump is never dreamt of again (its signature is kept either way)."""
    dream = Dream.objects.create(
        cluster_id=clump.cluster_id, signature=clump.signature, sources=[m.grain_id for m in clump.sources],
        text=text, method=method, score=clump.score, created_at=now, grain_id=grain_id,
        status=DreamStatus.ACCEPTED if grain_id else DreamStatus.REJECTED,
        reason=(verdict.reason if reason is None else reason)[:300], failing_sentence=verdict.failing_sentence)
    kind = "dreams.dream_accepted" if dream.status == DreamStatus.ACCEPTED else "dreams.dream_rejected"
    activity_record(kind, {"dream_id": dream.pk, "cluster_id": clump.cluster_id, "sources": dream.sources,
                           "grain_id": dream.grain_id, "method": method, "reason": dream.reason}, now=now)
    return dream
