"""The dream cycle through its service, with the LLM played by a fake Ollama server on loopback."""
from __future__ import annotations

import json

import pytest

from core.net import free_port
from dreams.models import Dream
from grains.models import Grain
from graph.models import Conduit
from graph.services import cluster_rebuild, grain_retrieve
from memory.dreaming import dream_run
from memory.store import grain_store_batch
from tests.servers import fake_ollama

pytestmark = pytest.mark.django_db

GARDEN = ["Lena grows tomatoes in the greenhouse", "Lena waters the greenhouse tomatoes each morning",
          "The greenhouse tomatoes ripen in July", "Lena picks the ripe tomatoes in July"]


@pytest.fixture
def clump(t0):
    grains = [r.grain for r in grain_store_batch(items=[{"content": c, "context": "garden"} for c in GARDEN], now=t0)]
    assert cluster_rebuild(now=t0).clusters == 1
    return grains


def says(text: str):
    return lambda body: (200, {"model": body["model"], "response": json.dumps({"abstraction": text})})


def test_a_grounded_llm_abstraction_becomes_a_level_one_grain_linked_to_its_sources(clump, t0, flux_settings):
    with fake_ollama(says("Lena grows greenhouse tomatoes that ripen in July.")) as (url, received):
        flux_settings(DREAM_LLM=True, OLLAMA_URL=url)
        result = dream_run(now=t0)
    assert (len(result.accepted), result.rejected, result.error) == (1, [], "")
    dream = Dream.objects.get()
    assert (dream.status, dream.method, dream.reason) == ("accepted", "llm", "")
    abstraction = dream.grain
    assert (abstraction.level, abstraction.provenance) == (1, "consolidated")
    sources = set(dream.sources)
    assert sources <= {g.pk for g in clump} and len(sources) >= 3
    links = Conduit.objects.filter(kind="abstracts", source=abstraction)
    assert {c.target_id for c in links} == sources
    mean = sum(g.confidence for g in Grain.objects.filter(pk__in=sources)) / len(sources)
    assert abstraction.confidence == pytest.approx(mean)
    contents = Grain.objects.filter(pk__in=sources).values_list("content", flat=True)
    assert all(s in received[0]["prompt"] for s in contents)


def test_an_abstraction_that_adds_a_number_or_a_name_is_rejected_with_that_reason(clump, t0, flux_settings):
    with fake_ollama(says("Lena grows 12 kinds of tomatoes in the greenhouse.")) as (url, _):
        flux_settings(DREAM_LLM=True, OLLAMA_URL=url)
        assert len(dream_run(now=t0).rejected) == 1
    dream = Dream.objects.get()
    assert (dream.status, dream.reason) == ("rejected", "number 12 is in no source grain")
    assert dream.failing_sentence == "Lena grows 12 kinds of tomatoes in the greenhouse."
    assert not Grain.objects.filter(level=1).exists()
    Dream.objects.all().delete()
    with fake_ollama(says("Lena and Marco grow tomatoes in the greenhouse.")) as (url, _):
        flux_settings(OLLAMA_URL=url)
        dream_run(now=t0)
    assert Dream.objects.get().reason == "name marco is in no source grain"


def test_without_an_llm_the_extractive_summary_is_dreamt_and_a_rerun_creates_nothing(clump, t0):
    first = dream_run(now=t0)
    dream = Dream.objects.get()
    assert (len(first.accepted), dream.method) == (1, "extractive")
    assert dream.text.count(".") == 2 and all(part.strip(". ") in GARDEN for part in dream.text.split(". "))
    cluster_rebuild(now=t0)  # the abstraction joins the graph; the clump of stored grains is unchanged
    again = dream_run(now=t0)
    assert (again.candidates, again.accepted, again.rejected) == (0, [], [])
    assert Dream.objects.count() == 1 and Grain.objects.filter(level=1).count() == 1


def test_an_abstraction_longer_than_a_grain_holds_is_rejected_and_the_cycle_goes_on(clump, t0, flux_settings):
    """It was stored, refused as the caller's invalid input (400 to a POST /dreams/run of {}), and no clump after it
    was dreamt of."""
    flux_settings(MAX_CONTENT_CHARS=30)  # each of the garden's statements is longer
    result = dream_run(now=t0)
    assert (result.accepted, len(result.rejected)) == ([], 1)
    assert "MAX_CONTENT_CHARS" in Dream.objects.get().reason and not Grain.objects.filter(level=1).exists()


def test_abstractions_are_hubs_beside_the_grains_of_a_retrieval(clump, t0):
    dream_run(now=t0)
    abstraction = Dream.objects.get().grain
    found = grain_retrieve(query="Lena greenhouse tomatoes", limit=5, now=t0)
    assert all(g.level == 0 for g in found.grains) and len(found.grains) == 4
    assert [a.id for a in found.abstractions] == [abstraction.pk]
    assert set(found.abstractions[0].sources) == set(Dream.objects.get().sources)
    assert Grain.objects.filter(level=0).count() == 4, "the sources are not deleted"


def test_an_unreachable_llm_stops_the_cycle_and_records_nothing(clump, t0, flux_settings):
    flux_settings(DREAM_LLM=True, OLLAMA_URL=f"http://127.0.0.1:{free_port()}")
    result = dream_run(now=t0)
    assert "cannot be reached" in result.error and not Dream.objects.exists()


def test_through_an_abstraction_a_query_reaches_sources_it_does_not_match(clump, t0):
    dream_run(now=t0)
    dream = Dream.objects.get()
    Conduit.objects.exclude(kind="abstracts").delete()  # the sources now meet only through their abstraction
    found = grain_retrieve(query="ripen", limit=5, now=t0)
    entry = Grain.objects.get(content="The greenhouse tomatoes ripen in July").pk
    reached = {g.id: g.path for g in found.grains if g.id != entry}
    assert reached and set(reached) <= set(dream.sources)
    # Each was reached through the abstraction, which the query found directly or through the entry grain.
    assert all(path[-2:] == [dream.grain_id, gid] and path[0] in (entry, dream.grain_id)
               for gid, path in reached.items()), (reached, entry, dream.grain_id)
