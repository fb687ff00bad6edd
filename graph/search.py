"""Entry-point search: finds grains whose content matches a query.

One small interface, so that PostgreSQL full-text and an embedding backend can
slot in beside SQLite FTS5. Scores are "higher is better" and positive.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from core.bulk import marks
from core.conf import flux_setting as S
from graph.algorithms.text import fts5_or, rare_terms, terms
from graph.selectors import grains_in_status

# (grain ids, statuses) -> those of the ids whose status is among the statuses.
InStatus = Callable[[Sequence[int], Sequence[str]], set[int]]


class EntrySearch(Protocol):
    def search(self, query: str, *, limit: int, statuses: Sequence[str], max_terms: int) -> list[tuple[int, float]]:
        """Best ``limit`` (grain id, score) pairs among grains with one of ``statuses``."""

    def search_many(
        self, queries: Sequence[str], *, limit: int, statuses: Sequence[str], max_terms: int
    ) -> list[list[tuple[int, float]]]:
        """``search`` for each query, sharing what can be shared."""


class _Search:
    """What both backends share: the bound on the grains a term is matched in (a fraction of the grains, at
    least ``min_docs``), the last resort, where the statuses of the best matches come from, and ``search`` as
    ``search_many`` of one query."""

    def __init__(self, max_doc_fraction: float = 1.0, min_docs: int = 0,
                 in_status: InStatus | None = None, *, last_resort: bool = True) -> None:
        self.max_doc_fraction = max_doc_fraction
        self.min_docs = min_docs
        self.last_resort = last_resort  # the rarest term past the bound, when no other is left (see rare_terms)
        # Which of some grains have one of some statuses: a query, unless the caller has a better source (a
        # retrieval asks its mirror).
        self.in_status = in_status or grains_in_status

    def search(self, query: str, *, limit: int, statuses: Sequence[str], max_terms: int) -> list[tuple[int, float]]:
        return self.search_many([query], limit=limit, statuses=statuses, max_terms=max_terms)[0]

    def search_many(
        self, queries: Sequence[str], *, limit: int, statuses: Sequence[str], max_terms: int
    ) -> list[list[tuple[int, float]]]:
        raise NotImplementedError


class Fts5Search(_Search):
    """SQLite FTS5 with BM25 (porter stemming) over content and learned cues, kept in sync by triggers.

    Only the query's rare terms are matched (see ``rare_terms``): the index's
    own tokenizer stems the words in a per-connection scratch table, and the
    vocabulary table gives their document frequencies, so a query never pays
    for scanning the postings of words found in most grains.
    """

    def search_many(
        self, queries: Sequence[str], *, limit: int, statuses: Sequence[str], max_terms: int
    ) -> list[list[tuple[int, float]]]:
        word_lists = [terms(q, max_terms=64) for q in queries]
        if not statuses or not any(word_lists):
            return [[] for _ in queries]
        # Learned cues (column 2) count for CUE_WEIGHT of what the same words count for in the content.
        bm25 = f"bm25(grain_fts, 1.0, {float(S('CUE_WEIGHT'))!r})"
        best = (f"SELECT f.rowid, -{bm25} AS score FROM grain_fts f WHERE grain_fts MATCH %s "
                f"ORDER BY {bm25}, f.rowid LIMIT %s")
        joined = (f"SELECT f.rowid, -{bm25} AS score FROM grain_fts f JOIN grains_grain g ON g.id = f.rowid "
                  f"WHERE grain_fts MATCH %s AND g.status IN ({marks(statuses)}) ORDER BY {bm25}, f.rowid LIMIT %s")
        # A common term matched as the last resort: only the newest grains that have it, as many as the bound
        # (FTS5 walks its matches newest first and stops there), ranked among themselves.
        newest = (f"SELECT f.rowid AS rowid, -{bm25} AS score FROM grain_fts f WHERE grain_fts MATCH %s "
                  "ORDER BY f.rowid DESC LIMIT %s")
        best_newest = f"SELECT rowid, score FROM ({newest}) ORDER BY score DESC, rowid LIMIT %s"
        joined_newest = (f"SELECT w.rowid, w.score FROM ({newest}) w JOIN grains_grain g ON g.id = w.rowid "
                         f"WHERE g.status IN ({marks(statuses)}) ORDER BY w.score DESC, w.rowid LIMIT %s")
        sql = {(False, False): best, (False, True): joined, (True, False): best_newest, (True, True): joined_newest}
        with connection.cursor() as cursor:
            chosen_lists, window = self._choose(cursor, word_lists, max_terms)

            def ranked(chosen: tuple[list[str], bool], count: int, of_status: bool) -> list[tuple[int, float]]:
                words, common = chosen  # the statement by (common, of_status), its parameters in their order
                cursor.execute(sql[common, of_status], [fts5_or(words), *([window] if common else []),
                                                        *(statuses if of_status else []), count])
                return cursor.fetchall()

            return _best_of_status([c if c[0] else None for c in chosen_lists], ranked, limit=limit,
                                   statuses=statuses, in_status=self.in_status)

    def _choose(self, cursor, word_lists: list[list[str]],  # noqa: ANN001 - a DB cursor
                max_terms: int) -> tuple[list[tuple[list[str], bool]], int]:
        """The rare terms of each word list (and whether they are a common one, the last resort), stemmed and
        counted in one round for all of them; and the bound on the grains a term is matched in."""
        words = sorted({w for ws in word_lists for w in ws})
        if not words:
            return [([], False) for _ in word_lists], 0

        def look_up(missing: list[str]) -> dict[str, str]:
            cursor.executemany("INSERT INTO temp.flux_probe(rowid, w) VALUES (%s, %s)", list(enumerate(missing, 1)))
            cursor.execute("SELECT doc, term FROM temp.flux_probe_vocab")
            found = {missing[doc - 1]: term for doc, term in cursor.fetchall()}
            cursor.execute("INSERT INTO temp.flux_probe(flux_probe) VALUES ('delete-all')")
            return found

        stems = _stems.of("fts5", words, look_up)
        cursor.execute("SELECT max(id) FROM grains_grain")  # the grain count, near enough, in O(log n)
        total = cursor.fetchone()[0] or 0
        doc_freq = _doc_freq(cursor, sorted(set(stems.values())), total)
        return _rare_terms_of(word_lists, stems, doc_freq, max_terms=max_terms, total=total,
                              max_docs=max(self.max_doc_fraction * total, self.min_docs), last_resort=self.last_resort)


FIRST_PASS = 2  # the best limit x this many matches are ranked before their statuses are looked up
Prepared = TypeVar("Prepared")


def _best_of_status(
    queries: list[Prepared | None], ranked: Callable[[Prepared, int, bool], list[tuple[int, float]]], *,
    limit: int, statuses: Sequence[str], in_status: InStatus,
) -> list[list[tuple[int, float]]]:
    """Each query's best ``limit`` (grain id, score) among grains with one of ``statuses`` (none for a query of
    None), both backends alike: ``ranked(query, count, of_status)`` ranks the best ``count`` matches of a query,
    of any status or, with ``of_status``, of ``statuses``.

    Ranked first, the statuses looked up for the best few after, for every query together (a store searches
    for each of its grains): joining every match with its grain's row reads the grain table all over (on SQLite
    at 1,000,000 grains five times the search itself; on PostgreSQL a planner without fresh statistics joins
    every posting). When too few of the best have a wanted status, the join decides. Ties go to the lower id
    either way.
    """
    first = [ranked(query, limit * FIRST_PASS, False) if query is not None else [] for query in queries]
    wanted = in_status(sorted({gid for rows in first for gid, _ in rows}), statuses)
    results = []
    for query, rows in zip(queries, first, strict=True):
        hits = [(gid, score) for gid, score in rows if gid in wanted][:limit]
        if len(hits) < limit and len(rows) == limit * FIRST_PASS:  # more matches below: the join decides
            hits = ranked(query, limit, True)
        results.append([(gid, max(score, 1e-9)) for gid, score in hits])
    return results


def _rare_terms_of(word_lists: list[list[str]], stems: dict[str, str], doc_freq: dict[str, int], *, max_terms: int,
                   total: int, max_docs: float, last_resort: bool) -> tuple[list[tuple[list[str], bool]], int]:
    """Each word list's ``rare_terms`` and whether they are a common term, past ``max_docs`` (the last resort),
    with the bound on the grains a term is matched in (both backends choose so)."""
    chosen = []
    for words in word_lists:
        rare = rare_terms(words, stems, doc_freq, max_terms=max_terms, max_docs=max_docs, grains=total,
                          last_resort=last_resort)
        chosen.append((rare, bool(rare) and doc_freq[stems[rare[0]]] > max_docs))
    return chosen, math.floor(max_docs)


# BM25's term-frequency saturation and length normalisation, the values FTS5 uses.
K1, B = 1.2, 0.75
# What FTS5 gives a term in half the grains or more: it still counts, for next to nothing.
MIN_IDF = 1e-6

# Graph migrations made these: ``grain_fts_size`` (0008), the grain count and their total length in tokens;
# ``grain_fts_terms`` (0012), rows of differences of each lexeme's document frequency; ``grain_fts_postings``
# (0013), per grain and lexeme its occurrences in the content and in the learned cues and the grain's length.
_PG_STEMS = ("SELECT w, (SELECT lexeme FROM unnest(to_tsvector('english', w)) ORDER BY positions[1] LIMIT 1) "
             "FROM unnest(%s::text[]) w")
_PG_SIZE = "SELECT coalesce(sum(grains), 0)::bigint, coalesce(sum(tokens), 0)::bigint FROM grain_fts_size"
# A lexeme's document frequency: the sum of its rows of differences (graph migration 0012).
_PG_DOC_FREQ = "SELECT lexeme, sum(docs) FROM grain_fts_terms WHERE lexeme = ANY(%s) GROUP BY lexeme"
# Per grain having one of the query's lexemes, the sum over them (a repeat counts again, as a repeated phrase
# does in FTS5) of idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl)), f counting a cue occurrence
# CUE_WEIGHT: only the postings of those lexemes are read (and the grains' statuses, when joined for them).
_PG_RANK_SQL = """
SELECT p.grain_id, sum(q.idf * f.f * ({k1} + 1) / (f.f + {k1} * (1 - {b} + {b} * p.length / %(avgdl)s::float8)))
  AS score
