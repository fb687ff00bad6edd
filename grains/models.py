from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models.functions import Coalesce

from core.errors import InvalidInput

# The same in a query: when each grain's fact happened.
HAPPENED_AT = Coalesce("occurred_at", "created_at")


class Provenance(models.TextChoices):
    USER_STATED = "user_stated"
    AI_STATED = "ai_stated"
    AI_INFERRED = "ai_inferred"
    OBSERVED = "observed"
    IMPORTED = "imported"
    CONSOLIDATED = "consolidated"


class Status(models.TextChoices):
    ACTIVE = "active"
    DORMANT = "dormant"
    QUARANTINED = "quarantined"
    ARCHIVED = "archived"


def require_status(status: object) -> str:
    """``status`` if it is one of the four, else InvalidInput naming the field."""
    if status not in Status.values:
        raise InvalidInput(f"'status' {status!r} is not one of {', '.join(Status.values)}", details={"field": "status"})
    return status


class Tier(models.TextChoices):
    CORE = "core"
    WORKING = "working"
    EPHEMERAL = "ephemeral"


class Role(models.TextChoices):
    CHAT = "chat"
    MEMORY_WRITER = "memory_writer"
    BACKGROUND_LOOKUP = "background_lookup"
    SYSTEM = "system"
    ADMIN = "admin"
    TEST = "test"
    UNKNOWN = "unknown"


class Caller(models.Model):
    """Who called: a stable client name and its role (``client:role``)."""

    client = models.CharField(max_length=100)
    role = models.CharField(max_length=32, choices=Role.choices)
    created_at = models.DateTimeField()
    # Counters kept by the services, so listing callers never scans traces.
    stored = models.PositiveIntegerField(default=0, help_text="Grains stored (duplicates included).")
    retrievals = models.PositiveIntegerField(default=0, help_text="Retrievals made.")
    returned = models.PositiveIntegerField(default=0, help_text="Grains returned by its retrievals.")
    rated = models.PositiveIntegerField(default=0, help_text="Returned grains that got feedback.")
    blocked = models.BooleanField(default=False, help_text="Refused on store, retrieve and feedback.")
    blocked_reason = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "role"], name="caller_unique_client_role")]

    def __str__(self) -> str:
        return f"{self.client}:{self.role}"


class Source(models.Model):
    """Raw text that grains were extracted from (flux_extracts mode)."""

    text = models.TextField()
    caller = models.ForeignKey(Caller, on_delete=models.PROTECT, related_name="sources")
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"source {self.pk}: {self.text[:60]}"


class Grain(models.Model):
    """One small fact. Written only by services; the FTS index follows it by triggers."""

    content = models.TextField()
    cues = models.TextField(
        blank=True, null=True,
        help_text="Query words that useful feedback attached to this grain (searched beside its content).")
    content_hash = models.CharField(max_length=64, unique=True)
    provenance = models.CharField(max_length=16, choices=Provenance.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.WORKING)
    confidence = models.FloatField()
    weight = models.FloatField()
    level = models.PositiveSmallIntegerField(default=0)
    retrievals = models.PositiveIntegerField(default=0)
    useful_count = models.PositiveIntegerField(default=0)
    not_useful_count = models.PositiveIntegerField(default=0)
    context = models.CharField(max_length=200, blank=True, default="")
    occurred_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    last_accessed_at = models.DateTimeField()
    last_decayed_at = models.DateTimeField()
    confidence_at = models.DateTimeField(help_text="When the confidence last changed (age drift runs from here).")
    status_changed_at = models.DateTimeField(help_text="When the grain entered its status.")
    superseded_by = models.BigIntegerField(
        null=True, blank=True, help_text="Id of the grain that supersedes this one (it may since be a tombstone).")
    cluster_id = models.BigIntegerField(
        null=True, blank=True, help_text="The graph's cluster of this grain (set by clustering), if any.")
    caller = models.ForeignKey(Caller, on_delete=models.PROTECT, related_name="grains")
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.SET_NULL, related_name="grains",
                               help_text="The raw text this grain was extracted from, if any.")

    class Meta:
        indexes = [
            models.Index(fields=["status", "id"], name="grain_status_id"),
            models.Index(fields=["context", "id"], name="grain_context_id"),
            models.Index(fields=["last_decayed_at"], name="grain_last_decayed"),
            models.Index(fields=["cluster_id", "id"], name="grain_cluster_id"),
        ]

    @property
    def happened_at(self) -> datetime:
        """When the fact happened: ``occurred_at`` if the caller said, else when it was stored."""
        return self.occurred_at or self.created_at

    def __str__(self) -> str:
        return f"#{self.pk} {self.content[:60]}"


