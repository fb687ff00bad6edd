"""Django admin for conduits, traces and the learned ranker's weights (read-only: the services write them)."""
from __future__ import annotations

from django.contrib import admin

from graph.models import Conduit, RankerWeight, Trace, TraceItem
from grains.admin import ReadOnlyAdmin, ReadOnlyInline


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