FROM unnest(%(lexemes)s::text[], %(idfs)s::float8[]) q(lexeme, idf)
  JOIN grain_fts_postings p ON p.lexeme = q.lexeme
  CROSS JOIN LATERAL (SELECT p.content_tf + %(cue_weight)s::float8 * p.cue_tf AS f) f{join}
WHERE {where}
GROUP BY p.grain_id ORDER BY score DESC, p.grain_id LIMIT %(limit)s"""
_PG_JOIN = "\n  JOIN grains_grain g ON g.id = p.grain_id"
_PG_OF_STATUS = "g.status = ANY(%(statuses)s::text[])"
# A common term matched as the last resort (then a query's only term): only among the newest grains that have
# it, as many as the bound.
_PG_NEWEST = ("p.grain_id IN (SELECT grain_id FROM grain_fts_postings WHERE lexeme = (%(lexemes)s::text[])[1] "
              "ORDER BY grain_id DESC LIMIT %(window)s)")
# By (common, of status): the statement.
_PG_RANK = {(common, of_status): _PG_RANK_SQL.format(
    k1=f"{K1!r}::float8", b=f"{B!r}::float8", join=_PG_JOIN if of_status else "",
    where=" AND ".join([*([_PG_OF_STATUS] if of_status else []), *([_PG_NEWEST] if common else [])]) or "true")
    for common in (False, True) for of_status in (False, True)}


class PostgresSearch(_Search):
    """PostgreSQL full-text search (english configuration) over content and learned cues, ranked by BM25.

    Ranks as ``Fts5Search`` does: the same rare terms of the query, stemmed by
    the english configuration, scored by BM25 as FTS5 computes it (a cue
    occurrence counting for CUE_WEIGHT of a content one), ties broken by id,
    from what triggers keep exact: the grain count and mean length, each
    lexeme's document frequency, and its postings (an inverted index, as
    FTS5's, read only for the query's lexemes).
    """

    def search_many(
        self, queries: Sequence[str], *, limit: int, statuses: Sequence[str], max_terms: int
    ) -> list[list[tuple[int, float]]]:
        word_lists = [terms(q, max_terms=64) for q in queries]
        if not statuses or not any(word_lists):
            return [[] for _ in queries]
        with connection.cursor() as cursor:
            cursor.execute(_PG_SIZE)
            grains, tokens = cursor.fetchone()
            chosen_lists, stems, doc_freq, window = self._choose(cursor, word_lists, max_terms, grains)
            params = {"avgdl": tokens / grains if tokens > 0 else 1.0, "cue_weight": float(S("CUE_WEIGHT")),
                      "statuses": list(statuses), "window": window}

            def ranked(chosen: tuple[list[str], bool], count: int, of_status: bool) -> list[tuple[int, float]]:
                words, common = chosen
                lexemes = [stems[w] for w in words]
                cursor.execute(_PG_RANK[common, of_status], {**params, "lexemes": lexemes, "limit": count,
                                                             "idfs": [_idf(grains, doc_freq[lex]) for lex in lexemes]})
                return cursor.fetchall()

            return _best_of_status([c if c[0] else None for c in chosen_lists], ranked, limit=limit,
                                   statuses=statuses, in_status=self.in_status)

    def _choose(
        self, cursor, word_lists: list[list[str]], max_terms: int, total: int,  # noqa: ANN001 - a DB cursor
    ) -> tuple[list[tuple[list[str], bool]], dict[str, str], dict[str, int], int]:
        """The rare terms of each word list (and whether they are a common one, the last resort), with the stems
        and document frequencies, looked up once for all, and the bound on the grains a term is matched in."""
        words = sorted({w for ws in word_lists for w in ws})

        def look_up(missing: list[str]) -> dict[str, str]:
            cursor.execute(_PG_STEMS, [missing])
            return {word: lexeme for word, lexeme in cursor.fetchall() if lexeme}  # a stopword has none

        stems = _stems.of("postgresql", words, look_up)
        doc_freq = _pg_doc_freq(cursor, sorted(set(stems.values())), total)
        chosen, window = _rare_terms_of(word_lists, stems, doc_freq, max_terms=max_terms, total=total,
                                        max_docs=max(self.max_doc_fraction * total, self.min_docs),
                                        last_resort=self.last_resort)
        return chosen, stems, doc_freq, window


def _idf(grains: int, docs: int) -> float:
    """FTS5's inverse document frequency of a term in ``docs`` of ``grains`` grains, floored at MIN_IDF."""
    idf = math.log((grains - docs + 0.5) / (docs + 0.5))
    return idf if idf > 0 else MIN_IDF


