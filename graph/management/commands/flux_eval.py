"""Evidence recall of Flux retrieval against plain BM25 on a LoCoMo-format file."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from fluxsite.conf import flux_setting as S
from fluxsite.instance import temporary_database
from graph.evaluation import Scores, questions, turns
from graph.search import Fts5Search
from graph.selectors import RETRIEVABLE
from graph.services import grain_retrieve
from grains.services import grain_store_batch

CALLER = "flux-eval:test"


def load_samples(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CommandError(f"--data {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise CommandError(f"--data {path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(s, dict) and "conversation" in s for s in data):
        raise CommandError(f"--data {path}: expected a list of LoCoMo samples with 'conversation' and 'qa'")
    return data


class Command(BaseCommand):
    help = "Load a LoCoMo-format file into a temporary instance and score Flux retrieval against BM25."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--data", required=True, type=Path, help="LoCoMo-format JSON file")
        parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")

    def handle(self, *args, **opts) -> None:
        samples = load_samples(opts["data"])
        with temporary_database():
            result = evaluate(samples, progress=not opts.get("quiet_progress"))
        self.stdout.write(f"questions: {result['questions']}")
        for name in ("flux", "bm25"):
            fig = result[name]
            self.stdout.write(f"{name:>5}  recall@5 {fig['recall@5']:.3f}  recall@10 {fig['recall@10']:.3f}  "
                              f"mrr {fig['mrr']:.3f}")
        if opts["json"]:
            self.stdout.write(json.dumps(result))


def evaluate(samples: list[dict], *, progress: bool = True) -> dict:
    """Store every turn, then ask every question of categories 1-4 of both methods, at one fixed time."""
    now = timezone.now()
    grain_of: dict[tuple[str, str], int] = {}
    all_turns = list(turns(samples))
    cap = S("MAX_GRAINS_PER_CALL")
    with tqdm(total=len(all_turns), desc="loading turns", unit="turn", file=sys.stderr, disable=not progress) as bar:
        for start in range(0, len(all_turns), cap):
            chunk = all_turns[start : start + cap]
            items = [{"content": t.content, "provenance": "observed", "context": t.context,
                      "occurred_at": t.occurred_at} for t in chunk]
            for turn, stored in zip(chunk, grain_store_batch(items=items, caller=CALLER, now=now)):
                grain_of[(turn.sample, turn.dia_id)] = stored.grain.pk
            bar.update(len(chunk))
    asked = list(questions(samples, set(grain_of)))
    flux, bm25 = Scores(), Scores()
    search = Fts5Search()
    for q in tqdm(asked, desc="asking questions", unit="q", file=sys.stderr, disable=not progress):
        evidence = {grain_of[(q.sample, d)] for d in q.evidence}
        found = grain_retrieve(query=q.text, caller=CALLER, limit=10, enforce_feedback=False, now=now)
        flux.add([g.id for g in found.grains], evidence)
        hits = search.search(q.text, limit=10, statuses=RETRIEVABLE, max_terms=S("QUERY_MAX_TERMS"))
        bm25.add([gid for gid, _ in hits], evidence)
    return {"questions": flux.questions, "flux": flux.as_dict(), "bm25": bm25.as_dict()}
