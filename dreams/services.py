"""The dream cycle: dense clumps consolidated into level-1 grains, each one gated against hallucination."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TypeVar

from django.db import transaction
from django.utils import timezone

from dreams.abstraction import BadAbstraction, abstraction_prompt, extractive, parse_abstraction
from dreams.candidates import Clump, ClumpRules, select_clumps
from dreams.gate import GateResult, gate
from dreams.models import Dream, DreamStatus
from dreams.selectors import cluster_views
from fluxsite.conf import flux_setting as S
from graph.models import ConduitKind
from graph.services.conduits import conduit_relate
from grains.activity import activity_record
from grains.errors import Conflict, LLMBadAnswer, LLMUnavailable
from grains.lifecycle import Changes
from grains.llm import ollama_generate_json
from grains.locks import lock_release, lock_take
from grains.models import Grain, Provenance
from grains.services import grain_store

T = TypeVar("T")
DREAMER = "flux-dreams:system"
LOCK, LOCK_SECONDS = "dream_run", 3600.0
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


def dream_run(*, now: datetime | None = None, abstract: Abstracter | None = None,
              run_write: Callable[[Callable[[], T]], T] | None = None) -> DreamRunResult:
    """Consolidate up to DREAM_PER_CYCLE of the best clumps not dreamt of in their present form.

    Each clump gets an abstraction (``abstract``; default the LLM when
    DREAM_LLM is on, else an extractive summary), asked outside any
    transaction; the gate then accepts it only if every sentence is grounded in
    the sources. Accepted: a level-1 ``consolidated`` grain linked to its
    sources by ``abstracts`` conduits, its confidence the sources' mean.
    Rejected: kept with the reason and the failing sentence. Either way the
    clump's signature is recorded, so an unchanged clump is never dreamt of
    again. When the LLM cannot be reached the cycle stops and records nothing
    for the rest. Writes go through ``run_write`` when given (the booth's writer).
    One run at a time across the instance's processes: a second concurrent run
    is a Conflict (``dream_running``) naming when the first started.
    """
    now = now or timezone.now()
    write = run_write or (lambda fn: fn())
    lock, taken = write(lambda: lock_take(LOCK, seconds=LOCK_SECONDS))
    if not taken:
        raise Conflict(f"a dream run is already running (started {lock.acquired_at:%Y-%m-%d %H:%M:%S} UTC); "
                       "wait for it to end, then run again", code="dream_running",
                       details={"started_at": lock.acquired_at.isoformat()})
    try:
        return _dream_run(now, abstract, write)
    finally:
        write(lambda: lock_release(lock))


def _dream_run(now: datetime, abstract: Abstracter | None, write: Callable) -> DreamRunResult:
    rules = clump_rules()
    done = set(Dream.objects.values_list("signature", flat=True))
    views = cluster_views(limit=rules.per_cycle * 4, min_size=rules.min_sources, now=now)
    clumps = select_clumps(views, rules, done=done, now=now.timestamp())
    use = abstract or (llm_abstraction if S("DREAM_LLM") else None)
    result = _consolidate_all(clumps, use, write, now)
    write(lambda: activity_record("dreams.cycle_completed", asdict(result), now=now))
    return result


def _consolidate_all(clumps: list[Clump], use: Abstracter | None, write: Callable, now: datetime) -> DreamRunResult:
    result = DreamRunResult(candidates=len(clumps))
    for clump in clumps:
        texts = [m.content for m in clump.sources]
        try:
            text = use(texts) if use else extractive(texts, statements=S("DREAM_SUMMARY_STATEMENTS"))
        except LLMUnavailable as exc:
            return DreamRunResult(result.candidates, result.accepted, result.rejected, exc.message)
        except (LLMBadAnswer, BadAbstraction) as exc:
            bad = GateResult(False, f"bad answer: {exc}")
            dream = write(lambda: _record(clump, "", "llm", bad, now))
            result.rejected.append(dream.pk)
            continue
        verdict = gate(text, texts, min_support=S("DREAM_GATE_MIN_SUPPORT"))
        dream = write(lambda: _record(clump, text, "llm" if use else "extractive", verdict, now))
        (result.accepted if dream.status == DreamStatus.ACCEPTED else result.rejected).append(dream.pk)
    return result


def _record(clump: Clump, text: str, method: str, verdict: GateResult, now: datetime) -> Dream:
    """Store the dream and, when accepted, its level-1 grain and abstracts conduits, in one transaction."""
    with transaction.atomic():
        dream = Dream(cluster_id=clump.cluster_id, signature=clump.signature, sources=[m.grain_id for m in clump.sources],
                      text=text, method=method, score=clump.score, created_at=now, status=DreamStatus.REJECTED,
                      reason=verdict.reason[:300], failing_sentence=verdict.failing_sentence)
        if verdict.accepted:
            _consolidate(dream, now)
        dream.save()
        kind = "dreams.dream_accepted" if dream.status == DreamStatus.ACCEPTED else "dreams.dream_rejected"
        activity_record(kind, {
            "dream_id": dream.pk, "cluster_id": clump.cluster_id, "sources": dream.sources, "grain_id": dream.grain_id,
            "method": method, "reason": dream.reason}, now=now)
    return dream


def _consolidate(dream: Dream, now: datetime) -> None:
    stored = grain_store(content=dream.text, provenance=Provenance.CONSOLIDATED, caller=DREAMER, now=now)
    if not stored.created:
        dream.reason = f"the abstraction repeats grain #{stored.grain.pk}"
        return
    grain = stored.grain
    sources = list(Grain.objects.filter(pk__in=dream.sources).values_list("pk", "confidence"))
    changes = Changes(now)
    changes.confidence(grain, sum(c for _, c in sources) / len(sources), f"derived from {len(sources)} sources")
    grain.level = 1
    grain.save(update_fields=["level", "confidence", "confidence_at", "status", "status_changed_at"])
    changes.save()
    for source_id, _ in sources:
        conduit_relate(grain.pk, source_id, kind=ConduitKind.ABSTRACTS, asserted_by="dream",
                       note=f"dream {dream.signature[:12]}", now=now, weight=S("DREAM_CONDUIT_WEIGHT"))
    dream.status, dream.grain = DreamStatus.ACCEPTED, grain
