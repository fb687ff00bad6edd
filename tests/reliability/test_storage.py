"""A full database: writes get 507 in the error contract with nothing half-written, reads go on, and writing
resumes by itself once there is room again. The real server, its database capped by MAX_DATABASE_MB (SQLite's
max_page_count: the same SQLITE_FULL a full disk gives)."""
from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request

from tests.servers import flux_server


def call(base: str, path: str, body: dict | None = None) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json",
                                                                      "X-Caller-Id": "filler:test"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}"), dict(err.headers)


def batch(n: int) -> dict:
    return {"items": [{"content": f"Filler {n}-{i}: the cellar shelf holds jar {i} of plum jam batch {n}",
                       "context": f"fill-{n}"} for i in range(50)]}


def test_a_full_database_refuses_writes_whole_keeps_reading_and_recovers_when_room_returns(tmp_path):
    data = tmp_path / "inst"
    with flux_server(data, MAX_DATABASE_MB="2", MAX_GRAINS_PER_MINUTE="1000000") as (base, log):
        status, n = 201, 0
        while status == 201 and n < 400:  # bounded: 2 MB holds far fewer than 400 batches
            status, answer, headers = call(base, "/store/batch", batch(n))
            n += 1
        assert status == 507, (status, answer)
        assert answer["error"]["code"] == "storage_full" and "nothing of this request was written" in \
            answer["error"]["message"] and int(headers["Retry-After"]) > 0
        with sqlite3.connect(data / "flux.sqlite3") as db:
            assert db.execute("SELECT count(*) FROM grains_grain WHERE context = ?", [f"fill-{n - 1}"]).fetchone() \
                == (0,), "the refused batch is not there in part"
            stored = db.execute("SELECT count(*) FROM grains_grain").fetchone()[0]
        assert stored == (n - 1) * 50
        # Reads go on: retrievals answer while their traces still fit, and once not even a trace fits they answer
        # with no trace (nothing to rate); listings and health too.
        answers = []
        while not answers or answers[-1][1]["trace_id"] is not None and len(answers) < 500:
            status, found, _ = call(base, "/retrieve", {"query": f"plum jam cellar jar {len(answers)}"})
            answers.append((status, found))
        assert all(status == 200 and found["grains"] for status, found in answers)
        assert answers[-1][1]["trace_id"] is None
        assert call(base, "/grains?limit=5")[0] == 200 and call(base, "/health")[0] == 200
        singles = []
        while (not singles or singles[-1] == 201) and len(singles) < 300:  # the last crumbs of room, then none
            singles.append(call(base, "/store", {"content": f"one more jar, number {len(singles)}"})[0])
        assert singles[-1] == 507 and set(singles) <= {201, 507}
        # Room again (an operator deletes old activity): writes resume without a restart.
        with sqlite3.connect(data / "flux.sqlite3") as db:
            db.execute("DELETE FROM grains_activityevent")
        status, answer, _ = call(base, "/store", {"content": "The last jar of plum jam is for Ada"})
        assert status == 201, answer
        status, found, _ = call(base, "/retrieve", {"query": "last jar for Ada"})
        assert status == 200 and found["trace_id"] is not None
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "storage failure" in text
