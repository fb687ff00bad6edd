"""Writing grains: store (single and batch) and forget. The only code that creates grains."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import TypeVar
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from fluxsite.conf import flux_setting as S
from grains.activity import activity_record, activity_record_many
from grains.callers import caller_acting, caller_check
from grains.content import content_hash, normalise
from grains.audit import audit_record
from grains.errors import FluxError, InvalidInput, LLMBadAnswer, LLMUnavailable, Tombstoned
from grains.extraction import BadAnswer, extraction_prompt, parse_facts
from grains.lifecycle import GRAIN_STATE_FIELDS, Changes
from grains.limits import grains_rate_check, grains_rate_slot
from grains.llm import ollama_generate_json
from grains.models import Caller, ConfidenceEvent, Grain, Provenance, Source, Status, Tombstone
from grains.tombstones import grain_forget  # noqa: F401 - part of this module's interface
from vitals.counters import tally
from epistemic.services import relations_find, relations_record
from graph.semantic import embed, vectors_save
from graph.services.conduits import conduits_link_new_grains, lexical_neighbours

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
    content = normalise(content)
    if not content:
        raise _bad("'content' is empty; give the fact to remember as text", "content", index)
    limit = S("MAX_CONTENT_CHARS")
    if len(content) > limit:
        raise _bad(f"'content' has {len(content)} characters; the limit is {limit} (MAX_CONTENT_CHARS)", "content", index)
    provenance = raw.get("provenance", Provenance.AI_STATED.value)
    if provenance not in PROVENANCES:
        raise _bad(f"'provenance' {provenance!r} is not one of {', '.join(PROVENANCES)}", "provenance", index)
    context = raw.get("context", "") or ""
    if not isinstance(context, str) or len(context) > 200:
        raise _bad("'context' must be a string of at most 200 characters", "context", index)
    restore = raw.get("restore", False)
    if not isinstance(restore, bool):
        raise _bad("'restore' must be true or false", "restore", index)
    return StoreItem(content, provenance, context.strip(), _when(raw.get("occurred_at"), index), restore, content_hash(content))


def _when(value: object, index: int | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None:
            raise _bad(f"'occurred_at' {value!r} is not an ISO 8601 date-time", "occurred_at", index)
    else:
        raise _bad("'occurred_at' must be an ISO 8601 date-time string", "occurred_at", index)
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, timezone.utc)
    return parsed


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
        return Tombstoned(f"{where}this content was purged by an operator ({tomb.reason}) on {tomb.created_at:%Y-%m-%d}; "
                          "only an operator can restore it (flux admin restore)", details=details)
    return Tombstoned(
        f"{where}this content was forgotten ({tomb.reason}) on {tomb.created_at:%Y-%m-%d}; store it again with "
        "restore set to true to bring it back", details=details)


@dataclass(frozen=True)
class _Stored:
    """What the write of a store did: the results in item order, and the new grains with their lexical
    neighbours (for the relation rules, run after the write)."""

    results: list[StoreResult]
    new: list[Grain]
    near: dict[int, list[tuple[int, float]]]


def _store_all(items: list[StoreItem], caller: Caller, now: datetime, single: bool,
               source: Source | None = None, vectors: dict[str, bytes] | None = None) -> _Stored:
    """Store ``items`` in order inside the caller's transaction: two lookups, then bulk inserts.

    Known content is corroborated (also a repeat within the batch); tombstoned
    content raises before anything is written unless the item asks to restore
    and the tombstone is a caller's forgetting (an operator's purge is lifted
    only by an operator's restore). ``vectors`` (content hash -> embedding)
    are kept for the new grains.
    """
    hashes = [item.content_hash for item in items]
    known = {g.content_hash: g for g in Grain.objects.filter(content_hash__in=hashes)}
    tombs = {t.content_hash: t for t in Tombstone.objects.filter(content_hash__in=hashes)}
    new: list[Grain] = []
    plan: list[tuple[Grain, bool]] = []  # (grain, created), in item order
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
    Grain.objects.bulk_create(new)
    for content_hash, tomb in restored.items():
        audit_record(actor=str(caller), action="restore_by_store", grain_id=known[content_hash].pk, now=now,
                     reason=f"stored again with restore by {caller}", before={"tombstone_id": tomb.pk,
                     "forgotten_grain_id": tomb.grain_id, "content_hash": content_hash}, after={"new_grain": True})
    if vectors:
        vectors_save(new, [vectors[g.content_hash] for g in new])
    ConfidenceEvent.objects.bulk_create([ConfidenceEvent(grain=g, confidence=g.confidence,
                                                         reason=f"prior:{g.provenance}", created_at=now) for g in new])
    near = lexical_neighbours(new, limit=max(S("STORE_LINK_NEIGHBOURS"), S("EPISTEMIC_CANDIDATES")))
    linked = conduits_link_new_grains(new, lexical=near, now=now)
    tally({"stored": len(new), "stored_unlinked": sum(1 for g in new if not linked.get(g.pk))}, now=now)
    activity_record_many([("grains.grain_stored", {
        "grain_id": g.pk, "provenance": g.provenance, "caller": str(caller), "linked": linked.get(g.pk, 0),
        "restored": g.content_hash in restored}) for g in new], now=now)
    results = []
    for grain, created in plan:
        if not created:
            grain = _corroborate(grain, caller, now)
        results.append(StoreResult(grain, created=created, restored=created and grain.content_hash in restored))
    return _Stored(results, new, near)


def grain_store(
    *,
    content: str,
    provenance: str = Provenance.AI_STATED.value,
    caller: str | Caller | None = None,
    context: str = "",
    occurred_at: datetime | str | None = None,
    restore: bool = False,
    rate_limit: bool = False,
    run_write: Callable[[Callable[[], T]], T] | None = None,
    now: datetime | None = None,
) -> StoreResult:
    """Store one grain, or corroborate the existing grain with the same content.

    Tombstoned content is refused (Tombstoned) unless ``restore`` and the
    tombstone is a caller's forgetting (audited). A new grain is linked to its
    lexical neighbours and to the previous grains of its context. With
    ``rate_limit`` the grain counts against the caller's MAX_GRAINS_PER_MINUTE.
    Nothing is written when an error is raised.
    """
    raw = {"content": content, "provenance": provenance, "context": context,
           "occurred_at": occurred_at, "restore": restore}
    return grain_store_batch(items=[raw], caller=caller, rate_limit=rate_limit, run_write=run_write, now=now,
                             _single=True)[0]


def _checked_items(items: Sequence[Mapping], single: bool) -> list[StoreItem]:
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


def grain_store_batch(
    *, items: Sequence[Mapping], caller: str | Caller | None = None, rate_limit: bool = False,
    run_write: Callable[[Callable[[], T]], T] | None = None,
    now: datetime | None = None, _single: bool = False,
) -> list[StoreResult]:
    """Store up to MAX_GRAINS_PER_CALL grains, all or nothing, in order.

    A bad item fails the whole batch with its index in the error details; with
    ``rate_limit`` the batch counts len(items) against MAX_GRAINS_PER_MINUTE.
    """
    checked = _checked_items(items, _single)
    return _store(checked, caller, rate_limit=rate_limit, run_write=run_write, now=now or timezone.now(),
                  single=_single)[0]


def _store(checked: list[StoreItem], caller: str | Caller | None, *, rate_limit: bool,
           run_write: Callable[[Callable[[], T]], T] | None, now: datetime, single: bool,
           source_text: str | None = None) -> tuple[list[StoreResult], Source | None]:
    """The one path of every store: checks, then the model, then the write, then the relation rules.

    Before anything slow: a blocked client and an exhausted rate limit are
    refused (read only). The items are embedded (semantic entry on) outside
    the write. The write (by ``run_write`` when given: the booth's writer)
    creates the source (``source_text``, flux_extracts), the grains, their
    conduits, and takes the rate limit in the same transaction. The relation
    rules then compare the new grains with their neighbours outside it, and
    what they find is recorded in a second short write.
    """
    write = run_write or _inline
    caller_check(caller)
    if rate_limit:
        grains_rate_check(caller, len(checked))
    embedded = embed([item.content for item in checked])
    vectors = dict(zip((item.content_hash for item in checked), embedded)) if embedded else None

    def store() -> tuple[_Stored, Source | None]:
        who = caller_acting(caller, now=now)
        with transaction.atomic(), grains_rate_slot(who, len(checked)) if rate_limit else nullcontext():
            source = Source.objects.create(text=source_text, caller=who, created_at=now) if source_text else None
            stored = _store_all(checked, who, now, single, source, vectors)
            Caller.objects.filter(pk=who.pk).update(stored=F("stored") + len(stored.results))
            return stored, source

    stored, source = write(store)
    found = relations_find(stored.new, stored.near)
    if found:
        write(lambda: relations_record(found, now=now))
    return stored.results, source


def _inline(fn: Callable[[], T]) -> T:
    return fn()


@dataclass(frozen=True)
class ExtractResult:
    source: Source | None
    results: list[StoreResult]
    warning: str | None = None


def grain_extract(
    *,
    text: str,
    provenance: str = Provenance.AI_STATED.value,
    caller: str | Caller | None = None,
    context: str = "",
    occurred_at: datetime | str | None = None,
    rate_limit: bool = False,
    run_write: Callable[[Callable[[], T]], T] | None = None,
    now: datetime | None = None,
) -> ExtractResult:
    """flux_extracts: store the atomic facts an LLM finds in ``text`` as ai_inferred grains linked to it.

    A blocked client or an exhausted rate limit is refused before the LLM is
    asked. The LLM is asked outside any transaction; then the source and its
    grains are written in one (by ``run_write`` when given). When the LLM
    fails, LLMUnavailable / LLMBadAnswer is raised and nothing is written,
    unless EXTRACT_FALLBACK is caller_extracts: then ``text`` is stored as
    given, with a warning in the result.
    """
    raw = {"content": text, "provenance": provenance, "context": context, "occurred_at": occurred_at}
    item = store_item_validate(raw)
    now = now or timezone.now()
    caller_check(caller)
    if rate_limit:
        grains_rate_check(caller, 1)
    try:
        answer = ollama_generate_json(extraction_prompt(item.content))
        facts = parse_facts(answer, max_facts=S("MAX_GRAINS_PER_CALL"), max_chars=S("MAX_CONTENT_CHARS"))
    except (LLMUnavailable, LLMBadAnswer, BadAnswer) as exc:
        error = exc if isinstance(exc, FluxError) else LLMBadAnswer(str(exc))
        if S("EXTRACT_FALLBACK") != "caller_extracts":
            raise error from None
        stored = grain_store(**raw, caller=caller, rate_limit=rate_limit, run_write=run_write, now=now)
        return ExtractResult(None, [stored], warning=f"{error.message}; the text was stored as given")
    if not facts:
        return ExtractResult(None, [], warning="the LLM found no facts in the text; nothing was stored")
    items = _checked_items([{"content": f, "provenance": Provenance.AI_INFERRED.value, "context": item.context,
                             "occurred_at": item.occurred_at} for f in facts], single=False)
    results, source = _store(items, caller, rate_limit=rate_limit, run_write=run_write, now=now, single=False,
                             source_text=item.content)
    return ExtractResult(source, results)
