from __future__ import annotations

from django.db import models


class ConduitKind(models.TextChoices):
    ASSOCIATION = "association"
    SHORTCUT = "shortcut"
    CONTRADICTS = "contradicts"
    SUPERSEDES = "supersedes"
    SUPPORTS = "supports"
    CAUSED_BY = "caused_by"
    ABSTRACTS = "abstracts"


# Typed relations of the epistemic layer.
RELATION_KINDS = (ConduitKind.SUPPORTS, ConduitKind.CONTRADICTS, ConduitKind.SUPERSEDES, ConduitKind.CAUSED_BY)

# Kinds whose meaning has a direction; signal still flows both ways unless ``directed``.
DIRECTED_KINDS = {ConduitKind.SHORTCUT, ConduitKind.SUPERSEDES, ConduitKind.CAUSED_BY, ConduitKind.ABSTRACTS}


class Cluster(models.Model):
    """A group of grains found by community detection."""

    label = models.CharField(max_length=200, blank=True)
    size = models.PositiveIntegerField(default=0)
    density = models.FloatField(default=0.0, help_text="Internal conduits / possible pairs.")
    internal_weight = models.FloatField(default=0.0, help_text="Mean weight of the internal conduits.")
    hubs = models.JSONField(default=list,
                            help_text="Most connected members, the cluster's weak neighbours in retrieval.")
    terms = models.JSONField(default=list, help_text="Most distinctive terms of the members (the label).")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.label or f"cluster {self.pk}"


class Conduit(models.Model):
    """A weighted edge between two grains. Symmetric kinds are stored with source < target."""

    source = models.ForeignKey("grains.Grain", on_delete=models.CASCADE, related_name="conduits_out")
    target = models.ForeignKey("grains.Grain", on_delete=models.CASCADE, related_name="conduits_in")
    kind = models.CharField(max_length=12, choices=ConduitKind.choices)
    directed = models.BooleanField(default=False, help_text="Signal flows only from source to target.")
    weight = models.FloatField()
    uses = models.PositiveIntegerField(default=0)
    useful_uses = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_decayed_at = models.DateTimeField()
    asserted_by = models.CharField(max_length=8, default="store",
                                   help_text="store (linking on store), learning, rules, llm or caller.")
    note = models.CharField(max_length=200, blank=True, help_text="Why a typed relation was asserted.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "target", "kind"], name="conduit_unique_pair_kind"),
            models.CheckConstraint(condition=~models.Q(source=models.F("target")), name="conduit_no_self_loop"),
        ]
        indexes = [
            models.Index(fields=["target", "directed"], name="conduit_target_directed"),
            models.Index(fields=["kind", "id"], name="conduit_kind_id"),
            models.Index(fields=["weight"], name="conduit_weight"),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.kind}-> {self.target_id} ({self.weight:.2f})"


class Trace(models.Model):
    """One retrieval: the query, who asked, and what came back."""

    query = models.TextField()
    caller = models.ForeignKey("grains.Caller", on_delete=models.PROTECT, related_name="traces")
    limit = models.PositiveSmallIntegerField()
    entry_count = models.PositiveIntegerField(default=0)
    activated_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["caller", "created_at"], name="trace_caller_time")]

    def __str__(self) -> str:
        return f"trace {self.pk}: {self.query[:60]}"


class TraceItem(models.Model):
    """A grain returned by a trace, with its rank, score and the path that reached it."""

    # No index of their own: the unique (trace, grain) and the (grain, origin_id) index lead with them, and every
    # retrieval inserts ten rows here.
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="items", db_index=False)
    grain = models.ForeignKey("grains.Grain", on_delete=models.CASCADE, related_name="trace_items", db_index=False)
    rank = models.PositiveSmallIntegerField()
    score = models.FloatField()
    signal = models.FloatField()
    hops = models.PositiveSmallIntegerField()
    origin_id = models.BigIntegerField(help_text="Entry grain the best path started from.")
    path = models.JSONField(default=list, help_text="Grain ids from the entry grain to this grain.")
    conduits = models.JSONField(default=list, help_text="Conduit ids along the path.")
    features = models.JSONField(default=dict, blank=True,
                                help_text="What the learned ranker saw of this grain (it learns from them on "
                                          "feedback).")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "grain"], name="trace_item_unique_grain")]
        indexes = [models.Index(fields=["grain", "origin_id"], name="trace_item_grain_origin")]

    def __str__(self) -> str:
        return f"trace {self.trace_id} #{self.rank}: grain {self.grain_id}"


class Feedback(models.Model):
    """A caller's verdict on one returned grain; applied to the graph by the learning service."""

    item = models.OneToOneField(TraceItem, on_delete=models.CASCADE, related_name="feedback")
    useful = models.BooleanField()
    caller = models.ForeignKey("grains.Caller", on_delete=models.PROTECT, related_name="feedback")
    created_at = models.DateTimeField()
    applied_at = models.DateTimeField(null=True, blank=True, db_index=True)

    def __str__(self) -> str:
        return f"{'useful' if self.useful else 'not useful'}: item {self.item_id}"


class GrainVector(models.Model):
    """A grain's embedding for semantic entry points, tagged with the model that made it.

    The id grows with every row written, so each process's in-memory index
    reads only what is new; the vector is float32, unit length.
    """

    grain = models.OneToOneField("grains.Grain", on_delete=models.CASCADE, related_name="vector")
    model = models.CharField(max_length=64, help_text="The embedding model that made the vector.")
    vector = models.BinaryField()

    def __str__(self) -> str:
        return f"vector of grain {self.grain_id} ({self.model})"


class RankerWeight(models.Model):
    """One learned weight of the re-ranker: a feature's (``feature:length``) or a query word's (``word:pixel``)."""

    key = models.CharField(max_length=120, unique=True)
    weight = models.FloatField(default=0.0)
    updates = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key} = {self.weight:.3f}"


class GraphChange(models.Model):
    """One row changed in what retrieval reads of the graph (a grain's rank fields, a conduit, a cluster's hubs),
    appended by database triggers: each process's in-memory mirror (graph.mirror) reads the rows after the last
    one it applied. On SQLite ``token`` is random, so a mirror notices rows it applied that were since rolled
    back; on PostgreSQL a column the model leaves out, ``xact``, holds the id of the transaction that wrote the
    row (its transactions commit out of id order: a mirror reads the rows of those its last read did not see)."""

    GRAIN, CONDUIT, CLUSTER = 1, 2, 3
    PRUNED = 0  # PostgreSQL: the prune deleted rows of transactions up to ``row`` (graph.mirror.changes_prune)
    kind = models.PositiveSmallIntegerField()
    row = models.BigIntegerField()
    token = models.BigIntegerField()
