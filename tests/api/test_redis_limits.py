"""The per-client rate limit holds across processes: two servers on one Redis, or on one SQLite file."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import redis

from tests.servers import flux_server, redis_server
from tests.windows import clock_minute, in_one_window


def store_batch(base: str, start: int, count: int, client: str = "busy") -> int:
    items = [{"content": f"{client} limit grain {i}"} for i in range(start, start + count)]
    request = urllib.request.Request(base + "/store/batch", data=json.dumps({"items": items}).encode(),
                                     headers={"Content-Type": "application/json", "X-Caller-Id": f"{client}:chat"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def burst(first: str, second: str, client: str) -> tuple[str, list[int]]:
    """500 grains in three batches through one process and two through the other, then one more in each (the
    501st of the minute, refused in both when the count is shared): the statuses."""
    statuses = [store_batch(first, i, 100, client) for i in (0, 100, 200)]
    statuses += [store_batch(second, i, 100, client) for i in (300, 400)]
    return client, [*statuses, store_batch(second, 500, 1, client), store_batch(first, 501, 1, client)]


SHARED = [201] * 5 + [429, 429]


def test_the_limit_is_shared_by_two_server_processes(tmp_path):
    with redis_server() as redis_url:
        env = {"REDIS_URL": redis_url}
        with flux_server(tmp_path / "inst", **env) as (first, _), flux_server(tmp_path / "inst", **env) as (second, _):
            client, statuses = in_one_window(lambda n: burst(first, second, f"busy{n}"), clock_minute)
        assert statuses == SHARED
        counters = redis.Redis.from_url(redis_url)
        keys = list(counters.scan_iter(f"*grains-per-minute:{client}:*"))  # per client, every role
        assert len(keys) == 1 and int(counters.get(keys[0])) == 500  # the count lives in Redis


def test_without_redis_the_limit_is_shared_through_the_database(tmp_path):
    """The embedded default: two server processes on one SQLite file count in one atomic row, across roles."""
    import sqlite3

    with flux_server(tmp_path / "inst") as (first, _), flux_server(tmp_path / "inst") as (second, _):
        client, statuses = in_one_window(lambda n: burst(first, second, f"busy{n}"), clock_minute)
    assert statuses == SHARED
    with sqlite3.connect(tmp_path / "inst" / "flux.sqlite3") as db:
        counted = dict(db.execute("SELECT name, used FROM grains_ratecount").fetchall())
        assert counted[f"grains-per-minute:{client}"] == 500
