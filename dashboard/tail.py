"""Following an append-only log whose ids may commit out of order (pure, no Django).

On SQLite one writer commits at a time, so a log's ids become visible in order. On PostgreSQL a sequence
hands an id out at insert and transactions commit in any order: a reader that only asks for ids above the
last one it saw skips an event whose transaction was still open when a later one committed. A ``LogTail``
remembers the ids below its last one that it has not seen (gaps, as ranges) for ``settle_seconds`` and asks
for them again with the new ones; an id is taken once. A gap that never fills (a rolled-back insert, a
sequence's cached values) is forgotten once it is older than that, and at most ``max_gaps`` are kept (the
lowest go first).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class LogTail:
    last: int  # the highest id taken (or the log's last id when the tail started)
    settle_seconds: float = 10.0
    max_gaps: int = 100
    # [low, high, when first missed]: ids not seen yet below ``last``, ascending, disjoint
    gaps: list[tuple[int, int, float]] = field(default_factory=list)

    def late(self) -> list[tuple[int, int]]:
        """The (low, high) id ranges to read again besides the ids above ``last``."""
        return [(low, high) for low, high, _ in self.gaps]

    def take(self, ids: Iterable[int], now: float) -> set[int]:
        """Of ``ids`` (read from the log at ``now``), those not taken before; the rest were delivered already."""
        fresh = set()
        for gid in sorted(set(ids)):
            if gid > self.last:
                if gid > self.last + 1:
                    self.gaps.append((self.last + 1, gid - 1, now))
                self.last = gid
                fresh.add(gid)
            elif self._fill(gid):
                fresh.add(gid)
        self.gaps = [gap for gap in self.gaps if now - gap[2] <= self.settle_seconds][-self.max_gaps:]
        return fresh

    def _fill(self, gid: int) -> bool:
        """Take ``gid`` out of the gap that holds it; whether one did."""
        for i, (low, high, since) in enumerate(self.gaps):
            if low <= gid <= high:
                self.gaps[i:i + 1] = [(a, b, since) for a, b in ((low, gid - 1), (gid + 1, high)) if a <= b]
                return True
        return False
