"""Redis stopped under a running service and started again: stores and retrievals go on, /health says Redis is
down, the grain count falls back to the database, and all is back when Redis returns. Real Redis and server."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from contextlib import ExitStack
from urllib.parse import urlsplit

from tests.servers import flux_server, redis_server


def call(base: str, path: str, body: dict | None = None, caller: str = "steady:test") -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json",
                                                                      "X-Caller-Id": caller})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def test_stores_and_retrievals_go_on_while_redis_is_down_and_health_says_so(tmp_path):
    with ExitStack() as redis:
        url = redis.enter_context(redis_server())
        with flux_server(tmp_path / "inst", REDIS_URL=url, MAX_GRAINS_PER_MINUTE="30") as (base, log):
            assert call(base, "/store", {"content": "Redis is up: the ferry leaves at nine"})[0] == 201
            assert call(base, "/health")[1]["redis"] == {"configured": True, "up": True}
            redis.close()  # Redis stops under the running service
            statuses = [call(base, "/store", {"content": f"Redis is down: note {i} about the ferry"})[0]
                        for i in range(5)]
            assert statuses == [201] * 5
            status, found = call(base, "/retrieve", {"query": "ferry"})
            assert status == 200 and found["grains"]
            assert call(base, "/health")[1]["redis"] == {"configured": True, "up": False}
            # The grain count goes on in the database: the limit still holds without Redis.
            status, answer = call(base, "/store/batch", {"items": [{"content": f"overflow {i} of the ferry log"}
                                                                   for i in range(26)]})
            assert status == 429 and answer["error"]["code"] == "rate_limited"
            with redis_server(urlsplit(url).port) as again:  # Redis back on its port
                assert again == url
                assert call(base, "/health")[1]["redis"] == {"configured": True, "up": True}
                assert call(base, "/store", {"content": "Redis is back: the ferry runs late"},
                            caller="other:test")[0] == 201
                status, found = call(base, "/retrieve", {"query": "ferry runs late"}, caller="other:test")
                assert status == 200 and found["grains"][0]["content"] == "Redis is back: the ferry runs late"
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Redis at REDIS_URL does not answer" in text
