"""Evidence recall of Flux retrieval against plain BM25 on LoCoMo-format files, each in its own instance.

Tuning discipline: ``--data`` takes several files (e.g. the dev file the defaults are tuned on and the
validation file that confirms them); each is loaded into a fresh temporary instance and reported on its own,
overall and per question category, beside BM25 on the same index.
"""
from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.db import connection
from django.db.models import Count
from django.test import override_settings
from django.utils import timezone
from tqdm import tqdm

from bench.evaluation import Question, Scores, questions, split_by_sample, turns
from bench.instance import temporary_database
from core.bulk import marks
from core.commands import FluxCommand
from core.conf import flux_setting as S
from graph.algorithms.text import fts5_or, terms
from graph.models import RELATION_KINDS, Conduit
from graph.search import Fts5Search, PostgresSearch
from graph.selectors import RETRIEVABLE
from graph.semantic import semantic_enabled
from memory.dreaming import dream_run
from memory.retrieval import feedback_record, grain_retrieve
from memory.store import grain_store_batch
from memory.upkeep import cluster_rebuild

CALLER = "flux-eval:test"
LEARNER = "flux-eval-learner:test"


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


class Command(FluxCommand):
    help = "Load a LoCoMo-format file into a temporary instance and score Flux retrieval against BM25."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", required=True, type=Path, action="append",
                            help="LoCoMo-format JSON file; repeat it to evaluate several files, each in its own "
                                 "instance")
        parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
        parser.add_argument("--learn", action="store_true",
                            help="measure a test half of the questions before and after replaying the other half "
                                 "with feedback, as an agent would")
        parser.add_argument("--seed", type=int, default=7, help="seed of the train/test split (--learn)")
        parser.add_argument("--ablate", action="store_true",
                            help="also measure Flux with each part switched off in turn (propagation, cluster "
                                 "neighbours, semantic entry, the date boost) and BM25 without stemming; with "
                                 "--learn, the after-figure again with the learned ranker off and with cue "
                                 "learning off")
        parser.add_argument("--dream", action="store_true",
                            help="then run dream cycles until no clump is left and measure Flux again")

    def handle(self, *args: object, **opts: object) -> None:
        paths: list[Path] = opts["data"]
        loaded = [(path, load_samples(path)) for path in paths]  # every file checked before any work
        results = {}
        for path, samples in loaded:
            if len(loaded) > 1:
                self.stdout.write(f"== {path.name}")
            results[path.stem] = self._one(samples, opts)
        if opts["json"]:
            only = next(iter(results.values()))
            self.stdout.write(json.dumps(only if len(results) == 1 else {"files": results}))

    def _one(self, samples: list[dict], opts: dict) -> dict:
        with temporary_database():
            if opts["learn"]:
                result = evaluate_learning(samples, seed=opts["seed"])
                rows = ("before", "after", *([a[0] for a in LEARN_ABLATIONS] if opts["ablate"] else []))
            else:
                result = evaluate(samples, ablate=opts["ablate"], dream=opts["dream"])
                rows = ("flux", "bm25", *(["no_propagation", *(a[0] for a in ABLATIONS), "bm25_unstemmed"]
                                          if opts["ablate"] else []),
                        *(["after_dreams"] if opts["dream"] else []))
        if opts["learn"] and opts["ablate"]:
            for name, setting, off in LEARN_ABLATIONS:
                with temporary_database(), override_settings(FLUX={**settings.FLUX, setting: off}):
                    result[name] = evaluate_learning(samples, seed=opts["seed"])["after"]
        self.stdout.write(f"questions: {result['questions']}")
        for key in ("graph", "dreams"):
            if key in result:
                self.stdout.write(f"{key}: {json.dumps(result[key])}")
        for name in rows:
            self.stdout.write(f"{name:>15}  {_figures(result[name])}")
        for name in ("flux", "bm25", "before", "after"):
            for category, fig in result.get(name, {}).get("categories", {}).items():
                self.stdout.write(f"{name:>10} cat {category} ({CATEGORY_NAMES[int(category)]}, "
                                  f"{fig['questions']} q)  {_figures(fig)}")
        return result


CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _figures(fig: dict) -> str:
    return (f"recall@5 {fig['recall@5']:.3f}  recall@10 {fig['recall@10']:.3f}  mrr {fig['mrr']:.3f}  "
            f"evidence@10 {fig['evidence@10']:.3f}")


def load(samples: list[dict], now: datetime) -> dict[tuple[str, str], int]:
    """Store every turn (batches in conversation order); returns (sample, dia_id) -> grain id."""
    grain_of: dict[tuple[str, str], int] = {}
    all_turns = list(turns(samples))
    cap = S("MAX_GRAINS_PER_CALL")
    with tqdm(total=len(all_turns), desc="loading turns", unit="turn", file=sys.stderr) as bar:
        for start in range(0, len(all_turns), cap):
            chunk = all_turns[start : start + cap]
            items = [{"content": t.content, "provenance": "observed", "context": t.context,
                      "occurred_at": t.occurred_at} for t in chunk]
            for turn, stored in zip(chunk, grain_store_batch(items=items, caller=CALLER, now=now), strict=False):
                grain_of[(turn.sample, turn.dia_id)] = stored.grain.pk
            bar.update(len(chunk))
    return grain_of


def ask(asked: list[Question], grain_of: dict[tuple[str, str], int], now: datetime, desc: str,
        propagation: bool = True) -> Scores:
    scores = Scores()
    for q in tqdm(asked, desc=desc, unit="q", file=sys.stderr):
        found = grain_retrieve(query=q.text, caller=CALLER, limit=10, enforce_feedback=False,
                               propagation=propagation, now=now)
        scores.add([g.id for g in found.grains], {grain_of[(q.sample, d)] for d in q.evidence}, q.category)
    return scores


def evaluate_learning(samples: list[dict], *, seed: int) -> dict:
    """Test half before and after replaying the training half with feedback (the test half gives none)."""
    now = timezone.now()
    grain_of = load(samples, now)
    organise(now)
    train, test = split_by_sample(list(questions(samples, set(grain_of))), seed)
    before = ask(test, grain_of, now, "test half, before")
    for q in tqdm(train, desc="replaying the training half", unit="q", file=sys.stderr):
        evidence = {grain_of[(q.sample, d)] for d in q.evidence}
        found = grain_retrieve(query=q.text, caller=LEARNER, limit=10, enforce_feedback=False, now=now)
        for grain in found.grains:
            feedback_record(trace_id=found.trace_id, grain_id=grain.id, useful=grain.id in evidence,
                            caller=LEARNER, now=now)
    after = ask(test, grain_of, now, "test half, after")
    return {"questions": before.questions, "train_questions": len(train), "seed": seed,
            "before": before.as_dict(), "after": after.as_dict()}


def organise(now: datetime) -> dict:
    """What the beat would do after loading: cluster the graph. Returns what the graph holds."""
    clusters = cluster_rebuild(now=now)
    relations = dict(Conduit.objects.filter(kind__in=RELATION_KINDS).values_list("kind").annotate(n=Count("id")))
    return {"clusters": clusters.clusters, "clustered": clusters.clustered, "cluster_seconds": clusters.seconds,
            "relations": relations}


def dream_until_done(now: datetime, max_cycles: int = 50) -> dict:
    """Dream cycles until no clump is left (at most ``max_cycles``): how many clumps, accepted, rejected."""
    accepted = rejected = cycles = 0
    while cycles < max_cycles:
        run = dream_run(now=now)
        cycles += 1
        accepted, rejected = accepted + len(run.accepted), rejected + len(run.rejected)
        if not run.candidates or run.error:
            break
    return {"cycles": cycles, "clumps": accepted + rejected, "accepted": accepted, "rejected": rejected}