class _Stems:
    """Each word's stem by the index's tokenizer (or that it has none), remembered per backend.

    A tokenizer is fixed for the life of a database, so a word is stemmed
    through it once; the words of queries and stored grains repeat, and a
    round trip to the tokenizer costs more than the lookups it spares.
    At most ``limit`` words are kept; then the memory starts again.
    """

    limit = 100_000

    def __init__(self) -> None:
        self._by_backend: dict[str, dict[str, str | None]] = {}

    def of(self, backend: str, words: list[str], look_up: Callable[[list[str]], dict[str, str]]) -> dict[str, str]:
        """The stems of those of ``words`` that have one; ``look_up`` stems the words not known yet."""
        known = self._by_backend.setdefault(backend, {})
        stems, missing = {}, []
        for w in words:  # one get each: another thread may start the memory again meanwhile
            stem = known.get(w, _UNKNOWN)
            if stem is _UNKNOWN:
                missing.append(w)
            else:
                stems[w] = stem
        if missing:
            found = look_up(missing)
            fresh = {w: found.get(w) for w in missing}
            if len(known) + len(fresh) > self.limit:
                known.clear()
            known.update(fresh)
            stems.update(fresh)
        return {w: stem for w, stem in stems.items() if stem is not None}


_UNKNOWN = object()
_stems = _Stems()


