"""kill -9 at any moment loses nothing acknowledged: a client stores batches through `flux start`'s REST service
while it is killed again and again; its supervisor restarts it. Real processes on loopback."""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from core.net import free_port, http_answers
from tests.flux.test_cli import alive, flux

pytestmark = pytest.mark.slow  # about a minute: twenty restarts of the REST service
KILLS = 20
BATCH = 10
SAFETY_SECONDS = 240.0  # a bound on the whole run, never reached on a healthy machine


def instance(tmp_path: Path, **settings: str) -> tuple[Path, int]:
    home = tmp_path / "home"
    assert flux(home, "init", "--name", "mem", "--yes").returncode == 0
    port = free_port()
    config = home / "mem" / "config.yaml"
    extra = "".join(f"{k}: {v}\n" for k, v in settings.items())
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {port}")
                      .replace("# DASHBOARD_PORT: 7462", f"DASHBOARD_PORT: {free_port()}")
                      .replace("# MCP_PORT: 7464", f"MCP_PORT: {free_port()}") + extra)
    return home, port


def store_batch(port: int, n: int) -> bool:
    """Whether batch ``n`` was acknowledged (201); False when the service died before answering."""
    items = [{"content": f"batch {n} grain {i} of the kill test", "context": f"batch-{n}"} for i in range(BATCH)]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/store/batch", data=json.dumps({"items": items}).encode(),
                                     headers={"Content-Type": "application/json", "X-Caller-Id": "killer:test"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status == 201
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def test_twenty_kills_of_the_rest_service_lose_no_acknowledged_grain(tmp_path):
    home, port = instance(tmp_path, RESTART_BACKOFF_SECONDS="0.2", RESTART_BACKOFF_MAX_SECONDS="1",
                          MAX_GRAINS_PER_MINUTE="1000000", SEMANTIC_ENTRY="off")
    started = flux(home, "start", "--name", "mem")
    assert started.returncode == 0, started.stderr
    acked: list[int] = []
    tried = [0]
    done = threading.Event()
    deadline = time.monotonic() + SAFETY_SECONDS

    def client() -> None:
        while not done.is_set() and time.monotonic() < deadline:
            n = tried[0]
            tried[0] += 1
            if store_batch(port, n):
                acked.append(n)
            else:
                time.sleep(0.05)

    writer = threading.Thread(target=client)
    writer.start()
    rng = random.Random(7)
    kills = 0
    try:
        while kills < KILLS and time.monotonic() < deadline:
            seen = len(acked)
            while (len(acked) == seen or not http_answers(f"http://127.0.0.1:{port}/health")) \
                    and time.monotonic() < deadline:
                time.sleep(0.02)  # the restarted service answers and has taken a batch since the last kill
            time.sleep(rng.uniform(0.0, 0.3))  # then a random moment, most likely inside a batch
            rest = int((home / "mem" / "run" / "rest.pid").read_text())
            os.kill(rest, signal.SIGKILL)
            kills += 1
            while alive(rest):
                time.sleep(0.01)
    finally:
        recovered = time.monotonic() + 60
        while not http_answers(f"http://127.0.0.1:{port}/health") and time.monotonic() < recovered:
            time.sleep(0.05)  # back after the last kill
        done.set()
        writer.join(timeout=60)
        stopped = flux(home, "stop", "--name", "mem")
    assert kills == KILLS and stopped.returncode == 0
    log = (home / "mem" / "logs" / "supervisor.log").read_text()
    assert log.count("killed by signal 9") == KILLS and log.count("rest restarted") == KILLS
    with sqlite3.connect(home / "mem" / "flux.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT context, content, count(*) FROM grains_grain GROUP BY context, content").fetchall()
    per_batch: dict[str, int] = {}
    for context, content, copies in rows:
        assert copies == 1, f"{content!r} stored {copies} times"
        per_batch[context] = per_batch.get(context, 0) + 1
    assert all(count == BATCH for count in per_batch.values()), "a batch was stored in part"
    assert {f"batch-{n}" for n in acked} <= set(per_batch), "an acknowledged batch is missing"
    assert len(acked) > KILLS  # the client kept storing between the kills
