"""Retrieval and learning through the services, on the database."""
from __future__ import annotations

import threading
from datetime import UTC, timedelta

import pytest
from django.db import connection

from core.booth import Booth
from grains import callers
from grains.models import ActivityEvent, Caller, Grain
from graph.models import Conduit, Feedback, Trace, TraceItem
from graph.policy import grain_weight_now
from graph.services import cluster_rebuild, decay_sweep, feedback_record, grain_retrieve
from memory.store import grain_store
from tests.transactions import writer_held

pytestmark = pytest.mark.django_db

CHAIN = [
    "Alice adopted a greyhound named Pixel last spring.",
    "She walks him every morning along the old canal.",
    "The canal towpath floods after heavy rain in November.",
]


@pytest.fixture
def chain(t0, flux_settings):
    """Three grains in a chain, linked only by their shared context (no lexical links)."""
    flux_settings(STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=1, CONTEXT_CONDUIT_WEIGHT=0.6)
    return [grain_store(content=c, context="walks", now=t0).grain for c in CHAIN]


def ids(result) -> list[int]:
    return [g.id for g in result.grains]


def test_propagation_reaches_a_grain_two_hops_away_that_shares_no_word(chain, t0):
    result = grain_retrieve(query="greyhound", limit=5, now=t0)
    by_id = {g.id: g for g in result.grains}
    far = chain[2]
    assert far.pk in by_id
    assert by_id[far.pk].hops == 2
    assert by_id[far.pk].path == [chain[0].pk, chain[1].pk, far.pk]
    assert ids(result)[0] == chain[0].pk


def test_hop_limit_setting_holds(chain, t0, flux_settings):
    flux_settings(MAX_HOPS=1)
    assert ids(grain_retrieve(query="greyhound", now=t0)) == [chain[0].pk, chain[1].pk]


def test_retrieval_records_a_trace_with_paths_and_touches_grains(chain, t0):
    result = grain_retrieve(query="greyhound", caller="tester:test", now=t0 + timedelta(hours=1))
    trace = Trace.objects.get(pk=result.trace_id)
    assert str(trace.caller) == "tester:test"
    items = list(TraceItem.objects.filter(trace=trace).order_by("rank"))
    assert [i.grain_id for i in items] == ids(result)
    assert items[2].path == [chain[0].pk, chain[1].pk, chain[2].pk] and len(items[2].conduits) == 2
    assert Grain.objects.get(pk=chain[0].pk).retrievals == 1
    assert ActivityEvent.objects.filter(kind="graph.signal_propagated").count() == 1


