from __future__ import annotations

from django.db import models


class Counter(models.Model):
    """What the services counted in one hour: retrievals, ratings, promotions ... Signals sum a window of them."""

    name = models.CharField(max_length=40)
    bucket = models.DateTimeField(help_text="Start of the hour counted.")
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "bucket"], name="counter_unique_name_bucket")]
        indexes = [models.Index(fields=["bucket", "name"], name="counter_bucket_name")]

    def __str__(self) -> str:
        return f"{self.name} @ {self.bucket:%Y-%m-%d %H}: {self.value:g}"


class Gauge(models.Model):
    """An exact current count (grains by status and tier, conduits by kind), kept by database triggers."""

    name = models.CharField(max_length=40, unique=True)
    value = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"{self.name}: {self.value:g}"


class Snapshot(models.Model):
    """Every signal's value and state at one time."""

    created_at = models.DateTimeField(db_index=True)
    status = models.CharField(max_length=10)
    signals = models.JSONField(default=dict, help_text="name -> {value, state}")

    def __str__(self) -> str:
        return f"snapshot {self.created_at:%Y-%m-%d %H:%M} ({self.status})"


class HealthWarning(models.Model):
    """A signal out of its range: raised once, cleared when it returns."""

    signal = models.CharField(max_length=40)
    severity = models.CharField(max_length=10)
    value = models.FloatField(null=True)
    message = models.CharField(max_length=300)
    raised_at = models.DateTimeField()
    cleared_at = models.DateTimeField(null=True, blank=True)
    alert_status = models.CharField(max_length=12, default="none", help_text="none, sent or failed (Telegram).")

    class Meta:
        indexes = [models.Index(fields=["cleared_at", "signal"], name="warning_open_signal")]

    def __str__(self) -> str:
        return f"{self.signal} ({'open' if self.cleared_at is None else 'cleared'})"
