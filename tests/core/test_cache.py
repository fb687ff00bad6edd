"""The shared cache without Redis (core.cache.SqliteCache): exact counters across threads and processes, expiry,
values of any kind, a private file."""
from __future__ import annotations

import multiprocessing
import stat
import threading
import time

import pytest

from core.cache import SqliteCache


def _cache(path) -> SqliteCache:
    return SqliteCache(str(path / "cache" / "cache.sqlite3"), {})


def test_add_sets_only_what_is_missing_or_expired(tmp_path):
    cache = _cache(tmp_path)
    assert cache.add("k", 1, timeout=60)
    assert not cache.add("k", 5, timeout=60)
    assert cache.get("k") == 1
    cache.set("gone", 3, timeout=0.05)
    time.sleep(0.1)
    assert cache.get("gone", "none") == "none"
    assert not cache.has_key("gone")
    assert cache.add("gone", 7, timeout=60)
    assert cache.get("gone") == 7


def test_incr_counts_in_place_and_refuses_what_is_not_there(tmp_path):
    cache = _cache(tmp_path)
    cache.add("n", 0, timeout=60)
    assert cache.incr("n") == 1
    assert cache.incr("n", 10) == 11
    assert cache.decr("n", 2) == 9
    with pytest.raises(ValueError, match="not found"):
        cache.incr("missing")
    cache.set("text", "a", timeout=60)
    with pytest.raises(ValueError):
        cache.incr("text")


def test_values_of_any_kind_round_trip_and_the_file_is_private(tmp_path):
    cache = _cache(tmp_path)
    value = {"a": [1, 2.5, None], "b": ("x", b"\x00")}
    cache.set("v", value, timeout=None)
    cache.set("big", 2**70)
    assert cache.get("v") == value and cache.get("big") == 2**70
    assert cache.touch("v", timeout=60) and not cache.touch("nothing")
    assert cache.delete("v") and cache.get("v") is None
    cache.clear()
    assert cache.get("big") is None
    assert stat.S_IMODE((tmp_path / "cache" / "cache.sqlite3").stat().st_mode) == 0o600


def _count(path, times: int) -> None:
    cache = _cache(path)
    for _ in range(times):
        cache.add("hits", 0, timeout=60)
        cache.incr("hits")


def test_counts_are_exact_across_threads_and_processes(tmp_path):
    threads = [threading.Thread(target=_count, args=(tmp_path, 200)) for _ in range(4)]
    processes = [multiprocessing.get_context("spawn").Process(target=_count, args=(tmp_path, 200)) for _ in range(2)]
    for worker in threads + processes:
        worker.start()
    for worker in threads + processes:
        worker.join(60)
    assert all(p.exitcode == 0 for p in processes)
    assert _cache(tmp_path).get("hits") == 6 * 200


def test_a_new_file_opened_by_many_threads_at_once_never_refuses_one(tmp_path):
    # SQLite refuses a switch to WAL while another connection's is under way ("database is locked", without
    # waiting): the first rate-limited requests of a new instance, arriving together, met it (a 500 once in
    # 100-odd fresh files before the file was made ready under a lock). Each thread has its own cache object,
    # as Django gives each thread.
    errors: list[str] = []

    def first_use(path, barrier: threading.Barrier) -> None:
        cache = _cache(path)
        barrier.wait()
        try:
            if not cache.add("hits", 1, timeout=60):
                cache.incr("hits")
        except Exception as exc:  # noqa: BLE001 - counted below
            errors.append(repr(exc))

    for trial in range(300):
        folder, barrier = tmp_path / str(trial), threading.Barrier(8)
        threads = [threading.Thread(target=first_use, args=(folder, barrier)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == [] and _cache(folder).get("hits") == 8, trial
