"""The epistemic layer: typed relations between grains, and what they do to what is believed.

``supports`` raises both grains' confidence; ``contradicts`` lowers both and
may quarantine the clearly less believed one; ``supersedes`` demotes the old
grain and points it at its successor; ``caused_by`` only links. A relation is
applied once: finding it again (a rerun, a second detector) changes nothing.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.conf import flux_setting as S
from core.errors import Conflict, InvalidInput, NotFound
from core.validate import require_id, unicode_text
from epistemic.rules import Relation, relation_between
from grains.activity import activity_record
from grains.callers import caller_acting
from grains.confidence import contradiction_loser
from grains.lifecycle import GRAIN_STATE_FIELDS, Changes
from grains.models import Caller, Grain, Status
from grains.selectors import superseded_through
from graph.models import RELATION_KINDS, Conduit, ConduitKind
from graph.selectors import causes_of, grain_texts_at
from graph.services.conduits import conduit_relate


def relation_apply(source: Grain, target: Grain, *, kind: str, asserted_by: str, note: str, now: datetime,
                   caller: Caller | None = None) -> tuple[Conduit, bool]:
    """Record ``source -kind-> target`` and its effect on both grains, once.

    Runs inside the caller's transaction. Returns the conduit and whether it is new.
    """
    if kind == ConduitKind.SUPERSEDES and target.pk in superseded_through(source):
        raise Conflict(f"grain {target.pk} already supersedes grain {source.pk}, directly or through its successors; "
                       "a grain cannot supersede its successor (the chain would loop)",
                       details={"source_id": source.pk, "target_id": target.pk})
    if kind == ConduitKind.CAUSED_BY and source.pk in causes_of(target.pk):
        raise Conflict(f"grain {source.pk} already causes grain {target.pk}, directly or through other causes; a "
                       "grain cannot be caused by its own effect (the causes would loop)",
                       details={"source_id": source.pk, "target_id": target.pk})
    conduit, created = conduit_relate(source.pk, target.pk, kind=kind, asserted_by=asserted_by, note=note, now=now)
    if not created:
        return conduit, False
    changes = Changes(now)
    rules = changes.rules
    if kind in (ConduitKind.SUPPORTS, ConduitKind.CONTRADICTS):
        supported = kind == ConduitKind.SUPPORTS
        for grain, other in ((source, target), (target, source)):
            value = (rules.raised(grain.confidence, rules.corroboration) if supported
                     else rules.lowered(grain.confidence, rules.contradiction))
            changes.confidence(grain, value, "supported" if supported else "contradicted",
                               caller_id=caller.pk if caller else None, related=other.pk)
    if kind == ConduitKind.CONTRADICTS:
        loser = contradiction_loser((source.pk, source.confidence), (target.pk, target.confidence),
                                    margin=S("CONTRADICTION_QUARANTINE_MARGIN"))
        if loser is not None:
            lost, won = (source, target) if loser == source.pk else (target, source)
            if lost.status in (Status.ACTIVE, Status.DORMANT):
                changes.status(lost, Status.QUARANTINED, f"lost a contradiction with #{won.pk}")
    elif kind == ConduitKind.SUPERSEDES:
        target.superseded_by = source.pk
        if target.status == Status.ACTIVE:
            changes.status(target, Status.DORMANT, f"superseded by #{source.pk}")
    for grain in (source, target):
        grain.save(update_fields=[*GRAIN_STATE_FIELDS, "superseded_by"])
    changes.save()
    # The note (which quotes the grains' values) stays on the relation alone: a purge deletes it with the grain,
    # where a copy in the activity log would outlive it.
    activity_record("epistemic.relation_found", {
        "conduit_id": conduit.pk, "kind": kind, "source_id": conduit.source_id, "target_id": conduit.target_id,
        "asserted_by": asserted_by}, now=now)
    return conduit, True


def when(grain: Grain) -> float:
    return grain.happened_at.timestamp()


def apply_found(new: Grain, old: Grain, relation: Relation, *, asserted_by: str, now: datetime) -> Conduit | None:
    source, target = (new, old) if relation.source == "new" else (old, new)
    try:
        conduit, created = relation_apply(source, target, kind=relation.kind, asserted_by=asserted_by,
                                          note=relation.reason, now=now)
    except Conflict:
        return None  # a detector's opinion never overrides an existing supersession the other way
    return conduit if created else None


def near_pairs(grains: Iterable[Grain], near: dict[int, list[tuple[int, float]]]) -> list[tuple[int, int]]:
    """(older id, newer id) pairs of each grain with its EPISTEMIC_CANDIDATES nearest, each pair once."""
    count = S("EPISTEMIC_CANDIDATES")
    pairs = {tuple(sorted((g.pk, other))) for g in grains for other, _ in near.get(g.pk, [])[:count]}
    return sorted(pairs)  # type: ignore[arg-type]


Found = tuple[int, int, Relation]  # (new grain id, old grain id, relation)


def relations_find(grains: list[Grain], near: dict[int, list[tuple[int, float]]]) -> list[Found]:
    """Compare new grains with their nearest grains by the rules: what relations hold, nothing written.

    ``near`` is ``lexical_neighbours`` of the grains. The older grain of a pair
    is the one stored first. Reads the texts of the pairs in one query, then
    runs the rules (~0.1 ms a pair, linear in the texts' length) for
    EPISTEMIC_CANDIDATES pairs per grain: call it outside any write
    transaction, so the writer never waits on text work. Empty unless
    EPISTEMIC_ENABLED.
    """
    if not S("EPISTEMIC_ENABLED") or not grains:
        return []
    pairs = near_pairs(grains, near)
    texts = {g.pk: (g.content, when(g)) for g in grains}
    texts.update(grain_texts_at({gid for pair in pairs for gid in pair if gid not in texts}))
    found = []
    for old_id, new_id in pairs:
        if old_id not in texts or new_id not in texts:
            continue
        (old_text, old_time), (new_text, new_time) = texts[old_id], texts[new_id]
        relation = relation_between(new_text, old_text, new_time=new_time, old_time=old_time)
        if relation is not None:
            found.append((new_id, old_id, relation))
    return found


def relations_record(found: list[Found], *, now: datetime) -> list[Conduit]:
    """Apply what ``relations_find`` found, in one short transaction; pairs whose grains are gone since are
    skipped, and a relation already recorded changes nothing."""
    if not found:
        return []
    conduits = []
    with transaction.atomic():
        rows = Grain.objects.in_bulk({gid for new_id, old_id, _ in found for gid in (new_id, old_id)})
        for new_id, old_id, relation in found:
            if new_id in rows and old_id in rows:
                conduit = apply_found(rows[new_id], rows[old_id], relation, asserted_by="rules", now=now)
                if conduit is not None:
                    conduits.append(conduit)
    return conduits


def relation_assert(*, source_id: int, target_id: int, kind: str, note: str = "",
                    caller: str | Caller | None = None, now: datetime | None = None) -> tuple[Conduit, bool]:
    """A caller states a relation between two grains ("12 supersedes 7", "9 caused_by 4").

    Same effects as a detected relation. Unknown grains are NotFound, a bad
    kind or a grain related to itself InvalidInput, a blocked client
    CallerBlocked; nothing is written then.
    """
    if kind not in RELATION_KINDS:
        raise InvalidInput(f"'kind' {kind!r} is not one of {', '.join(RELATION_KINDS)}", details={"field": "kind"})
    source_id, target_id = require_id(source_id, "source_id"), require_id(target_id, "target_id")
    if source_id == target_id:
        raise InvalidInput("a grain cannot be related to itself; give two different grain ids",
                           details={"field": "target_id"})
    if not isinstance(note, str) or len(note) > 200:
        raise InvalidInput("'note' must be a string of at most 200 characters", details={"field": "note"})
    unicode_text(note, "note")
    now = now or timezone.now()
    with transaction.atomic():
        grains = Grain.objects.in_bulk([source_id, target_id])
        for field, gid in (("source_id", source_id), ("target_id", target_id)):
            if gid not in grains:
                raise NotFound(f"grain {gid} does not exist", details={"field": field, "grain_id": gid})
        who = caller_acting(caller, now=now)
        return relation_apply(grains[source_id], grains[target_id], kind=kind, asserted_by="caller",
                              note=note.strip() or f"asserted by {who}", now=now, caller=who)
