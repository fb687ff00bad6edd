"""Each process's in-memory mirror of the graph for retrieval, kept current from the change log.

Loaded once per process and database (grains and conduits, two streaming queries, and the clusters' hubs),
then before each use brought up to date: triggers append a ``GraphChange`` row for every grain, conduit or
cluster changed by any process, and the mirror re-reads the rows named since it last read the log (one
indexed query when nothing changed): on SQLite the rows after the last one it applied; on PostgreSQL, whose
transactions commit out of id order, the rows of the transactions its last read did not see. A log it cannot
follow (rows it applied since rolled back, pruned, or more than RELOAD_AFTER changes behind; on PostgreSQL rows
of a transaction it had not seen, pruned before it read them) means a full reload. Retrieval applies its own
touches (the access time), which are not logged, to the mirror directly.
"""
from __future__ import annotations

import gc
import json
import logging
import threading
import time

from django.db import connection, transaction

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
        self._by_db: dict[str, tuple[GraphMirror, Mark]] = {}  # name -> (mirror, where it stands in the log)
        self._lock = threading.Lock()
        self.loads = 0  # full loads done (for tests and the benchmark)

    def clear(self) -> None:
        with self._lock:
            self._by_db.clear()

    def current(self) -> GraphMirror | None:
        """This database's mirror brought up to date, or None when retrieval should read the database."""
        changes = _LOGS.get(connection.vendor)
        if not S("GRAPH_MIRROR") or changes is None:
            return None
        key = str(connection.settings_dict["NAME"])
        with self._lock:
            held = self._by_db.get(key)
            if held is not None:
                held = self._follow(changes, *held)
            if held is None:
                self._by_db.pop(key, None)  # gone before its successor is built: never two in memory at once
                held = self._load(changes)
            self._by_db[key] = held
            return held[0]

    def _load(self, changes: ChangeLog) -> tuple[GraphMirror, Mark]:
        started = time.monotonic()
        gc.collect()  # what is garbage now is not frozen with the mirror below (it would never be freed)
        mark = changes.mark()  # first: whatever changes after it is applied again on the next use
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
        return mirror, mark

    def _follow(self, changes: ChangeLog, mirror: GraphMirror, mark: Mark) -> tuple[GraphMirror, Mark] | None:
        """Apply the changes logged since ``mark``; None when the log cannot be followed from there."""
        found = changes.since(mark)
        if found is None:
            return None
        named, mark = found
        if not named:  # the usual case, on every retrieval: nothing to read
            return mirror, mark
        for kind, sql, parse, put, drop in (
                (GraphChange.GRAIN, grain_rows_sql(), grain_row, mirror.put_grain, mirror.drop_grain),
                (GraphChange.CONDUIT, _conduit_sql(), _conduit_row, mirror.put_conduit, mirror.drop_conduit),
                (GraphChange.CLUSTER, _cluster_sql(), _cluster_row, mirror.put_cluster, mirror.drop_cluster)):
            _apply(sorted({row for k, row in named if k == kind}), sql, parse, put, drop)
        return mirror, mark


Mark = tuple  # where a mirror stands in the change log (each log's own)
Named = list[tuple[int, int]]  # (kind, row id) of the changes to apply


class _SqliteLog:
    """SQLite has one writer, so rows are committed in id order: a mirror stands on the last row it applied,
    with that row's random token (a row gone or different under that id was rolled back or pruned)."""

    def mark(self) -> Mark:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, token FROM graph_graphchange ORDER BY id DESC LIMIT 1")
            row = cursor.fetchone()
        return (row[0], row[1]) if row else (0, 0)

    def since(self, mark: Mark) -> tuple[Named, Mark] | None:
        last, token = mark
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
            return [], mark
        return [(kind, row) for _, kind, row, _ in changes], (changes[-1][0], changes[-1][3])