def test_trace_items_carry_only_the_indexes_their_lookups_need():
    """Every retrieval inserts ten items: their foreign keys have no index of their own, the unique (trace,
    grain) and the (grain, origin) index leading with the same columns."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, TraceItem._meta.db_table)
    indexed = sorted(tuple(c["columns"]) for c in found.values()
                     if (c["index"] or c["unique"]) and not c["primary_key"])
    assert indexed == [("grain_id", "origin_id"), ("trace_id", "grain_id")]


def test_quarantined_grains_surface_only_when_asked(chain, t0):
    Grain.objects.filter(pk=chain[0].pk).update(status="quarantined")
    assert chain[0].pk not in ids(grain_retrieve(query="greyhound", now=t0))
    assert chain[0].pk in ids(grain_retrieve(query="greyhound", include_quarantined=True, now=t0))


def test_archived_or_changed_grains_are_never_found_stale(chain, t0, flux_settings):
    Grain.objects.filter(pk=chain[0].pk).update(status="archived")
    flux_settings(ARCHIVE_SEARCH=False)
    assert grain_retrieve(query="greyhound", now=t0).grains == []
    flux_settings(ARCHIVE_SEARCH=True)  # archived grains stay in the index, for when nothing livelier matches
    assert ids(grain_retrieve(query="greyhound", now=t0)) == [chain[0].pk]
    Grain.objects.filter(pk=chain[0].pk).update(status="active", content="Alice adopted a whippet.")
    assert grain_retrieve(query="greyhound", now=t0).grains == []
    assert ids(grain_retrieve(query="whippet", limit=1, now=t0)) == [chain[0].pk]


def test_shortcut_appears_after_a_useful_two_hop_retrieval(chain, t0, flux_settings):
    flux_settings(CUE_LEARNING=False)  # learned cues would make the far grain a direct hit
    first = grain_retrieve(query="greyhound", now=t0)
    feedback_record(trace_id=first.trace_id, grain_id=chain[2].pk, useful=True, now=t0)
    shortcut = Conduit.objects.get(kind="shortcut")
    assert (shortcut.source_id, shortcut.target_id, shortcut.directed) == (chain[0].pk, chain[2].pk, True)
    again = {g.id: g for g in grain_retrieve(query="greyhound", now=t0).grains}
    assert again[chain[2].pk].hops == 1


def test_useful_feedback_strengthens_the_path_and_not_useful_weakens_it_not_the_grain(chain, t0):
    result = grain_retrieve(query="greyhound", now=t0)
    path = Conduit.objects.filter(kind="association").order_by("pk")
    before = [c.weight for c in path]
    feedback_record(trace_id=result.trace_id, grain_id=chain[2].pk, useful=True, now=t0)
    assert all(c.weight > b for c, b in zip(path.all(), before, strict=False))
    assert Grain.objects.get(pk=chain[2].pk).weight == pytest.approx(0.5)  # no boost for every other query
    strengthened = [c.weight for c in path.all()]
    feedback_record(trace_id=result.trace_id, grain_id=chain[1].pk, useful=False, now=t0)
    assert Grain.objects.get(pk=chain[1].pk).weight == pytest.approx(0.5)  # not useful here, not useless
    assert path.get(pk=path.first().pk).weight < strengthened[0]


def test_global_grain_learning_can_be_switched_on(chain, t0, flux_settings):
    flux_settings(GRAIN_LEARNING_RATE=0.1, NOT_USEFUL_GRAIN_FACTOR=0.85)
    result = grain_retrieve(query="greyhound", now=t0)
    feedback_record(trace_id=result.trace_id, grain_id=chain[2].pk, useful=True, now=t0)
    assert Grain.objects.get(pk=chain[2].pk).weight == pytest.approx(0.6)
    feedback_record(trace_id=result.trace_id, grain_id=chain[1].pk, useful=False, now=t0)
    assert Grain.objects.get(pk=chain[1].pk).weight == pytest.approx(0.5 * 0.85)


def test_grains_useful_together_get_an_association(t0, flux_settings):
    flux_settings(STORE_LINK_NEIGHBOURS=0)
    a = grain_store(content="Bo plays the cello in an orchestra.", now=t0).grain
    b = grain_store(content="Bo practises the cello at dawn.", now=t0).grain
    assert not Conduit.objects.exists()
    result = grain_retrieve(query="cello", now=t0)
    feedback_record(trace_id=result.trace_id, grain_id=a.pk, useful=True, now=t0)
    feedback_record(trace_id=result.trace_id, grain_id=b.pk, useful=True, now=t0)
    link = Conduit.objects.get()
    assert (link.kind, {link.source_id, link.target_id}) == ("association", {a.pk, b.pk})


def _jazz_grains(t0) -> list[Grain]:
    words = ["trumpet", "piano", "drums", "bass", "saxophone", "vinyl", "radio", "club", "festival", "album",
             "band", "singer"]
    return [grain_store(content=f"Notes on jazz number {i}: the {w} sounded warm.", now=t0).grain
            for i, w in enumerate(words)]


def test_feedback_moves_a_grain_into_the_top_five_and_helps_a_related_query(t0):
    _jazz_grains(t0)
    first = grain_retrieve(query="jazz", limit=10, now=t0)
    target = first.grains[-1].id
    assert target not in ids(first)[:5]
    related_before = ids(grain_retrieve(query="warm jazz sounds", limit=12, now=t0)).index(target)
    feedback_record(trace_id=first.trace_id, grain_id=target, useful=True, now=t0)
    for g in first.grains[:5]:
        feedback_record(trace_id=first.trace_id, grain_id=g.id, useful=False, now=t0)
    assert target in ids(grain_retrieve(query="jazz", limit=5, now=t0))
    related_after = ids(grain_retrieve(query="warm jazz sounds", limit=12, now=t0)).index(target)
    assert related_after < related_before and related_after < 5


def test_unused_grain_decays_and_goes_dormant_while_a_used_one_stays(t0):
    idle = grain_store(content="The spare key is under the blue flowerpot.", now=t0).grain
    used = grain_store(content="The wifi password is on the fridge.", now=t0).grain
    result = grain_retrieve(query="wifi password", now=t0 + timedelta(days=20))
    feedback_record(trace_id=result.trace_id, grain_id=used.pk, useful=True, now=t0 + timedelta(days=20))
    swept = decay_sweep(now=t0 + timedelta(days=25))
    idle.refresh_from_db()
    used.refresh_from_db()
    assert (idle.status, used.status) == ("dormant", "active")
    assert idle.weight < 0.1 < used.weight
    assert swept.demoted == 1
    assert ActivityEvent.objects.filter(kind="grains.grain_demoted", payload__grain_id=idle.pk).exists()
    assert decay_sweep(now=t0 + timedelta(days=25)).demoted == 0


def test_decay_is_lazy_on_read_and_a_retrieval_counts_the_access_without_rewriting_the_weight(t0):
    grain = grain_store(content="Mara's birthday is on the ninth of March.", now=t0).grain
    result = grain_retrieve(query="birthday Mara", now=t0 + timedelta(days=7))
    assert result.grains[0].weight == pytest.approx(0.275)
    grain.refresh_from_db()
    assert (grain.weight, grain.last_decayed_at) == (0.5, t0)  # memoryless: nothing to write back
    assert grain_weight_now(grain, t0 + timedelta(days=7)) == pytest.approx(0.275)
    assert (grain.last_accessed_at, grain.retrievals) == (t0 + timedelta(days=7), 1)


def test_dormant_grain_is_reached_and_woken_by_retrieval(t0):
    grain = grain_store(content="The boat is moored at pier seven.", now=t0).grain
    Grain.objects.filter(pk=grain.pk).update(status="dormant")
    assert ids(grain_retrieve(query="boat pier", now=t0)) == [grain.pk]
    assert Grain.objects.get(pk=grain.pk).status == "active"


def test_the_answer_reads_only_the_fields_it_shows(t0, monkeypatch):
    """The answer's rows are read with some fields only: nothing it shows or touches (a dormant grain woken, an
    archived one brought back, a weight decayed) loads a field left out, which would cost a query a grain."""
    woken = grain_store(content="The boat is moored at pier seven.", now=t0).grain
    archived = grain_store(content="The boat's old pier was pier three.", now=t0).grain
    Grain.objects.filter(pk=woken.pk).update(status="dormant")
    Grain.objects.filter(pk=archived.pk).update(status="archived")
    loaded = []
    monkeypatch.setattr(Grain, "refresh_from_db", lambda self, *a, **k: loaded.append(k.get("fields")))
    result = grain_retrieve(query="boat pier", now=t0 + timedelta(days=30))
    shown = {g.id: g for g in result.grains}
    assert {gid: g.status for gid, g in shown.items()} == {woken.pk: "active", archived.pk: "active"}
    assert shown[woken.pk].weight < woken.weight and shown[woken.pk].content == woken.content
    assert loaded == []


def test_feedback_is_idempotent_and_conflicting_verdicts_are_refused(chain, t0):
    from core.errors import Conflict

    result = grain_retrieve(query="greyhound", now=t0)
    feedback_record(trace_id=result.trace_id, grain_id=chain[0].pk, useful=True, now=t0)
    feedback_record(trace_id=result.trace_id, grain_id=chain[0].pk, useful=True, now=t0)
    assert Grain.objects.get(pk=chain[0].pk).useful_count == 1
    with pytest.raises(Conflict, match="already rated"):
        feedback_record(trace_id=result.trace_id, grain_id=chain[0].pk, useful=False, now=t0)
    assert Feedback.objects.count() == 1


def test_retrieval_query_count_does_not_grow_with_results(t0):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for i in range(30):
        grain_store(content=f"Lighthouse keeper log entry {i}: fog again.", context="log", now=t0)
    cluster_rebuild(now=t0)  # cluster neighbours in play too
    grain_retrieve(query="lighthouse", now=t0)  # reads the cluster hubs once
    counts = []
    for limit in (5, 20):
        with CaptureQueriesContext(connection) as queries:
            assert len(grain_retrieve(query="lighthouse fog", limit=limit, now=t0).grains) == limit
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 30


def _fts_matches(word: str) -> list[int]:
    """Grains the full-text index finds ``word`` in, once the index is checked to be in step with the grains."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # the generated column and the triggers' sizes are up to date
            cursor.execute("SELECT count(*) FROM grains_grain WHERE fts_doc IS DISTINCT FROM ("
                           "setweight(to_tsvector('english', content), 'A') || "
                           "setweight(to_tsvector('english', coalesce(cues, '')), 'B'))")
            assert cursor.fetchone()[0] == 0
            cursor.execute("SELECT coalesce(sum(grains), 0), coalesce(sum(tokens), 0) FROM grain_fts_size")
            sizes = cursor.fetchone()
            cursor.execute("SELECT count(*), coalesce(sum(fts_length), 0) FROM grains_grain")
            assert cursor.fetchone() == sizes
            cursor.execute("SELECT id FROM grains_grain WHERE fts_doc @@ plainto_tsquery('english', %s) ORDER BY id",
                           [word])
        else:
            cursor.execute("INSERT INTO grain_fts(grain_fts) VALUES ('integrity-check')")  # raises when out of sync
            cursor.execute("SELECT rowid FROM grain_fts WHERE grain_fts MATCH %s ORDER BY rowid", [f'"{word}"'])
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def pets(t0, flux_settings):
    """Grains with no conduits, so only the lexical entry can find them."""
    flux_settings(STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=0)
    return [grain_store(content=c, now=t0).grain for c in (
        "Mel adopted a greyhound called Pixel.", "Jon keeps two cats in his flat.", "Ana rides her horse at dawn.")]


