"""The Django admin: a window onto the memory, fast at 100,000 grains; an operator's purge, restore and
corrections go through the actions layer and are audited.

Lists never count the whole table and select related rows in the same query. Rows are read-only here: the
services write them (grains, callers, conduits, traces, the ranker's weights, dreams).
"""
from __future__ import annotations

import re

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse

from core.errors import FluxError, InvalidInput
from core.validate import MAX_ID
from dreams.models import Dream
from grains.audit import actor_caller, confirmation_token
from grains.models import ActivityEvent, AuditEvent, Caller, ConfidenceEvent, Grain, Source, Status, Tombstone
from graph.models import Conduit, RankerWeight, Trace, TraceItem
from memory.corrections import caller_block_set, grain_confidence_set, grain_status_set
from memory.dossier import grain_dossier
from memory.forgetting import grain_purge, grain_restore

TOKEN_KEY = "flux_confirmation_token"
_ID = re.compile(r"[0-9]{1,19}")


def session_token(request: HttpRequest) -> str:
    """The confirmation token of this admin session: destructive acts need it typed back."""
    if TOKEN_KEY not in request.session:
        request.session[TOKEN_KEY] = confirmation_token()
    return request.session[TOKEN_KEY]


def _confirmed(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet, *, title: str,
               explanation: str, button: str, act, value_label: str = "") -> TemplateResponse | None:  # noqa: ANN001
    """Show the confirmation page, or, when the reason and this session's token came back, act on each row.

    ``act(obj, reason, actor, value)``; ``value_label`` asks for a value too (e.g. a confidence).
    """
    token, error = session_token(request), ""
    value = request.POST.get("value", "").strip()
    if request.POST.get("confirm"):
        reason = request.POST.get("reason", "").strip()
        if value_label and not value:
            error = f"Give the {value_label}."
        elif not reason:
            error = "Give a reason: it is kept in the audit log."
        elif request.POST.get("token", "").strip().upper() != token:
            error = "The confirmation token does not match the one shown for this session."
        else:
            actor = actor_caller(request.user.get_username())
            done, failed = 0, []
            for obj in queryset:
                try:
                    act(obj, reason, actor, value)
                    done += 1
                except FluxError as exc:
                    failed.append(exc.message)
            modeladmin.message_user(request, f"{button}: {done} done.", messages.SUCCESS)
            for message in failed:
                modeladmin.message_user(request, message, messages.ERROR)
            return None
    return TemplateResponse(request, "admin/flux_confirm.html", {
        **modeladmin.admin_site.each_context(request), "title": title, "explanation": explanation,
        "objects": list(queryset[:500]), "action": request.POST.get("action"), "token": token, "error": error,
        "reason": request.POST.get("reason", ""), "button": button, "value_label": value_label, "value": value})


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by the services: viewable, never added, changed or deleted here."""

    show_full_result_count = False

    def response_action(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        """An action on a selection that names a row by anything but its id (a hand-made form) is refused with a
        message; Django's would look the ids up and fail (500)."""
        for raw in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
            if not _ID.fullmatch(raw) or not 1 <= int(raw) <= MAX_ID:
                self.message_user(request, f"The selection names a row as {raw[:40]!r}, which is not an id; select "
                                           "rows in the list and run the action again.", messages.ERROR)
                return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class OutgoingConduits(ReadOnlyInline):
    model = Conduit
    fk_name = "source"
    fields = ("target", "kind", "weight", "directed", "uses", "useful_uses", "created_at")
    raw_id_fields = ("target",)
    verbose_name_plural = "conduits out"


class IncomingConduits(OutgoingConduits):
    fk_name = "target"
    fields = ("source", "kind", "weight", "directed", "uses", "useful_uses", "created_at")
    raw_id_fields = ("source",)
    verbose_name_plural = "conduits in"


class ConfidenceHistory(ReadOnlyInline):
    model = ConfidenceEvent
    fields = ("created_at", "confidence", "reason")
    show_change_link = False


