"""Learning from feedback: the graph strengthens what was useful and weakens what was not."""
from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from core import metrics
from core.bulk import bulk_set
from core.conf import flux_setting as S
from core.errors import Conflict, InvalidInput, NotFound, NotYourTrace
from core.validate import require_bool, require_id
from grains.activity import activity_record
from grains.callers import caller_acting
from grains.lifecycle import GRAIN_STATE_FIELDS, Changes
from grains.models import Caller, Grain, Status, Tier, Tombstone
from graph.algorithms.learning import penalise, reinforce
from graph.algorithms.text import learned_cues
from graph.models import Conduit, ConduitKind, Feedback, Trace, TraceItem
from graph.policy import conduit_weight_now, grain_weight_now
from graph.services.conduits import conduit_strengthen, highway_counts
from graph.services.ranker import ranker_learn
from graph.services.traces import trace_written

LEARNED_KINDS = (ConduitKind.ASSOCIATION, ConduitKind.SHORTCUT)


def feedback_accept(
    *, trace_id: int, grain_id: int, useful: bool, caller: str | Caller | None = None, now: datetime | None = None
) -> tuple[Feedback, bool]:
    """Check and record a verdict on one grain of a trace, without applying it yet.

    Returns the feedback and whether it is new. Idempotent: the same verdict
    again returns the recorded feedback; the opposite verdict on an already
    rated grain is a Conflict. Nothing is written when an error is raised.
    """
    trace_id, grain_id = require_id(trace_id, "trace_id"), require_id(grain_id, "grain_id")
    useful = require_bool(useful, "useful")
    now = now or timezone.now()
    trace_written(trace_id)  # a trace this process answered with may still be on its way to the database
    with transaction.atomic():
        trace = Trace.objects.filter(pk=trace_id).select_related("caller").only("caller", "caller__client").first()
        if trace is None:
            raise NotFound(f"trace {trace_id} does not exist (it may have expired)", details={"trace_id": trace_id})
        who = caller_acting(caller, now=now)
        if trace.caller.client != who.client:
            raise NotYourTrace(f"trace {trace_id} is another client's retrieval; rate only your own traces",
                               details={"trace_id": trace_id})
        item = TraceItem.objects.filter(trace_id=trace_id, grain_id=grain_id).first()
        if item is None and Tombstone.objects.filter(grain_id=grain_id).exists():
            raise NotFound(f"grain {grain_id} was forgotten: trace {trace_id} keeps nothing of it to rate, and "
                           "nothing is owed for it", details={"trace_id": trace_id, "grain_id": grain_id})
        if item is None:
            raise InvalidInput(
                f"grain {grain_id} was not returned by trace {trace_id}; rate only grains that trace returned",
                details={"trace_id": trace_id, "grain_id": grain_id},
            )
        existing = Feedback.objects.filter(item=item).first()
        if existing is not None:
            if existing.useful == useful:
                return existing, False
            raise Conflict(
                f"grain {grain_id} of trace {trace_id} was already rated useful={existing.useful}",
                details={"trace_id": trace_id, "grain_id": grain_id, "useful": existing.useful},
            )
        feedback = Feedback.objects.create(item=item, useful=useful, caller=who,
                                           created_at=now)
        Caller.objects.filter(pk=trace.caller_id).update(rated=F("rated") + 1)
    return feedback, True


def feedback_record(
    *, trace_id: int, grain_id: int, useful: bool, caller: str | Caller | None = None, now: datetime | None = None
) -> Feedback:
    """Record a verdict (as feedback_accept) and apply it to the graph at once."""
    now = now or timezone.now()
    feedback, new = feedback_accept(trace_id=trace_id, grain_id=grain_id, useful=useful, caller=caller, now=now)
    if new:
        with transaction.atomic():
            feedback_apply(feedback, now=now)
    return feedback


def feedback_apply_pending(*, now: datetime | None = None, batch_size: int = 100) -> int:
    """Apply every accepted but unapplied feedback, oldest first, one short transaction each batch. Safe beside
    another process doing the same: SQLite's write transactions are IMMEDIATE (the second reads after the first
    committed), PostgreSQL's rows are locked and skipped."""
    applied = 0
    while True:
        with transaction.atomic():
            pending = Feedback.objects.filter(applied_at__isnull=True)
            if connection.features.has_select_for_update_skip_locked:
                pending = pending.select_for_update(skip_locked=True, of=("self",))
            batch = list(pending.select_related("item__trace").order_by("pk")[:batch_size])
            for feedback in batch:
                feedback_apply(feedback, now=now or timezone.now())
        applied += len(batch)
        if len(batch) < batch_size:
            return applied


def feedback_apply(feedback: Feedback, *, now: datetime) -> None:
    """Adjust the grain, its path, co-useful associations and shortcuts for one feedback."""
    item = feedback.item
    grain = Grain.objects.get(pk=item.grain_id)
    _learn_grain(grain, feedback, now)
    counts = _learn_path(item.conduits, feedback.useful, now)
    counts.update({"rated": 1, "useful" if feedback.useful else "not_useful": 1})
    counts["ranker_weights_moved"] = ranker_learn(item, feedback.useful, now)
    created: list[dict] = []
    if feedback.useful:
        created += _co_useful(item, now)
        shortcut = _shortcut(item, now)
        counts["shortcuts_created"] = len(shortcut)
        created += shortcut
    metrics.count(counts, now=now)
    feedback.applied_at = now
    feedback.save(update_fields=["applied_at"])
    activity_record("graph.feedback_applied", {
        "trace_id": item.trace_id, "grain_id": grain.pk, "useful": feedback.useful,
        "weight": round(grain.weight, 4), "path": item.path, "conduits_created": created,
    }, now=now)


