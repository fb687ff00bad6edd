"""The Django admin shows the memory: grains searchable and filterable, with their dossier, read-only."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from graph.models import Conduit
from graph.services import grain_retrieve
from grains.models import Grain
from grains.services import grain_forget, grain_store

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("root", "root@example.invalid", "x")
    client.force_login(user)
    return client


def test_grains_are_searchable_and_filterable(admin_client, t0):
    keep = grain_store(content="Lena grows tomatoes in her greenhouse", now=t0).grain
    grain_store(content="Bo plays the cello", now=t0)
    Grain.objects.filter(pk=keep.pk).update(status="dormant")
    page = admin_client.get("/admin/grains/grain/", {"q": "tomatoes"})
    assert page.status_code == 200 and b"greenhouse" in page.content and b"cello" not in page.content
    dormant = admin_client.get("/admin/grains/grain/", {"status__exact": "dormant"}).content
    assert b"greenhouse" in dormant and b"cello" not in dormant


def test_a_grain_page_shows_its_conduits_and_confidence_history(admin_client, t0):
    a = grain_store(content="Alice adopted a greyhound", context="c", now=t0).grain
    b = grain_store(content="She walks him by the canal", context="c", now=t0).grain
    assert Conduit.objects.filter(source=a, target=b).exists()
    page = admin_client.get(f"/admin/grains/grain/{a.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode().lower()
    assert "conduits out" in body and "association" in body and "prior:ai_stated" in body


def test_rows_are_read_only_here_and_other_lists_open(admin_client, t0):
    grain = grain_store(content="The gate code is 4412", now=t0).grain
    grain_retrieve(query="gate code", now=t0)
    assert admin_client.get("/admin/grains/grain/add/").status_code == 403
    assert admin_client.post(f"/admin/grains/grain/{grain.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Grain.objects.filter(pk=grain.pk).exists()
    grain_forget(grain_id=grain.pk, reason="test", now=t0)
    for path in ("tombstone", "caller", "source", "activityevent"):
        assert admin_client.get(f"/admin/grains/{path}/").status_code == 200
    for path in ("conduit", "trace"):
        assert admin_client.get(f"/admin/graph/{path}/").status_code == 200
    assert b"The gate code" in admin_client.get("/admin/grains/tombstone/").content