class _CommonTerms:
    """Document frequencies of common terms, per database.

    The vocabulary table counts a term's documents by walking its whole
    posting list, so a common term costs in proportion to its frequency while
    a rare one is cheap. Frequencies of at least ``floor`` are kept and read
    again once the store has grown by a quarter (or shrunk) since.
    """

    floor = 200

    def __init__(self) -> None:
        self._by_db: dict[str, dict[str, tuple[int, int]]] = {}

    def known(self, stems: list[str], total: int) -> dict[str, int]:
        cache = self._by_db.setdefault(connection.settings_dict["NAME"], {})
        fresh = {}
        for stem in stems:
            hit = cache.get(stem)
            if hit is not None and hit[1] <= total <= hit[1] * 1.25:
                fresh[stem] = hit[0]
        return fresh

    def remember(self, freq: dict[str, int], total: int) -> None:
        cache = self._by_db.setdefault(connection.settings_dict["NAME"], {})
        cache.update({stem: (df, total) for stem, df in freq.items() if df >= self.floor})


_common = _CommonTerms()


def _doc_freq(cursor, stems: list[str], total: int) -> dict[str, int]:  # noqa: ANN001 - a DB cursor
    """Document frequencies of ``stems`` from the FTS5 vocabulary table; stems it lacks are left out."""
    def look_up(missing: list[str]) -> dict[str, int]:
        cursor.execute(f"SELECT term, doc FROM grain_fts_vocab WHERE term IN ({marks(missing)})", missing)
        return dict(cursor.fetchall())

    return _cached_doc_freq(stems, total, look_up)


