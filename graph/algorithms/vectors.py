"""An append-only table of unit vectors with nearest-neighbour search by dot product (pure, numpy only)."""
from __future__ import annotations

import numpy as np


class VectorTable:
    """Rows of (id, unit vector), grown in place (capacity doubles), searched exhaustively.

    An id may be appended again (a grain embedded anew): ``nearest`` returns
    each id once. Exhaustive search is a matrix-vector product: about 40
    million multiply-adds at 100,000 grains of 384 dimensions.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.size = 0
        self._ids = np.empty(0, dtype=np.int64)
        self._rows = np.empty((0, dim), dtype=np.float32)

    def append(self, ids: np.ndarray, rows: np.ndarray) -> None:
        if len(ids) != len(rows) or (len(rows) and rows.shape[1] != self.dim):
            raise ValueError(f"expected {len(ids)} rows of {self.dim} values, got {rows.shape}")
        need = self.size + len(ids)
        if need > len(self._ids):
            capacity = max(need, 2 * len(self._ids), 1024)
            ids_grown = np.empty(capacity, dtype=np.int64)
            rows_grown = np.empty((capacity, self.dim), dtype=np.float32)
            ids_grown[: self.size], rows_grown[: self.size] = self._ids[: self.size], self._rows[: self.size]
            self._ids, self._rows = ids_grown, rows_grown
        self._ids[self.size : need] = ids
        self._rows[self.size : need] = rows
        self.size = need

    def rows(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the ids and vectors of rows ``start`` to ``stop``, in the order appended."""
        return self._ids[start:stop].copy(), self._rows[start:stop].copy()

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` ids most similar to ``query`` (cosine, for unit vectors), nearest first."""
        if self.size == 0 or k <= 0:
            return []
        sims = self._rows[: self.size] @ query.astype(np.float32)
        take = min(self.size, 2 * k)  # room for ids appended twice
        top = np.argpartition(-sims, take - 1)[:take] if take < self.size else np.arange(self.size)
        found: dict[int, float] = {}
        for i in top[np.argsort(-sims[top], kind="stable")]:
            found.setdefault(int(self._ids[i]), float(sims[i]))
            if len(found) == k:
                break
        return list(found.items())


class ApproximateIndex:
    """An HNSW graph of unit vectors (usearch), searched approximately in about a tenth of a millisecond at
    100,000 or 1,000,000 rows, where the exhaustive product costs milliseconds to tens of milliseconds.

    Vectors are kept as int8 (384 bytes each at 384 dimensions), each scaled
    so its largest component is 127 before rounding (cosine ignores scale);
    usearch's own conversion of a unit vector would leave about 7 levels per
    component and find 95% of the exact 30 nearest instead of 99%. An id added
    again replaces its vector. One thread: the service's cores belong to its
    requests. ``save`` and ``load`` round-trip through one file.
    """

    def __init__(self, dim: int, *, connectivity: int = 16, expansion_add: int = 128,
                 expansion_search: int = 128) -> None:
        from usearch.index import Index

        self.dim = dim
        self._index = Index(ndim=dim, metric="cos", dtype="i8", connectivity=connectivity,
                            expansion_add=expansion_add, expansion_search=expansion_search)

    @property
    def size(self) -> int:
        return len(self._index)

    def append(self, ids: np.ndarray, rows: np.ndarray) -> None:
        if len(ids) != len(rows) or (len(rows) and rows.shape[1] != self.dim):
            raise ValueError(f"expected {len(ids)} rows of {self.dim} values, got {rows.shape}")
        if not len(ids):
            return
        ids = np.asarray(ids, dtype=np.uint64)
        ids, last = np.unique(ids[::-1], return_index=True)  # the last vector of an id given twice wins
        rows = rows[::-1][last]
        present = np.asarray(self._index.contains(ids), dtype=bool).reshape(-1)
        if present.any():
            self._index.remove(ids[present])
        self._index.add(ids, _quantise(rows), threads=1)

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """About the ``k`` ids most similar to ``query`` (cosine), nearest first."""
        if self.size == 0 or k <= 0:
            return []
        found = self._index.search(_quantise(query)[0], min(k, self.size), threads=1)
        return [(int(key), 1.0 - float(distance)) for key, distance in zip(found.keys, found.distances, strict=True)]

    def dump(self) -> bytes:
        """The whole index as bytes, as ``load`` reads it from a file."""
        return bytes(self._index.save())

    @classmethod
    def load(cls, path: str, dim: int, *, expansion_search: int = 128) -> ApproximateIndex:
        """The index saved at ``path``; ValueError when the file is not an index of ``dim`` dimensions."""
        from usearch.index import Index

        index = cls.__new__(cls)
        index.dim = dim
        try:
            index._index = Index.restore(path)
        except Exception as exc:  # usearch raises RuntimeError or its own errors on a bad file
            raise ValueError(f"{path} is not a readable vector index: {exc}") from exc
        if index._index is None or index._index.ndim != dim:
            raise ValueError(f"{path} is not a vector index of {dim} dimensions")
        index._index.expansion_search = expansion_search
        return index


def _quantise(rows: np.ndarray) -> np.ndarray:
    """Rows as int8, each scaled so its largest component is 127."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float32))
    peak = np.abs(rows).max(axis=1, keepdims=True)
    return np.ascontiguousarray(np.rint(rows * (127.0 / np.clip(peak, 1e-12, None))).astype(np.int8))
