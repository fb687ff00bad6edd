"""Entry-point search: finds grains whose content matches a query.

One small interface, so that PostgreSQL full-text and an embedding backend can
slot in beside SQLite FTS5. Scores are "higher is better" and positive.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from django.db import connection
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from fluxsite.conf import flux_setting as S

from graph.algorithms.text import fts5_or, rare_terms, terms


class EntrySearch(Protocol):
    def search(self, query: str, *, limit: int, statuses: Sequence[str], max_terms: int) -> list[tuple[int, float]]:
        """Best ``limit`` (grain id, score) pairs among grains with one of ``statuses``."""


class Fts5Search:
    """SQLite FTS5 with BM25 (porter stemming), kept in sync by triggers.

    Only the query's rare terms are matched (see ``rare_terms``): the index's
    own tokenizer stems the words in a per-connection scratch table, and the
    vocabulary table gives their document frequencies, so a query never pays
    for scanning the postings of words found in most grains.
    """

    def __init__(self, max_doc_fraction: float = 1.0, min_docs: int = 0) -> None:
        self.max_doc_fraction = max_doc_fraction
        self.min_docs = min_docs

    def search(self, query: str, *, limit: int, statuses: Sequence[str], max_terms: int) -> list[tuple[int, float]]:
        words = terms(query, max_terms=64)
        if not words or not statuses:
            return []
        with connection.cursor() as cursor:
            chosen = self._choose(cursor, words, max_terms)
            if not chosen:
                return []
            match = fts5_or(chosen)
            marks = ",".join("%s" for _ in statuses)
            cursor.execute(
                "SELECT f.rowid, -bm25(grain_fts) AS score FROM grain_fts f "
                "JOIN grains_grain g ON g.id = f.rowid "
                f"WHERE grain_fts MATCH %s AND g.status IN ({marks}) ORDER BY bm25(grain_fts) LIMIT %s",
                [match, *statuses, limit],
            )
            return [(gid, max(score, 1e-9)) for gid, score in cursor.fetchall()]

    def _choose(self, cursor, words: list[str], max_terms: int) -> list[str]:  # noqa: ANN001 - a DB cursor
        cursor.executemany("INSERT INTO temp.flux_probe(rowid, w) VALUES (%s, %s)", list(enumerate(words, 1)))
        cursor.execute("SELECT doc, term FROM temp.flux_probe_vocab")
        stems = {words[doc - 1]: term for doc, term in cursor.fetchall()}
        cursor.execute("DELETE FROM temp.flux_probe")
        unique = sorted(set(stems.values()))
        if not unique:
            return []
        cursor.execute(f"SELECT term, doc FROM grain_fts_vocab WHERE term IN ({','.join(['%s'] * len(unique))})",
                       unique)
        doc_freq = dict(cursor.fetchall())
        total = 0
        if self.max_doc_fraction > 0:
            cursor.execute("SELECT max(id) FROM grains_grain")  # the grain count, near enough, in O(log n)
            total = cursor.fetchone()[0] or 0
        return rare_terms(words, stems, doc_freq, max_terms=max_terms,
                          max_docs=max(self.max_doc_fraction * total, self.min_docs))


@receiver(connection_created)
def create_probe_tables(sender, connection, **kwargs) -> None:  # noqa: ANN001 - Django signal arguments
    """Scratch tables that stem words with the index's own tokenizer, once per new SQLite connection.

    Created outside any transaction, so no rollback takes them away.
    """
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.flux_probe USING fts5("
                       "w, tokenize='porter unicode61 remove_diacritics 2')")
        cursor.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.flux_probe_vocab USING fts5vocab("
                       "temp, flux_probe, 'instance')")


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


def entry_search(*, max_docs: int | None = None) -> EntrySearch:
    """The backend for the current database.

    Terms in more grains than ``max_docs`` are not matched; by default the
    limit is COMMON_TERM_FRACTION of the grains, at least COMMON_TERM_MIN_DOCS.
    """
    if connection.vendor == "postgresql":
        return PostgresSearch()
    if max_docs is not None:
        return Fts5Search(0.0, max_docs)
    return Fts5Search(S("COMMON_TERM_FRACTION"), S("COMMON_TERM_MIN_DOCS"))