def _learn_grain(grain: Grain, feedback: Feedback, now: datetime) -> None:
    """Weight, counters, tier, status, confidence and learned cues of the rated grain."""
    changes = Changes(now)
    current = grain_weight_now(grain, now)
    if feedback.useful:
        # Useful again: at least as alive as a new grain, plus GRAIN_LEARNING_RATE (a boost for every query).
        grain.weight = reinforce(max(current, S("INITIAL_GRAIN_WEIGHT")), rate=S("GRAIN_LEARNING_RATE"),
                                 upper=S("WEIGHT_MAX"))
        if S("CUE_LEARNING"):
            grain.cues = learned_cues(grain.cues or "", grain.content, feedback.item.trace.query,
                                      max_terms=S("CUE_MAX_TERMS")) or None
        grain.useful_count += 1
        grain.last_accessed_at = now
        if grain.status in (Status.DORMANT, Status.ARCHIVED) and grain.superseded_by is None:
            changes.status(grain, Status.ACTIVE, "useful")
        if grain.tier != Tier.CORE and grain.useful_count >= S("PROMOTION_THRESHOLD"):
            grain.tier = Tier.CORE
            changes.activity.append(("grains.grain_promoted", {"grain_id": grain.pk, "from": "working",
                                                               "to": "core", "reason": "core tier"}))
    else:
        grain.weight = penalise(current, factor=S("NOT_USEFUL_GRAIN_FACTOR"), lower=S("WEIGHT_MIN"))
        grain.not_useful_count += 1
    changes.confidence(grain, changes.rules.after_feedback(grain.confidence, feedback.useful),
                       "useful" if feedback.useful else "not useful", caller_id=feedback.caller_id)
    grain.last_decayed_at = now
    grain.save(update_fields=["weight", "cues", "useful_count", "not_useful_count", "last_accessed_at", "tier",
                              "last_decayed_at", *GRAIN_STATE_FIELDS])
    changes.save()


def _learn_path(conduit_ids: list[int], useful: bool, now: datetime) -> dict[str, float]:
    """Strengthen or weaken the conduits of a rated grain's path; what changed, for the health counters.

    A learned conduit (association, shortcut) that not-useful feedback weakens
    to WEIGHT_MIN dissolves: it is deleted. Typed relations never dissolve.
    """
    conduits = list(Conduit.objects.filter(pk__in=[c for c in conduit_ids if c > 0]))
    counts = {"path_conduits": len(conduits), "path_weight_sum": 0.0}
    dissolved = []
    for conduit in conduits:
        stored, current = conduit.weight, conduit_weight_now(conduit, now)
        counts["path_weight_sum"] += current
        if useful:
            conduit.weight = reinforce(current, rate=S("LEARNING_RATE"), upper=S("WEIGHT_MAX"))
            conduit.useful_uses += 1
        else:
            conduit.weight = penalise(current, factor=S("DECAY_FACTOR"), lower=S("WEIGHT_MIN"))
            counts["weight_drops"] = counts.get("weight_drops", 0) + 1
            counts["weight_drop_sum"] = counts.get("weight_drop_sum", 0.0) + current - conduit.weight
            if conduit.weight <= S("WEIGHT_MIN") and conduit.kind in LEARNED_KINDS:
                dissolved.append(conduit)
        for name, n in highway_counts(stored, conduit.weight).items():
            counts[name] = counts.get(name, 0) + n
        conduit.uses += 1
        conduit.last_decayed_at = conduit.last_used_at = now
    kept = [c for c in conduits if c not in dissolved]
    bulk_set(Conduit, ["weight", "useful_uses", "uses", "last_decayed_at", "last_used_at"], kept)
    if dissolved:
        Conduit.objects.filter(pk__in=[c.pk for c in dissolved]).delete()
        counts["conduits_dissolved"] = len(dissolved)
        activity_record("graph.conduits_dissolved", {"conduit_ids": [c.pk for c in dissolved]}, now=now)
    return counts


def _co_useful(item: TraceItem, now: datetime) -> list[dict]:
    """Associate this grain with the other grains already rated useful in the same trace."""
    others = Feedback.objects.filter(item__trace_id=item.trace_id, useful=True, applied_at__isnull=False).exclude(
        item=item)
    made = []
    for other_grain in others.values_list("item__grain_id", flat=True):
        conduit, created = conduit_strengthen(item.grain_id, other_grain, kind=ConduitKind.ASSOCIATION,
                                              initial=S("CO_USEFUL_WEIGHT"), now=now)
        if created:
            made.append({"conduit_id": conduit.pk, "kind": conduit.kind})
    return made


def _shortcut(item: TraceItem, now: datetime) -> list[dict]:
    """A grain found useful over 2+ hops from the same entry grain earns a direct conduit."""
    if item.hops < 2 or item.origin_id == item.grain_id:
        return []
    earned = Feedback.objects.filter(
        useful=True, item__grain_id=item.grain_id, item__origin_id=item.origin_id, item__hops__gte=2
    ).count()
    if earned < S("SHORTCUT_THRESHOLD") or not Grain.objects.filter(pk=item.origin_id).exists():
        return []
    conduit, created = conduit_strengthen(item.origin_id, item.grain_id, kind=ConduitKind.SHORTCUT,
                                          initial=S("SHORTCUT_WEIGHT"), now=now)
    return [{"conduit_id": conduit.pk, "kind": conduit.kind}] if created else []
