"""The per-client rate limit holds across processes: two servers on one Redis, or on one SQLite file."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import redis

from tests.servers import flux_server, redis_server


def store_batch(base: str, start: int, count: int) -> int:
    items = [{"content": f"shared limit grain {i}"} for i in range(start, start + count)]
    request = urllib.request.Request(base + "/store/batch", data=json.dumps({"items": items}).encode(),
                                     headers={"Content-Type": "application/json", "X-Caller-Id": "busy:chat"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_the_limit_is_shared_by_two_server_processes(tmp_path):
    with redis_server() as redis_url:
        env = {"REDIS_URL": redis_url}
        with flux_server(tmp_path / "inst", **env) as (first, _), flux_server(tmp_path / "inst", **env) as (second, _):
            if 60 - time.time() % 60 < 15:  # the limit counts per clock minute: don't straddle one
                time.sleep(60 - time.time() % 60 + 0.1)
            assert [store_batch(first, i, 100) for i in (0, 100, 200)] == [201, 201, 201]
            assert [store_batch(second, i, 100) for i in (300, 400)] == [201, 201]
            assert store_batch(second, 500, 1) == 429  # the 501st grain of the minute, in the other process
            assert store_batch(first, 501, 1) == 429
        counters = redis.Redis.from_url(redis_url)
        keys = list(counters.scan_iter("*grains-per-minute:busy:*"))  # per client, every role
        assert len(keys) == 1 and int(counters.get(keys[0])) == 500  # the count lives in Redis


def test_without_redis_the_limit_is_shared_through_the_database(tmp_path):
    """The embedded default: two server processes on one SQLite file count in one atomic row, across roles."""
    import sqlite3

    with flux_server(tmp_path / "inst") as (first, _), flux_server(tmp_path / "inst") as (second, _):
        if 60 - time.time() % 60 < 15:
            time.sleep(60 - time.time() % 60 + 0.1)
        assert [store_batch(first, i, 100) for i in (0, 100, 200)] == [201, 201, 201]
        assert [store_batch(second, i, 100) for i in (300, 400)] == [201, 201]
        assert store_batch(second, 500, 1) == 429 and store_batch(first, 501, 1) == 429
    with sqlite3.connect(tmp_path / "inst" / "flux.sqlite3") as db:
        assert db.execute("SELECT name, used FROM grains_ratecount").fetchall() == [("grains-per-minute:busy", 500)]
