"""Creating grains: checking what a caller stores, creating new grains, corroborating known ones. The only
code that creates grains; the store as a whole (embedding, linking, relations) is memory.store."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.db import connection

from core.bulk import bulk_fetch, bulk_insert, marks
from core.conf import flux_setting as S
from core.errors import InvalidInput, Tombstoned
from core.validate import iso_datetime, unicode_text
from grains.activity import activity_record
from grains.audit import audit_record
from grains.content import content_hash, normalise, visible
from grains.lifecycle import GRAIN_STATE_FIELDS, Changes
from grains.models import Caller, ConfidenceEvent, Grain, Provenance, Source, Status, Tombstone

T = TypeVar("T")
PROVENANCES = [p.value for p in Provenance]
_FIELDS = {"content", "provenance", "context", "occurred_at", "restore"}


@dataclass(frozen=True)
class StoreItem:
    content: str
    provenance: str
    context: str
    occurred_at: datetime | None
    restore: bool
    content_hash: str


@dataclass(frozen=True)
class StoreResult:
    grain: Grain
    created: bool
    restored: bool = False


def _bad(message: str, field: str, index: int | None) -> InvalidInput:
    details: dict = {"field": field}
    where = ""
    if index is not None:
        details["index"] = index
        where = f"item {index}: "
    return InvalidInput(where + message, details=details)


def store_item_validate(raw: Mapping, index: int | None = None) -> StoreItem:
    """A checked StoreItem from caller input, or InvalidInput naming the field (and item index)."""
    if not isinstance(raw, Mapping):
        raise _bad("each item must be an object with at least 'content'", "item", index)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise _bad(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_FIELDS))}", unknown[0], index)
    content = raw.get("content")
    if not isinstance(content, str):
        raise _bad(f"'content' must be a string, got {type(content).__name__}", "content", index)
    content = normalise(_text(content, "content", index))
    if not visible(content):  # nothing but spaces, or zero-width and other invisible characters
        raise _bad("'content' is empty; give the fact to remember as text", "content", index)
    limit = S("MAX_CONTENT_CHARS")
    if len(content) > limit:
        raise _bad(f"'content' has {len(content)} characters; the limit is {limit} (MAX_CONTENT_CHARS)", "content",
                   index)
    provenance = raw.get("provenance", Provenance.AI_STATED.value)
    if provenance not in PROVENANCES:
        raise _bad(f"'provenance' {provenance!r} is not one of {', '.join(PROVENANCES)}", "provenance", index)
    context = raw.get("context", "") or ""
    if not isinstance(context, str) or len(context) > 200:
        raise _bad("'context' must be a string of at most 200 characters", "context", index)
    context = _text(context, "context", index)
    restore = raw.get("restore", False)
    if not isinstance(restore, bool):
        raise _bad("'restore' must be true or false", "restore", index)
    return StoreItem(content, provenance, context.strip(), _when(raw.get("occurred_at"), index), restore,
                     content_hash(content))


def _in_item(check: Callable[[Any, str], T], value: object, field: str, index: int | None) -> T:
    """``check(value, field)`` (a shared validator), its refusal naming the item too."""
    try:
        return check(value, field)
    except InvalidInput as exc:
        raise _bad(exc.message, field, index) from None


def _text(value: str, field: str, index: int | None) -> str:
    return _in_item(unicode_text, value, field, index)


def _when(value: object, index: int | None) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, (str, datetime)):
        raise _bad("'occurred_at' must be an ISO 8601 date-time string", "occurred_at", index)
    return _in_item(iso_datetime, value, "occurred_at", index)


def _prior(provenance: str) -> float:
    return S(f"PRIOR_{provenance.upper()}")


def _corroborate(grain: Grain, caller: Caller, now: datetime) -> Grain:
    """Known content stored again: a caller who has not vouched for it yet raises its confidence.

    The same caller repeating itself only counts as a use. A dormant or
    archived grain wakes up, unless it was superseded.
    """
    changes = Changes(now)
    vouched = grain.caller_id == caller.pk or ConfidenceEvent.objects.filter(
        grain=grain, caller=caller, reason="corroborated").exists()
    if not vouched:
        changes.confidence(grain, changes.rules.raised(grain.confidence, changes.rules.corroboration), "corroborated",
                           caller_id=caller.pk)
    grain.last_accessed_at = now
    if grain.status in (Status.DORMANT, Status.ARCHIVED) and grain.superseded_by is None:
        if changes.status(grain, Status.ACTIVE, "stored again"):
            grain.weight = max(grain.weight, S("INITIAL_GRAIN_WEIGHT"))
            grain.last_decayed_at = now
    grain.save(update_fields=["last_accessed_at", "weight", "last_decayed_at", *GRAIN_STATE_FIELDS])
    changes.save()
    activity_record("grains.grain_corroborated" if not vouched else "grains.grain_repeated",
                    {"grain_id": grain.pk, "confidence": grain.confidence, "caller": str(caller)}, now=now)
    return grain


def _tombstoned(tomb: Tombstone, index: int | None) -> Tombstoned:
    details = {"tombstone_id": tomb.pk, "forgotten_grain_id": tomb.grain_id, "reason": tomb.reason}
    if index is not None:
        details["index"] = index
    where = f"item {index}: " if index is not None else ""
    if tomb.by_operator:
        return Tombstoned(f"{where}this content was purged by an operator ({tomb.reason}) on "
                          f"{tomb.created_at:%Y-%m-%d}; "
                          "only an operator can restore it (flux admin restore)", details=details)
    return Tombstoned(
        f"{where}this content was forgotten ({tomb.reason}) on {tomb.created_at:%Y-%m-%d}; store it again with "
        "restore set to true to bring it back", details=details)


@dataclass(frozen=True)
class Created:
    """The grains part of a store: the new grains (in the database), every item's grain in order, and which
    contents lifted a caller's tombstone."""

    new: list[Grain]
    plan: list[tuple[Grain, bool]]  # (grain, created), in item order
    restored: frozenset[str]


