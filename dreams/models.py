from __future__ import annotations

from django.db import models


class DreamStatus(models.TextChoices):
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class Dream(models.Model):
    """One consolidation attempt: a clump of grains, the abstraction proposed, and the gate's verdict."""

    cluster = models.ForeignKey("graph.Cluster", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="dreams")
    signature = models.CharField(max_length=64, db_index=True,
                                 help_text="Hash of the source grains and their contents: one dream per "
                                           "unchanged clump.")
    sources = models.JSONField(default=list, help_text="Ids of the source grains, most central first.")
    text = models.TextField(help_text="The abstraction proposed.")
    method = models.CharField(max_length=12, help_text="llm or extractive.")
    status = models.CharField(max_length=8, choices=DreamStatus.choices)
    reason = models.CharField(max_length=300, blank=True, help_text="Why the gate rejected it.")
    failing_sentence = models.TextField(blank=True)
    score = models.FloatField(default=0.0)
    grain = models.ForeignKey("grains.Grain", null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="dreams", help_text="The level-1 grain of an accepted dream.")
    created_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"dream {self.pk} ({self.status}): {self.text[:60]}"
