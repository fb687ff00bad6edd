from __future__ import annotations

import threading

import pytest
from django.core.cache import cache
from django.test import Client

from core.booth import get_booth
from vitals.services import gauges_recount


class Api:
    """A test client speaking JSON with caller headers."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def post(self, path: str, body: object, caller: str | None = "tester:test", **headers: str):
        if caller:
            headers["HTTP_X_CALLER_ID"] = caller
        return self.client.post(path, body, content_type="application/json", **headers)

    def get(self, path: str, **params: object):
        return self.client.get(path, params)


@pytest.fixture
def api(transactional_db) -> Api:
    cache.clear()
    gauges_recount()  # the flush after an earlier test deleted rows under the gauge triggers
    yield Api(Client())
    get_booth().drain()


@pytest.fixture
def blocked_writes():
    """Hold the write thread busy until released; yields a function queueing more blocked jobs."""
    gate = threading.Event()
    booth = get_booth()

    def block(n: int) -> None:
        for _ in range(n):
            booth.write(gate.wait)

    yield block
    gate.set()
    booth.drain()
