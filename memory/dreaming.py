"""The dream cycle as one act: dense clumps consolidated into level-1 grains, each gated against
hallucination, one run at a time across the instance's processes.

Walk: the candidates (dreams, read from graph's clusters), an abstraction of each (the LLM or an extractive
summary, outside any transaction), the gate (dreams, pure); then per clump one write: the abstraction stored
as a grain (memory.store), made level 1 (grains), linked to its sources by ``abstracts`` conduits (graph), and
the dream recorded (dreams).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from functools import partial

from django.db import transaction
from django.utils import timezone

from core.booth import inline
from core.conf import flux_setting as S
from core.errors import DreamRunning, LLMBadAnswer, LLMUnavailable
from dreams.abstraction import BadAbstraction, extractive
from dreams.candidates import Clump
from dreams.gate import GateResult, gate
from dreams.models import Dream, DreamStatus
from dreams.services import DREAMER, Abstracter, DreamRunResult, dream_candidates, dream_record, llm_abstraction
from grains.activity import activity_record
from grains.locks import lock_release, lock_take
from grains.models import Provenance
from grains.services import grain_consolidate
from graph.models import ConduitKind
from graph.services.clustering import cluster_rebuild_if_grown
from graph.services.conduits import conduit_relate
from memory.store import grain_store

LOCK, LOCK_SECONDS = "dream_run", 3600.0


def dream_run(*, now: datetime | None = None, abstract: Abstracter | None = None,
              run_write: Callable | None = None) -> DreamRunResult:
    """Consolidate up to DREAM_PER_CYCLE of the best clumps not dreamt of in their present form.

    Each clump gets an abstraction (``abstract``; default the LLM when
    DREAM_LLM is on, else an extractive summary), asked outside any
    transaction; the gate then accepts it only if every sentence is grounded in
    the sources. Accepted: a level-1 ``consolidated`` grain linked to its
    sources by ``abstracts`` conduits, its confidence the sources' mean.
    Rejected: kept with the reason and the failing sentence. Either way the
    clump's signature is recorded, so an unchanged clump is never dreamt of
    again. Grains stored since the last clustering are clustered first, so a
    young memory has candidates. When the LLM cannot be reached the cycle stops
    and records nothing for the rest. Writes go through ``run_write`` when given (the booth's writer).
    One run at a time across the instance's processes: a second concurrent run
    is a Conflict (``dream_running``) naming when the first started.
    """
    now = now or timezone.now()
    write = run_write or inline
    lock, taken = write(lambda: lock_take(LOCK, seconds=LOCK_SECONDS))
    if not taken:
        raise DreamRunning(f"a dream run is already running (started {lock.acquired_at:%Y-%m-%d %H:%M:%S} UTC); "
                           "wait for it to end, then run again", details={"started_at": lock.acquired_at.isoformat()})
    try:
        cluster_rebuild_if_grown(grains=1, fraction=0.0, now=now, write=write)  # candidates come from clusters
        result = _dream_all(dream_candidates(now=now), abstract or (llm_abstraction if S("DREAM_LLM") else None),
                            write, now)
        write(lambda: activity_record("dreams.cycle_completed", asdict(result), now=now))
        return result
    finally:
        write(lambda: lock_release(lock))


def _dream_all(clumps: list[Clump], use: Abstracter | None, write: Callable, now: datetime) -> DreamRunResult:
    result = DreamRunResult(candidates=len(clumps))
    for clump in clumps:
        texts = [m.content for m in clump.sources]
        limit = S("MAX_CONTENT_CHARS")  # what a grain holds: a longer abstraction ended the whole cycle
        try:
            text = use(texts) if use else extractive(texts, statements=S("DREAM_SUMMARY_STATEMENTS"), max_chars=limit)
            if not text.strip() or len(text) > limit:
                raise BadAbstraction(f"it has {len(text)} characters; a grain holds 1 to {limit} (MAX_CONTENT_CHARS)")
        except LLMUnavailable as exc:
            return DreamRunResult(result.candidates, result.accepted, result.rejected, exc.message)
        except (LLMBadAnswer, BadAbstraction) as exc:
            bad = GateResult(False, f"bad answer: {exc}")
            dream = write(partial(dream_record, clump, text="", method="llm" if use else "extractive", verdict=bad,
                                  now=now))
            result.rejected.append(dream.pk)
            continue
        verdict = gate(text, texts, min_support=S("DREAM_GATE_MIN_SUPPORT"))
        dream = write(partial(_dream, clump, text, "llm" if use else "extractive", verdict, now))
        (result.accepted if dream.status == DreamStatus.ACCEPTED else result.rejected).append(dream.pk)
    return result


def _dream(clump: Clump, text: str, method: str, verdict: GateResult, now: datetime) -> Dream:
    """The dream and, when accepted, its level-1 grain and abstracts conduits, in one transaction."""
    with transaction.atomic():
        if not verdict.accepted:
            return dream_record(clump, text=text, method=method, verdict=verdict, now=now)
        stored = grain_store(content=text, provenance=Provenance.CONSOLIDATED, caller=DREAMER, now=now)
        if not stored.created:
            return dream_record(clump, text=text, method=method, verdict=verdict, now=now,
                                reason=f"the abstraction repeats grain #{stored.grain.pk}")
        sources = grain_consolidate(stored.grain, [m.grain_id for m in clump.sources], now=now)
        for source_id in sources:
            conduit_relate(stored.grain.pk, source_id, kind=ConduitKind.ABSTRACTS, asserted_by="dream",
                           note=f"dream {clump.signature[:12]}", now=now, weight=S("DREAM_CONDUIT_WEIGHT"))
        return dream_record(clump, text=text, method=method, verdict=verdict, now=now, grain_id=stored.grain.pk)
