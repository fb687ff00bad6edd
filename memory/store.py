"""Storing: one grain, a batch, or the facts an LLM extracts from a text (flux_extracts).

The walk of a store, top to bottom, each step one domain service:

1. read side (any thread): the items checked (grains), a blocked client and an exhausted rate limit refused
   (grains.callers, grains.limits), the contents embedded when semantic entry is on and no booth is given
   (graph.semantic);
2. one write transaction (the booth's writer when ``run_write`` is given; the service then embeds the new
   grains in the background, so the request never waits for the model): the rate limit taken, the source
   (extraction) created, new grains created (grains), their vectors saved, their lexical and context conduits
   made (graph), counted and logged, known contents corroborated (grains);
3. read side again: the relation rules compare the new grains with their neighbours (epistemic, text work
   outside any transaction), and what they find is applied in a second short write.

Nothing is written when an error is raised before step 2 ends; step 3 failing leaves the grains stored (the
periodic epistemic pass re-examines them).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.utils import timezone

from core import metrics
from core.booth import inline
from core.conf import flux_setting as S
from core.errors import FluxError, LLMBadAnswer, LLMUnavailable
from core.llm import ollama_generate_json
from epistemic.services import relations_find, relations_record
from grains.activity import activity_record_many
from grains.callers import caller_acting, caller_check
from grains.extraction import BadAnswer, extraction_prompt, parse_facts
from grains.limits import grains_rate_check, grains_rate_slot
from grains.models import Caller, Provenance, Source
from grains.services import StoreItem, StoreResult, grains_create, grains_settle, store_item_validate, store_items_check
from graph.semantic import embed, embed_soon, vectors_save
from graph.services.conduits import conduits_link_new_grains, lexical_neighbours

T = TypeVar("T")
Write = Callable[[Callable[[], T]], T]


def grain_store(
    *,
    content: str,
    provenance: str = Provenance.AI_STATED.value,
    caller: str | Caller | None = None,
    context: str = "",
    occurred_at: datetime | str | None = None,
    restore: bool = False,
    rate_limit: bool = False,
    run_write: Write | None = None,
    now: datetime | None = None,
) -> StoreResult:
    """Store one grain, or corroborate the existing grain with the same content.

    Tombstoned content is refused (Tombstoned) unless ``restore`` and the
    tombstone is a caller's forgetting (audited). A new grain is linked to its
    lexical neighbours and to the previous grains of its context. With
    ``rate_limit`` the grain counts against the client's MAX_GRAINS_PER_MINUTE.
    Nothing is written when an error is raised.
    """
    raw = {"content": content, "provenance": provenance, "context": context,
           "occurred_at": occurred_at, "restore": restore}
    return grain_store_batch(items=[raw], caller=caller, rate_limit=rate_limit, run_write=run_write, now=now,
                             _single=True)[0]


def grain_store_batch(
    *, items: Sequence[Mapping], caller: str | Caller | None = None, rate_limit: bool = False,
    run_write: Write | None = None, now: datetime | None = None, _single: bool = False,
) -> list[StoreResult]:
    """Store up to MAX_GRAINS_PER_CALL grains, all or nothing, in order.

    A bad item fails the whole batch with its index in the error details; with
    ``rate_limit`` the batch counts len(items) against MAX_GRAINS_PER_MINUTE.
    """
    checked = store_items_check(items, _single)
    return _store(checked, caller, rate_limit=rate_limit, run_write=run_write, now=now or timezone.now(),
                  single=_single)[0]


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
    run_write: Write | None = None,
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
    items = store_items_check([{"content": f, "provenance": Provenance.AI_INFERRED.value, "context": item.context,
                                "occurred_at": item.occurred_at} for f in facts], single=False)
    results, source = _store(items, caller, rate_limit=rate_limit, run_write=run_write, now=now, single=False,
                             source_text=item.content)
    return ExtractResult(source, results)


def grain_remember(*, content: str, restore: bool = False, **store: Any) -> StoreResult | ExtractResult:
    """What a store of ``content`` does in the instance's OPERATING_MODE, for every interface alike (REST, the
    SDK, MCP through REST): in flux_extracts mode the facts an LLM finds in it (unless it is a restore), else the
    content itself. ``store``: what both take (provenance, caller, context, occurred_at, rate_limit, run_write)."""
    if S("OPERATING_MODE") == "flux_extracts" and not restore:
        return grain_extract(text=content, **store)
    return grain_store(content=content, restore=restore, **store)


def _store(checked: list[StoreItem], caller: str | Caller | None, *, rate_limit: bool, run_write: Write | None,
           now: datetime, single: bool, source_text: str | None = None) -> tuple[list[StoreResult], Source | None]:
    """The one path of every store (see the module's docstring)."""
    write = run_write or inline
    caller_check(caller)
    if rate_limit:
        grains_rate_check(caller, len(checked))
    background = run_write is not None  # the service embeds after answering; a script or test, right here
    embedded = None if background else embed([item.content for item in checked])
    vectors = dict(zip((item.content_hash for item in checked), embedded, strict=True)) if embedded else None

    def unit_of_work() -> tuple[list[StoreResult], Source | None, dict]:
        who = caller_acting(caller, now=now)
        with transaction.atomic(), grains_rate_slot(who, len(checked)) if rate_limit else nullcontext():
            source = Source.objects.create(text=source_text, caller=who, created_at=now) if source_text else None
            created = grains_create(checked, who, now, single, source)
            if vectors:
                vectors_save(created.new, [vectors[g.content_hash] for g in created.new])
            near = lexical_neighbours(created.new, limit=max(S("STORE_LINK_NEIGHBOURS"), S("EPISTEMIC_CANDIDATES")))
            linked = conduits_link_new_grains(created.new, lexical=near, now=now)
            metrics.count({"stored": len(created.new),
                           "stored_unlinked": sum(1 for g in created.new if not linked.get(g.pk))}, now=now)
            activity_record_many([("grains.grain_stored", {
                "grain_id": g.pk, "provenance": g.provenance, "caller": str(who), "linked": linked.get(g.pk, 0),
                "restored": g.content_hash in created.restored}) for g in created.new], now=now)
            return grains_settle(created, who, now), source, {"new": created.new, "near": near}

    def raced_once() -> tuple[list[StoreResult], Source | None, dict]:
        # Another process (a second REST process on PostgreSQL) stored the same content, or made the same new
        # caller, between this one's lookups and its inserts: the unique constraint refused the second insert and
        # rolled everything back; done again, the content is known and is corroborated, once.
        try:
            return unit_of_work()
        except IntegrityError:
            return unit_of_work()

    results, source, fresh = write(raced_once)
    if background and fresh["new"]:
        embed_soon(write)
    found = relations_find(fresh["new"], fresh["near"])
    if found:
        write(lambda: relations_record(found, now=now))
    return results, source
