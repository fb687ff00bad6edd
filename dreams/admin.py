"""Django admin for dreams (read-only: the dream cycle writes them)."""
from __future__ import annotations

from django.contrib import admin

from dreams.models import Dream
from grains.admin import ReadOnlyAdmin


@admin.register(Dream)
class DreamAdmin(ReadOnlyAdmin):
    list_display = ("id", "status", "method", "text", "cluster", "grain", "score", "created_at")
    list_filter = ("status", "method")
    search_fields = ("text", "reason")
    raw_id_fields = ("cluster", "grain")