@admin.register(Grain)
class GrainAdmin(ReadOnlyAdmin):
    list_display = ("id", "short_content", "status", "tier", "provenance", "confidence", "weight", "retrievals",
                    "useful_count", "caller", "created_at")
    list_filter = ("status", "tier", "provenance", "level", "caller")
    search_fields = ("content",)
    list_select_related = ("caller",)
    raw_id_fields = ("caller", "source")
    inlines = (ConfidenceHistory, OutgoingConduits, IncomingConduits)
    list_per_page = 50
    actions = ("purge_selected", "export_selected", "quarantine_selected", "activate_selected",
               "override_confidence")

    def _status(self, request: HttpRequest, queryset: QuerySet, status: str) -> TemplateResponse | None:
        return _confirmed(self, request, queryset, title=f"Set status {status}", button=f"Set {status}",
                          explanation=f"Each grain moves to {status}; the change is audited.",
                          act=lambda g, reason, actor, _: grain_status_set(grain_id=g.pk, status=status,
                                                                           reason=reason, actor=actor))

    @admin.action(description="Quarantine selected grains (they surface only when asked for)")
    def quarantine_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        return self._status(request, queryset, Status.QUARANTINED)

    @admin.action(description="Make selected grains active")
    def activate_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        return self._status(request, queryset, Status.ACTIVE)

    @admin.action(description="Override the confidence of selected grains")
    def override_confidence(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        def act(grain: Grain, reason: str, actor: str, value: str) -> None:
            try:
                confidence = float(value)
            except ValueError:
                raise InvalidInput(f"the confidence {value!r} is not a number from 0 to 1") from None
            grain_confidence_set(grain_id=grain.pk, confidence=confidence, reason=reason, actor=actor)

        return _confirmed(self, request, queryset, title="Override confidence", button="Set confidence",
                          explanation="Each grain's confidence is set to the value given; kept in its history.",
                          act=act, value_label="confidence (0 to 1)")

    @admin.action(description="Export the dossiers of the selected grains as JSON")
    def export_selected(self, request: HttpRequest, queryset: QuerySet) -> JsonResponse:
        ids = list(queryset.order_by("pk").values_list("pk", flat=True)[:1000])
        response = JsonResponse({"grains": [grain_dossier(gid) for gid in ids]})
        response["Content-Disposition"] = 'attachment; filename="grains-dossiers.json"'
        return response

    @admin.action(description="Purge selected grains (restorable for PURGE_RESTORE_WINDOW_HOURS)")
    def purge_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        return _confirmed(self, request, queryset, title="Purge grains", button="Purge",
                          explanation="Each grain, its conduits and history are removed; a tombstone keeps its "
                                      "content from being stored again and allows a restore within the window.",
                          act=lambda g, reason, actor, _: grain_purge(grain_id=g.pk, reason=reason, actor=actor))

    @admin.display(description="content")
    def short_content(self, grain: Grain) -> str:
        return grain.content if len(grain.content) <= 90 else grain.content[:87] + "..."


@admin.register(Tombstone)
class TombstoneAdmin(ReadOnlyAdmin):
    list_display = ("grain_id", "preview", "reason", "caller", "created_at", "restorable_until")
    search_fields = ("preview", "reason")
    list_select_related = ("caller",)
    exclude = ("restore_data",)
    actions = ("restore_selected",)

    @admin.action(description="Restore selected grains exactly as they were")
    def restore_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        return _confirmed(self, request, queryset, title="Restore grains", button="Restore",
                          explanation="Each grain comes back with its id, conduits and history, if its restore "
                                      "window has not ended.",
                          act=lambda t, reason, actor, _: grain_restore(grain_id=t.grain_id, reason=reason,
                                                                        actor=actor))


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Append-only: listed and read, never changed or deleted, not even here."""

    list_display = ("created_at", "actor", "action", "grain_id", "reason")
    list_filter = ("action",)
    search_fields = ("actor", "reason")
    actions = None


@admin.register(Caller)
class CallerAdmin(ReadOnlyAdmin):
    list_display = ("client", "role", "blocked", "stored", "retrievals", "returned", "rated", "created_at")
    list_filter = ("role", "blocked")
    search_fields = ("client",)
    actions = ("block_selected", "unblock_selected")

    def _block(self, request: HttpRequest, queryset: QuerySet, blocked: bool) -> TemplateResponse | None:
        word = "Block" if blocked else "Unblock"
        return _confirmed(self, request, queryset, title=f"{word} callers", button=word,
                          explanation="A blocked caller is refused on store, retrieve and feedback." if blocked
                          else "The callers may store, retrieve and rate again.",
                          act=lambda c, reason, actor, _: caller_block_set(caller=c, blocked=blocked, reason=reason,
                                                                           actor=actor))

    @admin.action(description="Block selected callers")
    def block_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        return self._block(request, queryset, True)

    @admin.action(description="Unblock selected callers")
    def unblock_selected(self, request: HttpRequest, queryset: QuerySet) -> TemplateResponse | None:
        return self._block(request, queryset, False)


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
    list_display = ("id", "text", "caller", "created_at")
    search_fields = ("text",)
    list_select_related = ("caller",)


@admin.register(ActivityEvent)
class ActivityEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "payload", "created_at")
    list_filter = ("kind",)


@admin.register(Conduit)
class ConduitAdmin(ReadOnlyAdmin):
    list_display = ("id", "source", "kind", "target", "weight", "directed", "uses", "useful_uses", "created_at")
    list_filter = ("kind", "directed")
    list_select_related = ("source", "target")
    raw_id_fields = ("source", "target")


class TraceItems(ReadOnlyInline):
    model = TraceItem
    fields = ("rank", "grain", "score", "signal", "hops", "path")
    raw_id_fields = ("grain",)
    show_change_link = False


@admin.register(Trace)
class TraceAdmin(ReadOnlyAdmin):
    list_display = ("id", "query", "caller", "limit", "entry_count", "activated_count", "created_at")
    search_fields = ("query",)
    list_select_related = ("caller",)
    inlines = (TraceItems,)


@admin.register(RankerWeight)
class RankerWeightAdmin(ReadOnlyAdmin):
    """What feedback has taught the re-ranker: a weight per feature and per query word."""

    list_display = ("key", "weight", "updates", "updated_at")
    search_fields = ("key",)
    ordering = ("-weight",)


@admin.register(Dream)
class DreamAdmin(ReadOnlyAdmin):
    list_display = ("id", "status", "method", "text", "cluster", "grain", "score", "created_at")
    list_filter = ("status", "method")
    search_fields = ("text", "reason")
    raw_id_fields = ("cluster", "grain")


# Operators come in with `flux admin`'s one-time link: no password users or groups to manage, and none to add; the
# login page says how to get a link rather than asking for a password no one has. The REST listener serves no site
# to view (the dashboard is another listener).
admin.site.unregister(User)
admin.site.unregister(Group)
admin.site.login_template = "admin/flux_login.html"
admin.site.site_url = None
