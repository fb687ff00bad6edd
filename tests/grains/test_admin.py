"""The Django admin shows the memory: grains searchable and filterable, with their dossier, read-only."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from grains.models import Grain
from graph.models import Conduit
from graph.services import feedback_record, grain_retrieve
from memory.forgetting import grain_forget
from memory.store import grain_store

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


def purge(admin_client, grains, **fields):
    data = {"action": "purge_selected", "_selected_action": [g.pk for g in grains], **fields}
    return admin_client.post("/admin/grains/grain/", data, follow=True)


def token_of(admin_client) -> str:
    return admin_client.session["flux_confirmation_token"]


def test_purge_needs_a_reason_and_the_session_token_then_is_done_and_audited(admin_client, t0):
    from core.errors import Tombstoned
    from grains.models import AuditEvent, Tombstone
    from graph.services import grain_retrieve

    doomed = grain_store(content="The old door code is 4471", context="door", now=t0).grain
    grain_store(content="The new door code is 9032", context="door", now=t0)
    page = purge(admin_client, [doomed])
    assert b"Confirmation token for this session" in page.content and token_of(admin_client).encode() in page.content
    refused = purge(admin_client, [doomed], confirm="yes", reason="leaked", token="WRONG-TOKEN")
    assert b"does not match" in refused.content and Grain.objects.filter(pk=doomed.pk).exists()
    no_reason = purge(admin_client, [doomed], confirm="yes", reason=" ", token=token_of(admin_client))
    assert b"Give a reason" in no_reason.content and Grain.objects.filter(pk=doomed.pk).exists()
    done = purge(admin_client, [doomed], confirm="yes", reason="leaked", token=token_of(admin_client))
    assert b"Purge: 1 done." in done.content
    assert not Grain.objects.filter(pk=doomed.pk).exists()
    tomb = Tombstone.objects.get(grain_id=doomed.pk)
    assert tomb.reason == "leaked" and str(tomb.caller) == "root:admin"
    audit = AuditEvent.objects.get(action="purge")
    assert (audit.actor, audit.grain_id, audit.reason) == ("root:admin", doomed.pk, "leaked")
    assert audit.before["content_hash"] == doomed.content_hash and audit.after["tombstone_id"] == tomb.pk
    assert "4471" not in str(audit.before) + str(audit.after)  # the audit log keeps the hash, not the content
    assert doomed.pk not in [g.id for g in grain_retrieve(query="old door code 4471", now=t0).grains]
    with pytest.raises(Tombstoned):
        grain_store(content="The old door code is 4471", now=t0)


def restore(admin_client, tombstones, **fields):
    data = {"action": "restore_selected", "_selected_action": [t.pk for t in tombstones], "confirm": "yes",
            "reason": "purged by mistake", "token": token_of(admin_client), **fields}
    return admin_client.post("/admin/grains/tombstone/", data, follow=True)


def test_restore_within_the_window_brings_back_grain_and_conduits_and_is_audited(admin_client, t0):
    from grains.models import AuditEvent, ConfidenceEvent, Tombstone
    from memory.forgetting import grain_purge

    a = grain_store(content="Mira keeps bees on the roof", context="bees", now=t0).grain
    b = grain_store(content="The roof hives gave honey in June", context="bees", now=t0).grain
    conduits = sorted(Conduit.objects.filter(source=a).values_list("pk", "target_id", "kind", "weight"))
    history = list(ConfidenceEvent.objects.filter(grain=a).values_list("reason", "confidence"))
    assert conduits and history
    purge(admin_client, [a])  # shows the page, creating this session's token
    grain_purge(grain_id=a.pk, reason="oops", actor="root:admin")
    page = restore(admin_client, [Tombstone.objects.get(grain_id=a.pk)])
    assert b"Restore: 1 done." in page.content
    back = Grain.objects.get(pk=a.pk)
    assert (back.content, back.confidence, back.status) == (a.content, a.confidence, a.status)
    assert sorted(Conduit.objects.filter(source=back).values_list("pk", "target_id", "kind", "weight")) == conduits
    assert list(ConfidenceEvent.objects.filter(grain=back).values_list("reason", "confidence")) == history
    assert not Tombstone.objects.filter(grain_id=a.pk).exists()
    assert AuditEvent.objects.filter(action="restore", grain_id=a.pk, reason="purged by mistake").exists()
    assert Grain.objects.filter(pk=b.pk).exists()


def test_restore_after_the_window_is_refused_clearly(admin_client, t0):
    from datetime import timedelta

    from core.errors import Conflict
    from grains.models import Tombstone
    from memory.forgetting import grain_purge, grain_restore

    grain = grain_store(content="Temporary parking permit 77", now=t0).grain
    grain_purge(grain_id=grain.pk, reason="expired", actor="root:admin", now=t0)
    with pytest.raises(Conflict, match="restore window"):
        grain_restore(grain_id=grain.pk, reason="want it back", actor="root:admin", now=t0 + timedelta(hours=25))
    tomb = Tombstone.objects.get(grain_id=grain.pk)
    Tombstone.objects.filter(pk=tomb.pk).update(restorable_until=t0)
    shown = admin_client.post("/admin/grains/tombstone/", {"action": "restore_selected", "_selected_action": [tomb.pk]})
    assert b"Confirmation token for this session" in shown.content
    page = restore(admin_client, [tomb])
    assert b"can no longer be restored" in page.content and not Grain.objects.filter(pk=grain.pk).exists()


def test_the_audit_log_cannot_be_edited_or_deleted(admin_client, t0):
    from grains.models import AuditEvent
    from memory.forgetting import grain_purge

    grain = grain_store(content="Audit me", now=t0).grain
    grain_purge(grain_id=grain.pk, reason="test", actor="root:admin")
    entry = AuditEvent.objects.get()
    assert admin_client.get("/admin/grains/auditevent/").status_code == 200
    assert admin_client.post(f"/admin/grains/auditevent/{entry.pk}/change/", {"reason": "rewritten"}).status_code == 403
    assert admin_client.post(f"/admin/grains/auditevent/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    entry.reason = "rewritten"
    with pytest.raises(PermissionError):
        entry.save()
    with pytest.raises(PermissionError):
        entry.delete()
    with pytest.raises(PermissionError):
        AuditEvent.objects.all().delete()
    with pytest.raises(PermissionError):
        AuditEvent.objects.update(reason="x")
    assert AuditEvent.objects.get().reason == "test"


def test_dossiers_export_from_the_admin(admin_client, t0):
    import json

    a = grain_store(content="Ines repairs clocks", context="clocks", now=t0).grain
    b = grain_store(content="Ines sells repaired clocks on Fridays", context="clocks", now=t0).grain
    exported = admin_client.post("/admin/grains/grain/",
                                 {"action": "export_selected", "_selected_action": [a.pk, b.pk]})
    assert exported.status_code == 200 and "attachment" in exported["Content-Disposition"]
    dossiers = json.loads(exported.content)["grains"]
    assert [d["id"] for d in dossiers] == [a.pk, b.pk]
    assert dossiers[0]["conduits"] and dossiers[0]["confidence_history"] and "relations" in dossiers[0]


def correct(admin_client, listing: str, action: str, rows, **fields):
    admin_client.post(f"/admin/grains/{listing}/", {"action": action, "_selected_action": [r.pk for r in rows]})
    data = {"action": action, "_selected_action": [r.pk for r in rows], "confirm": "yes",
            "reason": "operator check", "token": token_of(admin_client), **fields}
    return admin_client.post(f"/admin/grains/{listing}/", data, follow=True)


def test_status_and_confidence_set_by_hand_are_audited(admin_client, t0):
    from grains.models import AuditEvent, ConfidenceEvent

    grain = grain_store(content="The boiler was serviced in 2019", now=t0).grain
    assert b"Set quarantined: 1 done." in correct(admin_client, "grain", "quarantine_selected", [grain]).content
    assert Grain.objects.get(pk=grain.pk).status == "quarantined"
    missing = correct(admin_client, "grain", "override_confidence", [grain])
    assert b"Give the confidence" in missing.content
    bad = correct(admin_client, "grain", "override_confidence", [grain], value="lots")
    assert b"not a number from 0 to 1" in bad.content and Grain.objects.get(pk=grain.pk).confidence == 0.7
    assert b"Set confidence: 1 done." in correct(admin_client, "grain", "override_confidence", [grain],
                                                 value="0.35").content
    assert Grain.objects.get(pk=grain.pk).confidence == 0.35
    assert ConfidenceEvent.objects.filter(grain=grain, reason="set by hand", confidence=0.35).exists()
    assert [(a.action, a.before, a.after) for a in AuditEvent.objects.order_by("pk")] == [
        ("status_change", {"status": "active"}, {"status": "quarantined"}),
        ("confidence_override", {"confidence": 0.7}, {"confidence": 0.35, "status": "quarantined"})]


def test_a_blocked_caller_is_refused_until_unblocked_and_both_are_audited(admin_client, t0):
    from core.errors import CallerBlocked
    from grains.models import AuditEvent, Caller
    from graph.services import grain_retrieve

    grain_store(content="Noisy bot facts", caller="spammer:chat", now=t0)
    spammer = Caller.objects.get(client="spammer")
    assert b"Block: 1 done." in correct(admin_client, "caller", "block_selected", [spammer]).content
    with pytest.raises(CallerBlocked, match="blocked by an operator"):
        grain_store(content="More noise", caller="spammer:chat", now=t0)
    with pytest.raises(CallerBlocked):
        grain_retrieve(query="noise", caller="spammer:chat", now=t0)
    grain_store(content="Others are unaffected", caller="friend:chat", now=t0)
    assert b"Unblock: 1 done." in correct(admin_client, "caller", "unblock_selected", [spammer]).content
    grain_store(content="Calmer facts now", caller="spammer:chat", now=t0)
    assert list(AuditEvent.objects.order_by("pk").values_list("action", flat=True)) == ["caller_block",
                                                                                        "caller_unblock"]


def test_the_learned_ranker_weights_are_listed_read_only(admin_client, t0):
    for content in ("Ana keeps her horse Comet at the stables by the river and rides him every morning.",
                    "Thanks, Ana!"):
        grain_store(content=content, now=t0)
    found = grain_retrieve(query="Ana horse", enforce_feedback=False, now=t0)
    for g in found.grains:
        feedback_record(trace_id=found.trace_id, grain_id=g.id, useful="Comet" in g.content, now=t0)
    page = admin_client.get("/admin/graph/rankerweight/", {"q": "feature"})
    assert page.status_code == 200 and b"feature:length" in page.content and b"word:" not in page.content
    assert admin_client.get("/admin/graph/rankerweight/add/").status_code == 403


@pytest.mark.parametrize("selected", ["abc", "7\x00", "99999999999999999999", "-1", "0"])
def test_an_action_on_a_selection_that_names_no_row_is_refused_with_a_message(admin_client, t0, selected):
    """A hand-made form naming a row by anything but an id: a message and nothing done (it was a 500)."""
    grain = grain_store(content="The gate code is 4412", now=t0).grain
    for path, action in (("/admin/grains/grain/", "purge_selected"), ("/admin/grains/tombstone/", "restore_selected")):
        page = admin_client.post(path, {"action": action, "_selected_action": [str(grain.pk), selected],
                                        "confirm": "yes", "reason": "t", "token": "x"}, follow=True)
        assert page.status_code == 200 and b"which is not an id" in page.content
    assert Grain.objects.filter(pk=grain.pk, status="active").exists()


def test_the_login_page_says_how_to_get_a_link_and_no_site_is_linked(admin_client):
    """The only operator has no password: the login page gives the command that prints a link, not a form no one
    can pass; the header links no site (the REST listener serves none to view)."""
    from django.test import Client

    page = Client().get("/admin/login/").content.decode()
    assert "flux admin --name" in page and 'name="password"' not in page
    index = admin_client.get("/admin/").content.decode()
    assert "Site administration" in index and "View site" not in index
