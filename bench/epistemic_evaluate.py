"""Precision and recall of the epistemic rules on labelled pairs: ``python -m bench.epistemic_evaluate``.

A prediction is correct only when both kind and source match. Precision of a kind is over the
pairs where the rules said that kind; recall over the pairs labelled with it; "overall" pools
every relation kind (a pair labelled None counts only against precision when something fires).
"""
from __future__ import annotations

import time
from collections.abc import Iterable

from bench.epistemic_examples import HELD_OUT, LABELLED_PAIRS
from epistemic.rules import relation_between

KINDS = ("supports", "contradicts", "supersedes", "caused_by")
Pair = tuple[str, str, str | None, str | None]


def score(pairs: Iterable[Pair]) -> dict:
    """Per kind and overall: tp, predicted, expected, precision, recall; the misses; time per pair.

    Invariant: precision and recall are 1.0 when there is nothing to measure (no predictions,
    no expected relations), so an empty kind never fails a threshold.
    """
    pairs = list(pairs)
    started = time.perf_counter()
    found = [relation_between(new, old) for old, new, _, _ in pairs]
    elapsed = time.perf_counter() - started
    counts = {k: {"tp": 0, "predicted": 0, "expected": 0} for k in (*KINDS, "overall")}
    misses: list[dict] = []
    for (old, new, kind, source), got in zip(pairs, found, strict=False):
        got_pair = (got.kind, got.source) if got else (None, None)
        _tally(counts, (kind, source), got_pair)
        if got_pair != (kind, source):
            misses.append({"old": old, "new": new, "expected": (kind, source), "got": got_pair,
                           "reason": got.reason if got else ""})
    for c in counts.values():
        c["precision"] = c["tp"] / c["predicted"] if c["predicted"] else 1.0
        c["recall"] = c["tp"] / c["expected"] if c["expected"] else 1.0
    unrelated_fired = sum(1 for (_, _, kind, _), got in zip(pairs, found, strict=False) if kind is None and got)
    return {"kinds": counts, "misses": misses, "unrelated_fired": unrelated_fired, "pairs": len(pairs),
            "ms_per_pair": 1000 * elapsed / max(len(pairs), 1)}


def _tally(counts: dict, expected: tuple, got: tuple) -> None:
    for bucket in {expected[0], "overall"} if expected[0] else set():
        counts[bucket]["expected"] += 1
    for bucket in {got[0], "overall"} if got[0] else set():
        counts[bucket]["predicted"] += 1
    if expected[0] and got == expected:
        counts[expected[0]]["tp"] += 1
        counts["overall"]["tp"] += 1


def _label(kind_source: tuple) -> str:
    kind, source = kind_source
    return "none" if kind is None else f"{kind}({source})"


def report(result: dict) -> str:
    lines = [f"{'kind':<12} {'precision':>9} {'recall':>7} {'tp':>4} {'pred':>5} {'exp':>4}"]
    for kind, c in result["kinds"].items():
        lines.append(f"{kind:<12} {c['precision']:>9.2f} {c['recall']:>7.2f} {c['tp']:>4} "
                     f"{c['predicted']:>5} {c['expected']:>4}")
    lines.append(f"unrelated pairs with a relation: {result['unrelated_fired']}")
    lines.append(f"misses ({len(result['misses'])}):")
    for m in result["misses"]:
        lines.append(f"  {_label(m['expected'])} -> {_label(m['got'])}: {m['old']!r} / {m['new']!r}")
        if m["reason"]:
            lines.append(f"      {m['reason']}")
    total = result["ms_per_pair"] * result["pairs"]
    lines.append(f"{result['pairs']} pairs in {total:.1f} ms: {result['ms_per_pair']:.3f} ms per pair "
                 "(each grain read for the first time)")
    return "\n".join(lines)


def main() -> None:
    print(f"labelled pairs (the rules were written against these):\n{report(score(LABELLED_PAIRS))}\n")
    print(f"held-out pairs (written after the rules, never used to change them):\n{report(score(HELD_OUT))}")


if __name__ == "__main__":
    main()
