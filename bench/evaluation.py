"""LoCoMo-format evaluation data and retrieval metrics (pure, no Django)."""
from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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
    """Evidence recall@5, recall@10 and MRR (over the top 10) accumulated question by question.

    Recall is any-hit: a question counts as found when any of its evidence turns is in the top k. Beside it,
    ``evidence@10`` is the mean fraction of a question's evidence turns in the top 10 (what a multi-hop
    question needs all of), and ``categories`` the same figures per LoCoMo category (1 multi-hop,
    2 temporal, 3 open-domain, 4 single-hop).
    """

    questions: int = 0
    hits5: int = 0
    hits10: int = 0
    rr: float = 0.0
    fraction10: float = 0.0
    by_category: dict[int, Scores] = field(default_factory=dict)

    def add(self, ranked: Sequence[int], evidence: set[int], category: int | None = None) -> None:
        self.questions += 1
        top = list(ranked[:10])
        first = next((i for i, gid in enumerate(top, start=1) if gid in evidence), None)
        if first is not None:
            self.hits10 += 1
            self.hits5 += first <= 5
            self.rr += 1.0 / first
        self.fraction10 += len(evidence & set(top)) / len(evidence) if evidence else 0.0
        if category is not None:
            self.by_category.setdefault(category, Scores()).add(ranked, evidence)

    def as_dict(self) -> dict:
        n = max(self.questions, 1)
        figures: dict = {"recall@5": round(self.hits5 / n, 4), "recall@10": round(self.hits10 / n, 4),
                         "mrr": round(self.rr / n, 4), "evidence@10": round(self.fraction10 / n, 4)}
        if self.by_category:
            figures["categories"] = {str(c): {"questions": s.questions, **s.as_dict()}
                                     for c, s in sorted(self.by_category.items())}
        return figures