def _pg_doc_freq(cursor, stems: list[str], total: int) -> dict[str, int]:  # noqa: ANN001 - a DB cursor
    """Document frequencies of ``stems`` from the table the triggers keep; stems no grain has are left out."""
    def look_up(missing: list[str]) -> dict[str, int]:
        cursor.execute(_PG_DOC_FREQ, [missing])
        return {stem: int(docs) for stem, docs in cursor.fetchall() if docs}

    return _cached_doc_freq(stems, total, look_up)


def _cached_doc_freq(stems: list[str], total: int, look_up: Callable[[list[str]], dict[str, int]]) -> dict[str, int]:
    freq = _common.known(stems, total)
    missing = [s for s in stems if s not in freq]
    if missing:
        looked_up = look_up(missing)
        _common.remember(looked_up, total)
        freq.update(looked_up)
    return freq


@receiver(connection_created)
def create_probe_tables(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    """Scratch tables that stem words with the index's own tokenizer, once per new SQLite connection.

    Created outside any transaction, so no rollback takes them away.
    """
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.flux_probe USING fts5("
                       "w, content='', tokenize='porter unicode61 remove_diacritics 2')")
        cursor.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.flux_probe_vocab USING fts5vocab("
                       "temp, flux_probe, 'instance')")


def entry_search(*, max_docs: int | None = None,
                 in_status: InStatus | None = None) -> EntrySearch:
    """The backend for the current database.

    Terms in more grains than ``max_docs`` are never matched: a text of
    common words alone finds nothing, so a store's cost stays flat however
    its grains are worded. By default the limit is COMMON_TERM_FRACTION of the
    grains, at least COMMON_TERM_MIN_DOCS, and a query left with no other term
    matches its rarest (see ``rare_terms``), among the newest grains that have
    it, as many as the limit: no term is ranked over more grains than that.
    ``in_status`` (by default a query) says which of the best matches have a wanted status.
    """
    fraction, docs, last_resort = ((0.0, max_docs, False) if max_docs is not None
                                   else (S("COMMON_TERM_FRACTION"), S("COMMON_TERM_MIN_DOCS"), True))
    if connection.vendor == "postgresql":
        return PostgresSearch(fraction, docs, in_status, last_resort=last_resort)
    return Fts5Search(fraction, docs, in_status, last_resort=last_resort)


FOLD_CHUNK = 50_000  # rows of differences folded per transaction
_FOLD = """
WITH chunk AS (SELECT id FROM grain_fts_terms WHERE id > %(after)s AND id <= %(last)s ORDER BY id LIMIT %(rows)s
               FOR UPDATE SKIP LOCKED),
     folded AS (DELETE FROM grain_fts_terms t USING chunk WHERE t.id = chunk.id RETURNING t.id, t.lexeme, t.docs),
     kept AS (INSERT INTO grain_fts_terms (lexeme, docs) SELECT lexeme, sum(docs) FROM folded GROUP BY lexeme
              HAVING sum(docs) <> 0 RETURNING 1)
SELECT (SELECT max(id) FROM folded), (SELECT count(*) FROM folded), (SELECT count(*) FROM kept)"""


def search_terms_fold() -> int:
    """PostgreSQL: fold the rows of differences that keep each lexeme's document frequency (graph migration 0012),
    FOLD_CHUNK rows per transaction, each chunk's rows of a lexeme into one (the beat runs this every
    PRUNE_SECONDS, as the change log's prune: a lexeme is down to a row or two after a pass or two); how many rows
    went. Nothing to do on SQLite, where FTS5 keeps its vocabulary."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM grain_fts_terms")
        after, last, gone = 0, cursor.fetchone()[0], 0
        while after < last:
            with transaction.atomic():
                cursor.execute(_FOLD, {"after": after, "last": last, "rows": FOLD_CHUNK})
                reached, folded, kept = cursor.fetchone()
            if not folded:
                break
            after, gone = reached, gone + folded - kept
    return gone
