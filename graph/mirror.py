"""Each process's in-memory mirror of the graph for retrieval, kept current from the change log.

Loaded once per process and database (grains and conduits, two streaming queries, and the clusters' hubs),
then before each use brought up to date: triggers append a ``GraphChange`` row for every grain, conduit or
cluster changed by any process, and the mirror re-reads the rows named after the last change it applied (one
indexed query when nothing changed). A log it cannot follow (rows it applied since rolled back, pruned, or
more than RELOAD_AFTER changes behind) means a full reload. Retrieval applies its own touches (the access
time), which are not logged, to the mirror directly. SQLite only (GRAPH_MIRROR): on PostgreSQL retrieval reads
the database, whose transactions commit out of id order.
"""
from __future__ import annotations

import gc
import json
import logging
import threading
import time

from django.db import connection

from core.bulk import marks
from core.conf import flux_setting as S
from graph.algorithms.mirror import ConduitRow, GraphMirror
from graph.models import Cluster, Conduit, GraphChange
from graph.selectors import CHUNK, _epoch, grain_row, grain_rows_sql

log = logging.getLogger("flux.mirror")
RELOAD_AFTER = 20_000  # changes behind: reading them one by one would cost more than a reload
KEEP_CHANGES = 50_000  # rows of the log kept by the prune (any mirror further behind reloads anyway)
PRUNE_SECONDS = 300.0  # how often the beat prunes the log
PRUNE_CHUNK = 20_000  # rows deleted per transaction, so the writer is never held long


def _conduit_sql() -> str:
    return (f"SELECT id, source_id, target_id, weight, {_epoch('created_at')}, {_epoch('last_decayed_at')}, "
            f"directed, kind FROM {Conduit._meta.db_table}")


def _conduit_row(row: tuple) -> tuple[int, ConduitRow]:
    cid, source, target, weight, created, decayed, directed, kind = row
    return cid, ConduitRow(source, target, weight, float(created), float(decayed), bool(directed), kind)


def _cluster_sql() -> str:
    return f"SELECT id, hubs FROM {Cluster._meta.db_table}"


def _cluster_row(row: tuple) -> tuple[int, tuple[int, ...]]:
    cid, hubs = row
    return cid, tuple(json.loads(hubs))  # SQLite keeps a JSON field as text


class _Mirrors:
    """The mirror of each database this process uses, and where in the change log each one stands."""

    def __init__(self) -> None:
        self._by_db: dict[str, tuple[GraphMirror, int, int]] = {}  # name -> (mirror, last change id, its token)
        self._lock = threading.Lock()
        self.loads = 0  # full loads done (for tests and the benchmark)

    def clear(self) -> None:
        with self._lock:
            self._by_db.clear()

    def current(self) -> GraphMirror | None:
        """This database's mirror brought up to date, or None when retrieval should read the database."""
        if not S("GRAPH_MIRROR") or connection.vendor != "sqlite":
            return None
        key = str(connection.settings_dict["NAME"])
        with self._lock:
            held = self._by_db.get(key)
            if held is not None:
                held = self._follow(*held)
            if held is None:
                held = self._load()
            self._by_db[key] = held
            return held[0]

    def _load(self) -> tuple[GraphMirror, int, int]:
        started = time.monotonic()
        mark = _last_change()  # first: whatever changes after it is applied again on the next use
        mirror = GraphMirror()
        with connection.cursor() as cursor:
            cursor.execute(grain_rows_sql())
            while rows := cursor.fetchmany(10_000):
                for gid, row in map(grain_row, rows):
                    mirror.put_grain(gid, row)
            cursor.execute(_conduit_sql())
            while rows := cursor.fetchmany(10_000):
                for cid, row in map(_conduit_row, rows):
                    mirror.put_conduit(cid, row)
            cursor.execute(_cluster_sql())
            for cid, hubs in map(_cluster_row, cursor.fetchall()):
                mirror.put_cluster(cid, hubs)
        self.loads += 1
        # Out of the cycle collector's sight: a mirror holds no cycles and lives until the next load, but the
        # interpreter's full collection (run whenever the objects that outlived younger collections have grown by
        # a quarter) would visit each of its objects: at 100,000 grains 0.8 million, a 0.17 s stop of the whole
        # process; at 1,000,000, 7.6 million and 1.4 s. Freezing takes every object of the process as it is now
        # (reference counting still frees them; only a cycle among them would never be); a mirror is loaded at
        # start and seldom after.
        gc.freeze()
        log.info("graph mirror loaded: %d grains, %d conduits in %.2f s", len(mirror.grains), len(mirror.conduits),
                 time.monotonic() - started)
        return mirror, *mark

    def _follow(self, mirror: GraphMirror, last: int, token: int) -> tuple[GraphMirror, int, int] | None:
        """Apply the changes logged after ``last``; None when the log cannot be followed from there."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, kind, row, token FROM graph_graphchange WHERE id >= %s ORDER BY id LIMIT %s",
                           [last, RELOAD_AFTER + 1])
            changes = cursor.fetchall()
        if last and (not changes or changes[0][0] != last or changes[0][3] != token):
            return None  # the change it stands on was rolled back or pruned
        if last:
            changes = changes[1:]
        if len(changes) >= RELOAD_AFTER:
            return None
        if not changes:
            return mirror, last, token
        for kind, sql, parse, put, drop in (
                (GraphChange.GRAIN, grain_rows_sql(), grain_row, mirror.put_grain, mirror.drop_grain),
                (GraphChange.CONDUIT, _conduit_sql(), _conduit_row, mirror.put_conduit, mirror.drop_conduit),
                (GraphChange.CLUSTER, _cluster_sql(), _cluster_row, mirror.put_cluster, mirror.drop_cluster)):
            _apply(sorted({row for _, k, row, _ in changes if k == kind}), sql, parse, put, drop)
        return mirror, changes[-1][0], changes[-1][3]


def _apply(ids: list[int], sql: str, parse, put, drop) -> None:  # noqa: ANN001
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start: start + CHUNK]
        with connection.cursor() as cursor:
            cursor.execute(f"{sql} WHERE id IN ({marks(chunk)})", chunk)
            found = dict(map(parse, cursor.fetchall()))
        for rid in chunk:
            if rid in found:
                put(rid, found[rid])
            else:
                drop(rid)


def _last_change() -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, token FROM graph_graphchange ORDER BY id DESC LIMIT 1")
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (0, 0)


def changes_prune() -> int:
    """Delete all but the last KEEP_CHANGES rows of the change log, PRUNE_CHUNK rows per transaction (the beat
    runs this every PRUNE_SECONDS); how many went."""
    last, _ = _last_change()
    deleted = 0
    while chunk := list(GraphChange.objects.filter(pk__lte=last - KEEP_CHANGES).order_by("pk")
                        .values_list("pk", flat=True)[:PRUNE_CHUNK]):
        deleted += GraphChange.objects.filter(pk__gte=chunk[0], pk__lte=chunk[-1]).delete()[0]
    return deleted


mirrors = _Mirrors()