def test_useful_feedback_teaches_a_grain_the_words_it_was_asked_for_by(pets, t0):
    assert ids(grain_retrieve(query="dog", now=t0)) == []
    first = grain_retrieve(query="Which dog did Mel adopt, the greyhound?", now=t0)
    assert ids(first)[0] == pets[0].pk
    feedback_record(trace_id=first.trace_id, grain_id=pets[0].pk, useful=True, now=t0)
    assert Grain.objects.get(pk=pets[0].pk).cues == "dog adopt"
    assert ids(grain_retrieve(query="dog", now=t0)) == [pets[0].pk]
    assert _fts_matches("dog") == [pets[0].pk]


def test_not_useful_feedback_or_cue_learning_off_teaches_no_words(pets, t0, flux_settings):
    first = grain_retrieve(query="greyhound dog", now=t0)
    feedback_record(trace_id=first.trace_id, grain_id=pets[0].pk, useful=False, now=t0)
    flux_settings(CUE_LEARNING=False)
    second = grain_retrieve(query="Pixel the greyhound is a dog", now=t0)
    feedback_record(trace_id=second.trace_id, grain_id=pets[0].pk, useful=True, now=t0)
    assert Grain.objects.get(pk=pets[0].pk).cues is None
    assert ids(grain_retrieve(query="dog", now=t0)) == []