def grains_create(items: list[StoreItem], caller: Caller, now: datetime, single: bool,
                  source: Source | None = None) -> Created:
    """Create the grains of ``items`` inside the caller's transaction: two lookups, then bulk inserts.

    Known content is left for ``grains_settle`` (corroborated, also a repeat
    within the batch); tombstoned content raises before anything is written
    unless the item asks to restore and the tombstone is a caller's forgetting
    (an operator's purge is lifted only by an operator's restore; audited).
    """
    hashes = [item.content_hash for item in items]
    known = {g.content_hash: g for g in bulk_fetch(Grain, f"content_hash IN ({marks(hashes)})", hashes)}
    tombs = {t.content_hash: t for t in bulk_fetch(Tombstone, f"content_hash IN ({marks(hashes)})", hashes)}
    new: list[Grain] = []
    plan: list[tuple[Grain, bool]] = []
    restored: dict[str, Tombstone] = {}
    for index, item in enumerate(items):
        grain = known.get(item.content_hash)
        if grain is not None:
            plan.append((grain, False))
            continue
        tomb = tombs.get(item.content_hash)
        if tomb is not None:
            if not item.restore or tomb.by_operator:
                raise _tombstoned(tomb, None if single else index)
            restored[item.content_hash] = tomb
        grain = Grain(content=item.content, content_hash=item.content_hash, provenance=item.provenance,
                      confidence=_prior(item.provenance), weight=S("INITIAL_GRAIN_WEIGHT"), context=item.context,
                      occurred_at=item.occurred_at, created_at=now, last_accessed_at=now, last_decayed_at=now,
                      confidence_at=now, status_changed_at=now, caller=caller, source=source)
        known[item.content_hash] = grain
        new.append(grain)
        plan.append((grain, True))
    if restored:
        Tombstone.objects.filter(content_hash__in=restored).delete()
    bulk_insert(Grain, new)
    for restored_hash, tomb in restored.items():
        audit_record(actor=str(caller), action="restore_by_store", grain_id=known[restored_hash].pk, now=now,
                     reason=f"stored again with restore by {caller}", before={"tombstone_id": tomb.pk,
                     "forgotten_grain_id": tomb.grain_id, "content_hash": restored_hash}, after={"new_grain": True})
    bulk_insert(ConfidenceEvent, [ConfidenceEvent(grain=g, confidence=g.confidence, reason=f"prior:{g.provenance}",
                                                  created_at=now) for g in new])
    return Created(new, plan, frozenset(restored))


def grains_settle(created: Created, caller: Caller, now: datetime) -> list[StoreResult]:
    """Every item's result, in order: known content corroborated, the caller's count of stored grains kept."""
    results = []
    for grain, is_new in created.plan:
        if not is_new:
            grain = _corroborate(grain, caller, now)
        results.append(StoreResult(grain, created=is_new, restored=is_new and grain.content_hash in created.restored))
    with connection.cursor() as cursor:  # plain SQL: every store does it
        cursor.execute("UPDATE grains_caller SET stored = stored + %s WHERE id = %s", [len(results), caller.pk])
    return results


def store_items_check(items: Sequence[Mapping], single: bool) -> list[StoreItem]:
    """The checked items of a store: a list of 1..MAX_GRAINS_PER_CALL valid items, or InvalidInput."""
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise InvalidInput("'items' must be a list of objects", details={"field": "items"})
    if not items:
        raise InvalidInput("'items' is empty; send at least one item", details={"field": "items"})
    cap = S("MAX_GRAINS_PER_CALL")
    if len(items) > cap:
        raise InvalidInput(
            f"{len(items)} items in one batch; the limit is {cap} (MAX_GRAINS_PER_CALL): split the batch",
            details={"field": "items", "count": len(items), "limit": cap},
        )
    return [store_item_validate(raw, None if single else index) for index, raw in enumerate(items)]


def grain_consolidate(grain: Grain, source_ids: list[int], *, now: datetime) -> list[int]:
    """Make a new grain a level-1 abstraction of ``source_ids``: its confidence the sources' mean (in its
    history). Returns the sources that still exist."""
    sources = list(Grain.objects.filter(pk__in=source_ids).values_list("pk", "confidence"))
    changes = Changes(now)
    changes.confidence(grain, sum(c for _, c in sources) / len(sources), f"derived from {len(sources)} sources")
    grain.level = 1
    grain.save(update_fields=["level", *GRAIN_STATE_FIELDS])
    changes.save()
    return [pk for pk, _ in sources]


def grains_cluster_set(ids: list[int], cluster_id: int | None) -> None:
    """Record the graph's clustering on grains: ``ids`` are now in ``cluster_id`` (None: in none)."""
    Grain.objects.filter(pk__in=ids).update(cluster_id=cluster_id)


def grains_cluster_clear(cluster_ids: list[int]) -> int:
    """Take every grain out of clusters that are about to go; how many grains were in them."""
    return Grain.objects.filter(cluster_id__in=cluster_ids).update(cluster_id=None) if cluster_ids else 0