class Tombstone(models.Model):
    """What remains of a forgotten grain: its content hash, never silently stored again."""

    content_hash = models.CharField(max_length=64, unique=True)
    grain_id = models.BigIntegerField(help_text="Id the grain had.")
    preview = models.CharField(max_length=120, blank=True)
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    caller = models.ForeignKey(Caller, on_delete=models.PROTECT, related_name="tombstones")
    superseded_by = models.BigIntegerField(
        null=True, blank=True, help_text="Id of the grain that superseded the forgotten one, so chains still resolve.")
    restore_data = models.JSONField(null=True, blank=True,
                                    help_text="The grain, its conduits and confidence history, for a restore "
                                              "(cleared with the preview when the restore window ends).")
    restorable_until = models.DateTimeField(null=True, blank=True)
    by_operator = models.BooleanField(
        default=False, help_text="An operator's purge: only an operator's restore lifts it (a caller's forgetting "
                                 "can be undone by the caller storing the content again with restore).")

    def __str__(self) -> str:
        return f"tombstone of #{self.grain_id} ({self.reason})"


class ConfidenceEvent(models.Model):
    """One step of a grain's confidence history."""

    grain = models.ForeignKey(Grain, on_delete=models.CASCADE, related_name="confidence_events")
    confidence = models.FloatField()
    reason = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    caller = models.ForeignKey(Caller, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                               help_text="Who caused the change (a corroborating caller, a rater), if anyone.")
    related_grain_id = models.BigIntegerField(null=True, blank=True,
                                              help_text="The grain that supported or contradicted this one, if any.")

    class Meta:
        indexes = [models.Index(fields=["grain", "created_at"], name="confidence_grain_time")]

    def __str__(self) -> str:
        return f"grain {self.grain_id}: {self.confidence:.2f} ({self.reason})"


class ActivityEvent(models.Model):
    """Append-only log of what happened; the source of the live dashboard."""

    kind = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.kind} @ {self.created_at:%Y-%m-%d %H:%M:%S}"


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs: object) -> int:
        raise PermissionError("the audit log is append-only: its entries are never changed")

    def delete(self) -> tuple[int, dict]:
        raise PermissionError("the audit log is append-only: its entries are never deleted")


class AuditEvent(models.Model):
    """Who did what to the memory by hand, when, why, and what it was before and after. Append-only."""

    actor = models.CharField(max_length=120)
    action = models.CharField(max_length=32)
    grain_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    reason = models.CharField(max_length=300)
    created_at = models.DateTimeField(db_index=True)

    objects = AuditQuerySet.as_manager()

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None:
            raise PermissionError("the audit log is append-only: its entries are never changed")
        super().save(*args, **kwargs)

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict]:
        raise PermissionError("the audit log is append-only: its entries are never deleted")

    def __str__(self) -> str:
        return f"{self.action} of #{self.grain_id} by {self.actor}"


class Lock(models.Model):
    """A lock shared by every process of the instance (a dream run, a clustering): held while its row exists
    and has not expired; taken by inserting the row, so two takers never both succeed."""

    name = models.CharField(max_length=64, unique=True)
    holder = models.CharField(max_length=120)
    acquired_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} held by {self.holder} since {self.acquired_at:%Y-%m-%d %H:%M:%S}"


class RateCount(models.Model):
    """How much of a limit a key used in one window (the grains-per-minute counter when there is no Redis)."""

    name = models.CharField(max_length=200)
    slot = models.BigIntegerField(help_text="The window's number: seconds since the epoch // window length.")
    used = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "slot"], name="rate_count_name_slot")]


class LoginLinkUse(models.Model):
    """A used one-time admin login link: its nonce, unique, so the same link never logs in twice."""

    nonce = models.CharField(max_length=64, unique=True)
    used_at = models.DateTimeField()
