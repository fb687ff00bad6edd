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