def evaluate(samples: list[dict], *, ablate: bool = False, dream: bool = False) -> dict:
    """Store every turn, cluster, then ask every question of categories 1-4 of both methods, at one fixed time.

    With ``ablate``, Flux is asked again with each part switched off in turn
    (propagation, cluster neighbours, semantic entry, the date boost) and plain
    BM25 again without stemming; with ``dream``, again after dream cycles have
    consolidated every clump they would.
    """
    now = timezone.now()
    grain_of = load(samples, now)
    graph = organise(now)
    asked = list(questions(samples, set(grain_of)))
    flux = ask(asked, grain_of, now, "asking Flux")
    bm25, search = Scores(), (PostgresSearch() if connection.vendor == "postgresql" else Fts5Search())
    for q in tqdm(asked, desc="asking plain BM25", unit="q", file=sys.stderr):
        hits = search.search(q.text, limit=10, statuses=RETRIEVABLE, max_terms=S("QUERY_MAX_TERMS"))
        bm25.add([gid for gid, _ in hits], {grain_of[(q.sample, d)] for d in q.evidence}, q.category)
    result = {"questions": flux.questions, "graph": graph, "semantic": semantic_enabled(), "flux": flux.as_dict(),
              "bm25": bm25.as_dict()}
    if ablate:
        result["no_propagation"] = ask(asked, grain_of, now, "asking Flux, propagation off",
                                       propagation=False).as_dict()
        for name, setting, off in ABLATIONS:
            with override_settings(FLUX={**settings.FLUX, setting: off}):
                result[name] = ask(asked, grain_of, now, f"asking Flux, {name.replace('_', ' ')}").as_dict()
        result["bm25_unstemmed"] = bm25_unstemmed(asked, grain_of).as_dict()
    if dream:
        result["dreams"] = dream_until_done(now)
        result["after_dreams"] = ask(asked, grain_of, now, "asking Flux, after dreaming").as_dict()
    return result


# Parts of Flux switched off one at a time by --ablate: (row, setting, value that switches it off).
ABLATIONS = (("no_clusters", "CLUSTER_NEIGHBOUR_WEIGHT", 0.0), ("no_semantic", "SEMANTIC_ENTRY", "off"),
             ("no_dates", "TEMPORAL_BOOST", 0.0), ("no_speakers", "SPEAKER_BOOST", 1.0))
# The same for the parts of learning, with --learn --ablate (each a whole run: load, test, replay, test).
LEARN_ABLATIONS = (("after_no_ranker", "RERANK_WINDOW", 0), ("after_no_cues", "CUE_LEARNING", False))


def bm25_unstemmed(asked: list[Question], grain_of: dict[tuple[str, str], int]) -> Scores:
    """Plain BM25 over every query term on an index without stemming (what porter stemming adds)."""
    scores = Scores()
    with connection.cursor() as cursor:
        cursor.execute("CREATE VIRTUAL TABLE temp.eval_unstemmed USING fts5("
                       "content, tokenize='unicode61 remove_diacritics 2')")
        cursor.execute("INSERT INTO temp.eval_unstemmed(rowid, content) SELECT id, content FROM grains_grain "
                       f"WHERE status IN ({marks(RETRIEVABLE)})", list(RETRIEVABLE))
        for q in tqdm(asked, desc="asking BM25 without stemming", unit="q", file=sys.stderr):
            words = terms(q.text, S("QUERY_MAX_TERMS"))
            found = []
            if words:
                cursor.execute("SELECT rowid FROM temp.eval_unstemmed WHERE eval_unstemmed MATCH %s "
                               "ORDER BY bm25(eval_unstemmed) LIMIT 10", [fts5_or(words)])
                found = [gid for (gid,) in cursor.fetchall()]
            scores.add(found, {grain_of[(q.sample, d)] for d in q.evidence})
        cursor.execute("DROP TABLE temp.eval_unstemmed")
    return scores