class _PostgresLog:
    """PostgreSQL's transactions commit out of id order, so each row holds its transaction's id (graph migration
    0011) and a mirror stands on the snapshot of its last read of the log: next it reads the rows of the
    transactions that snapshot did not see (running then, its own still open, or begun after), and the last
    row it applied (gone: rolled back or pruned). The snapshot is the very statement's that reads the rows, which
    are not sorted: in id order the planner may walk the whole log to find none."""

    _READ = ("SELECT s.snap, s.own, c.id, c.kind, c.row, c.xact FROM (SELECT pg_current_snapshot()::text AS snap, "
             "pg_current_xact_id_if_assigned()::text AS own) s LEFT JOIN LATERAL (SELECT id, kind, row, xact "
             "FROM graph_graphchange WHERE id = %s OR xact >= %s OR xact = ANY(%s) LIMIT %s) c ON true")

    def mark(self) -> Mark:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_snapshot()::text, pg_current_xact_id_if_assigned()::text, "
                           "(SELECT max(id) FROM graph_graphchange)")
            snap, own, last = cursor.fetchone()
        return (last or 0, *_unseen(snap, own))

    def since(self, mark: Mark) -> tuple[Named, Mark] | None:
        last, after, running = mark
        with connection.cursor() as cursor:
            cursor.execute(self._READ, [last, after, list(running), RELOAD_AFTER + 2])
            rows = cursor.fetchall()
        changes = [row[2:] for row in rows if row[2] is not None]
        if len(changes) > RELOAD_AFTER or last and not any(cid == last for cid, *_ in changes):
            return None  # too far behind, or the change it stands on was rolled back or pruned
        unseen = min([after, *running])
        if any(kind == GraphChange.PRUNED and pruned >= unseen for _, kind, pruned, _ in changes):
            return None  # a transaction it had not seen committed, and its rows were pruned before it read them
        named = [(kind, row) for _, kind, row, xact in changes if xact >= after or xact in running]
        return named, (max([last, *(cid for cid, *_ in changes)]), *_unseen(rows[0][0], rows[0][1]))


def _unseen(snapshot: str, own: str | None) -> tuple[int, frozenset[int]]:
    """From a snapshot ("xmin:xmax:running,..."), the first transaction id it did not see and the ids below that
    it did not see either: those running then, and this connection's own open transaction (which may still roll
    back)."""
    _, xmax, running = snapshot.split(":")
    return int(xmax), frozenset(int(x) for x in running.split(",") if x) | ({int(own)} if own else set())


ChangeLog = _SqliteLog | _PostgresLog
_LOGS: dict[str, ChangeLog] = {"sqlite": _SqliteLog(), "postgresql": _PostgresLog()}


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


# PostgreSQL: a chunk of the log deleted, and in its place a row saying up to which transaction rows went. A
# transaction open long enough commits rows among the oldest; were they pruned before a mirror that had not seen
# it read them, that mirror would miss them (it stands on a later row, still there): the row has it reload.
_PRUNE_PG = """WITH gone AS (DELETE FROM graph_graphchange WHERE id BETWEEN %s AND %s RETURNING xact)
INSERT INTO graph_graphchange (kind, row, token) SELECT %s, max(xact), 0 FROM gone HAVING count(*) > 0
RETURNING (SELECT count(*) FROM gone)"""


def changes_prune() -> int:
    """Delete all but the last KEEP_CHANGES rows of the change log, PRUNE_CHUNK rows per transaction (the beat
    runs this every PRUNE_SECONDS); how many went."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM graph_graphchange")
        last = cursor.fetchone()[0] or 0
    deleted = 0
    while chunk := list(GraphChange.objects.filter(pk__lte=last - KEEP_CHANGES).order_by("pk")
                        .values_list("pk", flat=True)[:PRUNE_CHUNK]):
        if connection.vendor == "postgresql":
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(_PRUNE_PG, [chunk[0], chunk[-1], GraphChange.PRUNED])
                deleted += sum(gone for gone, in cursor.fetchall())  # no row: another prune took the chunk
        else:
            deleted += GraphChange.objects.filter(pk__gte=chunk[0], pk__lte=chunk[-1]).delete()[0]
    return deleted


mirrors = _Mirrors()
