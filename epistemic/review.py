"""The periodic epistemic pass: grains stored since the last pass, compared again with their nearest grains.

On store the rules already ran; the pass adds the LLM judge (EPISTEMIC_LLM_JUDGE)
for the near pairs the rules leave unrelated, and catches up grains stored
while the epistemic layer was switched off. Where it got to is kept in the
activity log (``epistemic.pass_completed``), so a rerun resumes there.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.conf import flux_setting as S
from core.errors import LLMBadAnswer, LLMUnavailable
from core.llm import ollama_generate_json
from epistemic.judge import BadVerdict, judge_prompt, parse_verdict
from epistemic.rules import Relation, relation_between
from epistemic.services import apply_found, near_pairs, when
from grains.activity import activity_record
from grains.models import ActivityEvent, Grain
from graph.models import RELATION_KINDS, Conduit
from graph.selectors import RETRIEVABLE
from graph.services.conduits import lexical_neighbours

DONE = "epistemic.pass_completed"
Judge = Callable[[str, str], "Relation | None"]


def llm_judge(new: str, old: str) -> Relation | None:
    """The configured LLM's verdict on a pair (LLMUnavailable / LLMBadAnswer / BadVerdict on failure)."""
    return parse_verdict(ollama_generate_json(judge_prompt(new, old)))


@dataclass(frozen=True)
class PassResult:
    examined: int
    pairs: int
    found: int
    judged: int
    bad_verdicts: int
    last_grain_id: int
    error: str = ""


def _watermark() -> int:
    payload = ActivityEvent.objects.filter(kind=DONE).order_by("-id").values_list("payload", flat=True).first()
    return int(payload.get("last_grain_id", 0)) if payload else 0


def _related(pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    ids = {g for pair in pairs for g in pair}
    rows = Conduit.objects.filter(kind__in=RELATION_KINDS).filter(
        Q(source_id__in=ids) | Q(target_id__in=ids)).values_list("source_id", "target_id")
    return {(min(a, b), max(a, b)) for a, b in rows}


def epistemic_pass(*, now: datetime | None = None, batch: int | None = None,
                   judge: Judge | None = None) -> PassResult:
    """Compare up to ``batch`` (EPISTEMIC_PASS_BATCH) grains stored since the last pass with their nearest.

    The LLM (``judge``, default the configured Ollama) is asked outside any
    transaction and only when EPISTEMIC_LLM_JUDGE is on; each relation found is
    written in its own short transaction and applied once, so the pass is safe
    to run twice or beside the REST service. When the LLM cannot be reached the
    pass stops before that grain and the next one resumes there.
    """
    now = now or timezone.now()
    since = _watermark()
    grains = list(Grain.objects.filter(pk__gt=since, status__in=RETRIEVABLE)
                  .order_by("pk")[: batch or S("EPISTEMIC_PASS_BATCH")])
    if not grains:
        return PassResult(0, 0, 0, 0, 0, since)
    use_judge = judge or (llm_judge if S("EPISTEMIC_LLM_JUDGE") else None)
    pairs = sorted(near_pairs(grains, lexical_neighbours(grains, limit=S("EPISTEMIC_CANDIDATES"))),
                   key=lambda p: (p[1], p[0]))
    related = _related(pairs)
    known = Grain.objects.in_bulk({g for pair in pairs for g in pair})
    found = judged = bad = 0
    last, error = grains[-1].pk, ""
    for old_id, new_id in pairs:
        old, new = known.get(old_id), known.get(new_id)
        if old is None or new is None:
            continue
        relation = relation_between(new.content, old.content, new_time=when(new), old_time=when(old))
        by = "rules"
        if relation is None and use_judge is not None and (old_id, new_id) not in related:
            try:
                relation, by = use_judge(new.content, old.content), "llm"
                judged += 1
            except (BadVerdict, LLMBadAnswer):
                bad += 1
                continue
            except LLMUnavailable as exc:
                last, error = max(since, new_id - 1), exc.message
                break
        if relation is not None:
            with transaction.atomic():
                created = apply_found(new, old, relation, asserted_by=by, now=now)
            found += created is not None
    result = PassResult(len(grains), len(pairs), found, judged, bad, last, error)
    activity_record(DONE, asdict(result), now=now)
    return result
