"""Entry-point search: finds grains whose content matches a query.

One small interface, so that PostgreSQL full-text and an embedding backend can
slot in beside SQLite FTS5. Scores are "higher is better" and positive.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from django.db import connection

from graph.algorithms.text import fts5_match, terms


class EntrySearch(Protocol):
    def search(self, query: str, *, limit: int, statuses: Sequence[str], max_terms: int) -> list[tuple[int, float]]:
        """Best ``limit`` (grain id, score) pairs among grains with one of ``statuses``."""


class Fts5Search:
    """SQLite FTS5 with BM25 (porter stemming), kept in sync by triggers."""

    def search(self, query: str, *, limit: int, statuses: Sequence[str], max_terms: int) -> list[tuple[int, float]]:
        match = fts5_match(query, max_terms)
        if match is None or not statuses:
            return []
        marks = ",".join("%s" for _ in statuses)
        sql = (
            "SELECT f.rowid, -bm25(grain_fts) AS score FROM grain_fts f "
            "JOIN grains_grain g ON g.id = f.rowid "
            f"WHERE grain_fts MATCH %s AND g.status IN ({marks}) ORDER BY bm25(grain_fts) LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [match, *statuses, limit])
            return [(gid, max(score, 1e-9)) for gid, score in cursor.fetchall()]


class PostgresSearch:
    """PostgreSQL full-text search (english configuration) ranked by ts_rank_cd."""

    def search(self, query: str, *, limit: int, statuses: Sequence[str], max_terms: int) -> list[tuple[int, float]]:
        words = terms(query, max_terms)
        if not words or not statuses:
            return []
        tsquery = " | ".join("'" + w.replace("'", "") + "'" for w in words if w.replace("'", ""))
        marks = ",".join("%s" for _ in statuses)
        sql = (
            "SELECT id, ts_rank_cd(to_tsvector('english', content), q) AS score "
            "FROM grains_grain, to_tsquery('english', %s) q "
            f"WHERE to_tsvector('english', content) @@ q AND status IN ({marks}) "
            "ORDER BY score DESC, id DESC LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [tsquery, *statuses, limit])
            return [(gid, max(float(score), 1e-9)) for gid, score in cursor.fetchall()]


def entry_search() -> EntrySearch:
    """The backend for the current database."""
    return PostgresSearch() if connection.vendor == "postgresql" else Fts5Search()