def test_learned_cues_leave_the_index_with_the_grain_and_come_back_with_it(pets, t0):
    from memory.forgetting import grain_purge, grain_restore

    first = grain_retrieve(query="greyhound dog", now=t0)
    feedback_record(trace_id=first.trace_id, grain_id=pets[0].pk, useful=True, now=t0)
    grain_purge(grain_id=pets[0].pk, reason="test", now=t0)
    assert _fts_matches("dog") == [] and _fts_matches("greyhound") == []
    grain_restore(grain_id=pets[0].pk, reason="test", now=t0)
    assert Grain.objects.get(pk=pets[0].pk).cues == "dog"
    assert _fts_matches("dog") == [pets[0].pk]
    assert ids(grain_retrieve(query="dog", now=t0)) == [pets[0].pk]


def test_a_grain_dated_within_the_date_a_query_names_ranks_first(t0, flux_settings):
    from datetime import datetime

    flux_settings(STORE_LINK_NEIGHBOURS=0, CONTEXT_LINKS=0)
    shed = grain_store(content="Jon painted the shed.", occurred_at=datetime(2023, 6, 1, 15, tzinfo=UTC),
                       now=t0).grain
    fence = grain_store(content="Jon painted the old garden fence white, with two coats.",
                        occurred_at=datetime(2023, 5, 23, 9, tzinfo=UTC), now=t0).grain
    assert ids(grain_retrieve(query="What did Jon paint?", now=t0)) == [shed.pk, fence.pk]
    assert ids(grain_retrieve(query="What did Jon paint on May 23, 2023?", now=t0)) == [fence.pk, shed.pk]
    assert ids(grain_retrieve(query="What did Jon paint in June?", now=t0)) == [shed.pk, fence.pk]
    assert ids(grain_retrieve(query="What did Jon paint in May?", now=t0)) == [fence.pk, shed.pk]
    flux_settings(TEMPORAL_BOOST=0.0)
    assert ids(grain_retrieve(query="What did Jon paint on May 23, 2023?", now=t0)) == [shed.pk, fence.pk]


