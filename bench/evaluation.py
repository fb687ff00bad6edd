"""LoCoMo-format evaluation data and retrieval metrics (pure, no Django)."""
from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

_DIA = re.compile(r"D\d+:\d+")
CATEGORIES = (1, 2, 3, 4)


@dataclass(frozen=True)
class Turn:
    sample: str
    dia_id: str
    speaker: str
    text: str
    context: str
    occurred_at: datetime | None

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    sample: str
    text: str
    category: int
    evidence: tuple[str, ...]


def session_time(raw: str | None) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (None when unparseable)."""
    if not raw:
        return None
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def turns(samples: Sequence[dict]) -> Iterator[Turn]:
    """Every dialogue turn, session by session, in conversation order."""
    for sample in samples:
        conv = sample["conversation"]
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        for n in numbers:
            when = session_time(conv.get(f"session_{n}_date_time"))
            for turn in conv[f"session_{n}"]:
                yield Turn(sample["sample_id"], turn["dia_id"], turn["speaker"], turn["text"],
                           f"{sample['sample_id']}/session_{n}", when)


def questions(samples: Sequence[dict], known: set[tuple[str, str]]) -> Iterator[Question]:
    """Questions of categories 1-4 with their evidence normalised.

    Joined ids are split, ids that name no turn are dropped, and questions left
    without evidence are skipped.
    """
    for sample in samples:
        sid = sample["sample_id"]
        for qa in sample.get("qa", []):
            if qa.get("category") not in CATEGORIES:
                continue
            ids = [d for raw in qa.get("evidence", []) for d in _DIA.findall(str(raw))]
            evidence = tuple(dict.fromkeys(d for d in ids if (sid, d) in known))
            if evidence:
                yield Question(sid, str(qa["question"]), int(qa["category"]), evidence)


def split_by_sample(asked: Sequence[Question], seed: int) -> tuple[list[Question], list[Question]]:
    """Per conversation, a seeded shuffle cut in two: (training half, test half)."""
    train: list[Question] = []
    test: list[Question] = []
    for sample in dict.fromkeys(q.sample for q in asked):
        mine = [q for q in asked if q.sample == sample]
        random.Random(f"{seed}:{sample}").shuffle(mine)
        half = len(mine) // 2
        train += mine[:half]
        test += mine[half:]
    return train, test


@dataclass
class Scores:
    """Evidence recall@5, recall@10 and MRR (over the top 10) accumulated question by question."""

    questions: int = 0
    hits5: int = 0
    hits10: int = 0
    rr: float = 0.0

    def add(self, ranked: Sequence[int], evidence: set[int]) -> None:
        self.questions += 1
        first = next((i for i, gid in enumerate(ranked[:10], start=1) if gid in evidence), None)
        if first is not None:
            self.hits10 += 1
            self.hits5 += first <= 5
            self.rr += 1.0 / first

    def as_dict(self) -> dict[str, float]:
        n = max(self.questions, 1)
        return {"recall@5": round(self.hits5 / n, 4), "recall@10": round(self.hits10 / n, 4),
                "mrr": round(self.rr / n, 4)}
