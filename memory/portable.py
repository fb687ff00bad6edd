"""A memory as portable JSON Lines: what `flux export` writes and `flux import` reads, the same on SQLite and on
PostgreSQL, so a memory moves between them with nothing lost.

One line per record, ``{"model": "grains.grain", "pk": 7, "fields": {...}}`` (Django's serialized form, keys
sorted, so the same memory always gives the same file), models in an order that keeps references pointing
backwards, each model by primary key. Exported: callers, sources, grains (content, provenance, confidence,
weights, cues, tiers, statuses), confidence histories, tombstones, the audit log, clusters, conduits, vectors,
the learned ranker, dreams, traces with their items and feedback. Not exported: the activity feed, health
counters and snapshots (history of the running service, rebuilt as it runs), locks, rate counts, login nonces.
Ids are kept: an import goes into an empty memory only, and an export of the imported memory is the same file.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, time
from pathlib import Path
from typing import IO

from django.apps import apps
from django.core import serializers
from django.core.management.color import no_style
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction
from django.db.models import Model, QuerySet

from core.backup import database_backup, default_backup_path
from core.errors import InvalidInput
from core.vendor_sql import statistics_refresh
from grains.content import content_hash
from grains.models import Provenance, Status, Tier
from graph.semantic import DIMENSIONS

FORMAT = "flux-memory-jsonl"
VERSION = 1  # of the format: a file of a later one is refused
MODELS = ["grains.caller", "grains.source", "grains.grain", "grains.confidenceevent", "grains.tombstone",
          "grains.auditevent", "graph.cluster", "graph.conduit", "graph.grainvector", "graph.rankerweight",
          "dreams.dream", "graph.trace", "graph.traceitem", "graph.feedback"]
CHUNK = 2000
SNAPSHOT = "export-snapshot"


def _model(label: str) -> type[Model]:
    return apps.get_model(label)


def export_count(using: str = DEFAULT_DB_ALIAS) -> int:
    return sum(_model(label).objects.using(using).count() for label in MODELS)


@contextmanager
def export_snapshot() -> Iterator[str]:
    """A database alias holding one moment of the memory while the service keeps writing: on SQLite a backup
    copy (deleted afterwards), on PostgreSQL a repeatable-read transaction. Yields the alias."""
    if connection.vendor != "sqlite":
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield DEFAULT_DB_ALIAS
        return
    copy = database_backup(default_backup_path("export-snapshot-")).path
    connections.settings[SNAPSHOT] = {**connections.settings[DEFAULT_DB_ALIAS], "NAME": str(copy)}
    try:
        yield SNAPSHOT
    finally:
        connections[SNAPSHOT].close()
        del connections[SNAPSHOT]
        del connections.settings[SNAPSHOT]
        copy.unlink(missing_ok=True)


def memory_export(out: IO[str], *, using: str = DEFAULT_DB_ALIAS,
                  progress: Callable[[int], None] = lambda n: None) -> int:
    """Write every exported record of the database ``using`` to ``out``; returns how many. ``progress(n)`` after
    each chunk of n."""
    out.write(json.dumps({"format": FORMAT, "version": VERSION, "models": MODELS}, sort_keys=True) + "\n")
    written = 0
    for label in MODELS:
        for chunk in _chunks(_model(label).objects.using(using).order_by("pk")):
            for record in serializers.serialize("python", chunk):
                out.write(json.dumps(record, sort_keys=True, cls=_Encoder, ensure_ascii=False) + "\n")
            written += len(chunk)
            progress(len(chunk))
    return written


class _Encoder(DjangoJSONEncoder):
    """Django's, with times to the microsecond (Django's own cuts them to the millisecond): an import gives back
    the very times exported."""

    def default(self, o: object) -> object:
        if isinstance(o, datetime | time):
            shown = o.isoformat()
            return shown.removesuffix("+00:00") + "Z" if shown.endswith("+00:00") else shown
        return super().default(o)


def _chunks(queryset: QuerySet) -> Iterator[list]:
    last = None
    while True:
        page = list((queryset.filter(pk__gt=last) if last is not None else queryset)[:CHUNK])
        if not page:
            return
        yield page
        last = page[-1].pk


def memory_import(path: Path, *, progress: Callable[[int], None] = lambda n: None) -> int:
    """Read a file written by ``memory_export`` into this (empty) memory, ids kept, in one transaction: all of
    it or nothing; a record of a model the export does not hold is refused. Returns how many records."""
    try:
        with open(path, encoding="utf-8-sig") as source:  # a byte-order mark an editor put first is no record
            return _import(source, path, progress)
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not a Flux Memory export (it is not UTF-8 text; a `flux backup` file is put "
                           "back with `flux restore`); nothing was imported") from None


def _import(source: IO[str], path: Path, progress: Callable[[int], None]) -> int:
    header = _header(source.readline(), path)
    unknown = sorted(set(header["models"]) - set(MODELS))
    if unknown:
        raise InvalidInput(f"{path} holds records this version does not know ({', '.join(unknown)}); "
                           "import it with the version that exported it or a newer one")
    busy = [label for label in MODELS if _model(label).objects.exists()]
    if busy:
        raise InvalidInput(f"this memory is not empty ({', '.join(busy)}): import into a new instance "
                           "(flux init --name NEW), so every id stays what it was")
    count = 0
    try:
        with transaction.atomic():
            for number, line in enumerate(source, start=2):
                if not line.strip():  # a blank line (an editor's last one) holds no record
                    continue
                try:
                    record = json.loads(line)
                    model = record.get("model") if isinstance(record, dict) else None
                    if model not in MODELS:
                        what = (f"a record of {model!r}" if isinstance(record, dict)
                                else f"a JSON {type(record).__name__}")
                        raise ValueError(f"{what}, which no export holds")
                    if not isinstance(record.get("fields"), dict):
                        raise ValueError("a record without its fields (an object)")
                    for obj in serializers.deserialize("python", [record]):
                        _check_record(model, obj.object)
                        obj.save(force_insert=True)  # an id given twice is refused, not the first record replaced
                except Exception as exc:  # noqa: BLE001 - however a line fails, the file says so, with its line
                    why = str(exc) or type(exc).__name__
                    raise InvalidInput(f"{path}, line {number}: {why[:300]}; nothing was imported") from None
                count += 1
                if count % CHUNK == 0:
                    progress(CHUNK)
            _reset_sequences()
    except DatabaseError as exc:  # checked at the commit: a reference to a record the file does not hold
        raise InvalidInput(f"{path}: {str(exc)[:300]}; nothing was imported") from None
    statistics_refresh()
    progress(count % CHUNK)
    return count


def _check_record(model: str, obj: Model) -> None:
    """What the services check before writing a record, for the records whose values they choose: an import
    writes what no service has checked (a hand-edited file, another program's)."""
    if not isinstance(obj.pk, int) or isinstance(obj.pk, bool) or obj.pk < 1:
        raise ValueError(f"id {obj.pk!r} is not a positive integer")
    if model == "grains.grain":
        for field, choices in (("status", Status), ("provenance", Provenance), ("tier", Tier)):
            if getattr(obj, field) not in choices.values:
                raise ValueError(f"grain {obj.pk}: {field} {getattr(obj, field)!r} is not one of "
                                 f"{', '.join(choices.values)}")
        if not isinstance(obj.content, str) or not obj.content.strip():
            raise ValueError(f"grain {obj.pk} has no content")
        if obj.content_hash != content_hash(obj.content):
            raise ValueError(f"grain {obj.pk}: its content_hash is not its content's")
        if not 0.0 <= obj.confidence <= 1.0:
            raise ValueError(f"grain {obj.pk}: confidence {obj.confidence} is not between 0 and 1")
    elif model == "graph.grainvector" and len(bytes(obj.vector)) != DIMENSIONS * 4:
        raise ValueError(f"the vector of grain {obj.grain_id} has {len(bytes(obj.vector))} bytes, not the "
                         f"{DIMENSIONS * 4} of {DIMENSIONS} float32 numbers")


def _header(line: str, path: Path) -> dict:
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if (not isinstance(header, dict) or header.get("format") != FORMAT or not isinstance(header.get("models"), list)
            or not all(isinstance(label, str) for label in header["models"])):
        raise InvalidInput(f"{path} is not a Flux Memory export (its first line names no {FORMAT!r} format and "
                           "its models)")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InvalidInput(f"{path} is not a Flux Memory export (its first line names no format version)")
    if version > VERSION:
        raise InvalidInput(f"{path} is an export of format version {version}, made by a newer Flux Memory (this "
                           f"one reads version {VERSION}): import it with that version or a newer one")
    return header


def _reset_sequences() -> None:
    """After inserts with explicit ids, PostgreSQL's id sequences continue past them (SQLite needs nothing)."""
    statements = connection.ops.sequence_reset_sql(no_style(), [_model(label) for label in MODELS])
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
