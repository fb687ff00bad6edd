"""Django admin for grains and what surrounds them: a window onto the memory, fast at 100,000 grains.

Lists never count the whole table and select related rows in the same query.
Changes go through the services (store, forget); here rows are read-only.
"""
from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from graph.models import Conduit
from grains.models import ActivityEvent, Caller, ConfidenceEvent, Grain, Source, Tombstone


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by the services: viewable, never added, changed or deleted here."""

    show_full_result_count = False

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
    list_filter = ("status", "tier", "provenance", "level")
    search_fields = ("content",)
    list_select_related = ("caller",)
    raw_id_fields = ("caller", "cluster", "source")
    inlines = (ConfidenceHistory, OutgoingConduits, IncomingConduits)
    list_per_page = 50

    @admin.display(description="content")
    def short_content(self, grain: Grain) -> str:
        return grain.content if len(grain.content) <= 90 else grain.content[:87] + "..."


@admin.register(Tombstone)
class TombstoneAdmin(ReadOnlyAdmin):
    list_display = ("grain_id", "preview", "reason", "caller", "created_at")
    search_fields = ("preview", "reason")
    list_select_related = ("caller",)


@admin.register(Caller)
class CallerAdmin(ReadOnlyAdmin):
    list_display = ("client", "role", "stored", "retrievals", "returned", "rated", "created_at")
    list_filter = ("role",)
    search_fields = ("client",)


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
    list_display = ("id", "text", "caller", "created_at")
    search_fields = ("text",)
    list_select_related = ("caller",)


@admin.register(ActivityEvent)
class ActivityEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "payload", "created_at")
    list_filter = ("kind",)
