"""8 clients storing, retrieving and rating at once against the real server."""
from __future__ import annotations

import json
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections import Counter

from tests.servers import flux_server

CLIENTS = 8
CALLS = 45  # per client: several seconds of traffic here; the count, not the clock, ends the run
SAFETY_SECONDS = 120.0  # a bound on the loop, never reached on a healthy service


def call(base: str, path: str, body: dict, caller: str) -> tuple[int, dict]:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-Caller-Id": caller})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def client_loop(base: str, n: int, acked: list[str], statuses: Counter, lock: threading.Lock) -> None:
    caller = f"load{n}:test"
    deadline = time.monotonic() + SAFETY_SECONDS
    for i in range(CALLS):
        if time.monotonic() > deadline:
            break
        if i % 3 == 2:
            status, body = call(base, "/retrieve", {"query": f"client {n} note {i - 1} harbour"}, caller)
            if status == 200 and body["grains"]:
                grain = body["grains"][0]["id"]
                fb, _ = call(base, "/feedback", {"trace_id": body["trace_id"], "grain_id": grain, "useful": True},
                             caller)
                with lock:
                    statuses[fb] += 1
        elif i % 7 == 0:
            items = [{"content": f"client {n} batch {i} item {k} about the harbour", "context": f"c{n}"}
                     for k in range(5)]
            status, body = call(base, "/store/batch", {"items": items}, caller)
            if status == 201:
                with lock:
                    acked.extend(item["content"] for item in items)
        else:
            content = f"client {n} note {i} about the harbour lights"
            status, body = call(base, "/store", {"content": content, "context": f"c{n}"}, caller)
            if status in (200, 201):
                with lock:
                    acked.append(content)
        with lock:
            statuses[status] += 1


def test_concurrent_clients_lose_nothing_and_duplicate_nothing(tmp_path):
    with flux_server(tmp_path / "inst", MAX_GRAINS_PER_MINUTE="100000") as (base, log):
        acked: list[str] = []
        statuses: Counter = Counter()
        lock = threading.Lock()
        threads = [threading.Thread(target=client_loop, args=(base, n, acked, statuses, lock)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=SAFETY_SECONDS + 30)
        with urllib.request.urlopen(base + "/health", timeout=30) as response:
            health = json.loads(response.read())
    db = sqlite3.connect(tmp_path / "inst" / "flux.sqlite3")
    stored = Counter(row[0] for row in db.execute("SELECT content FROM grains_grain"))
    pending = db.execute("SELECT COUNT(*) FROM graph_feedback WHERE applied_at IS NULL").fetchone()[0]
    applied = db.execute("SELECT COUNT(*) FROM graph_feedback WHERE applied_at IS NOT NULL").fetchone()[0]
    output = log.read_text(errors="replace")
    assert sum(statuses.values()) - statuses[202] == CLIENTS * CALLS, statuses  # every planned call was answered
    assert set(statuses) <= {200, 201, 202}, f"{statuses}\n{output[-4000:]}"
    assert all(stored[c] == 1 for c in acked), "an acknowledged grain is missing or stored twice"
    assert sum(stored.values()) == len(set(acked))
    assert statuses[202] > 20 and pending == 0 and applied == statuses[202]  # every accepted rating applied
    assert health["grains"]["total"] == sum(stored.values())  # health counted every store as it ended
    assert "database is locked" not in output and "Traceback" not in output