@pytest.mark.django_db(transaction=True)
def test_a_new_callers_row_is_made_by_the_booths_writer_not_the_read_worker(t0, monkeypatch):
    grain_store(content=CHAIN[0], now=t0)
    made_on: list[str] = []
    resolve = callers.caller_resolve

    def watched(*args, **kwargs):
        made_on.append(threading.current_thread().name)
        return resolve(*args, **kwargs)

    monkeypatch.setattr(callers, "caller_resolve", watched)
    booth = Booth(2)
    try:
        for _ in range(2):  # the second time the row exists: nothing is made
            found = booth.read(lambda: grain_retrieve(query="greyhound Pixel", caller="newcomer:chat", now=t0,
                                                      booth=booth)).result(10)
            assert ids(found) == [Grain.objects.get(content=CHAIN[0]).pk]
    finally:
        booth.close()
    assert len(made_on) == 1 and made_on[0].startswith("flux-write"), made_on
    assert Caller.objects.filter(client="newcomer", role="chat").count() == 1


@pytest.mark.django_db(transaction=True)
def test_retrievals_wait_for_the_writer_once_too_many_of_their_traces_are_unwritten(t0, monkeypatch):
    """Traces queue on the writer after the answer; past MAX_UNWRITTEN a retrieval waits for the oldest, so they
    never pile up behind a writer that cannot keep up (feedback and stores would wait behind them)."""
    from graph.services import retrieval as retrieval_module
    from graph.services.traces import traces_written

    grain_store(content=CHAIN[0], now=t0)
    monkeypatch.setattr(retrieval_module, "MAX_UNWRITTEN", 2)
    booth, held, answered = Booth(2), threading.Event(), []

    def ask() -> None:
        answered.append(booth.read(lambda: grain_retrieve(query="greyhound Pixel", caller="busy:chat", now=t0,
                                                          enforce_feedback=False, booth=booth)).result(10))
    try:
        ask()  # the caller's row made and trace ids reserved, with the writer free
        traces_written()
        writer_held(booth, held)  # traces queue behind it
        for _ in range(3):  # up to two unwritten, a retrieval goes on
            ask()
        late = threading.Thread(target=ask)
        late.start()
        late.join(0.5)
        assert late.is_alive() and len(answered) == 4  # three unwritten: the next one waits
        held.set()
        late.join(10)
        assert not late.is_alive() and len(answered) == 5
        assert all(ids(found) == [Grain.objects.get(content=CHAIN[0]).pk] for found in answered)
    finally:
        held.set()
        booth.close()
