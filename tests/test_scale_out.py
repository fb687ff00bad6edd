"""Scaled out on PostgreSQL and Redis: two REST processes, a dashboard and two workers, each with a data folder
of its own, so the database and Redis are all they share. A store through one REST process is retrieved
through the other and reaches the dashboard's socket at once; the rate limit counts across both; the same
content stored through both at once is one grain, corroborated once; of two beats one sends, and the other
takes over when it stops. And `flux start --web-workers 2` runs two REST processes on one port."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import psycopg
import pytest
from websockets.sync.client import connect

from core.net import free_port
from tests.flux.test_cli import alive, flux
from tests.servers import ROOT, dashboard_server, flux_server, postgres_control, postgres_server, redis_server

pytestmark = pytest.mark.slow  # PostgreSQL, Redis and five Django processes


def call(base: str, path: str, body: dict | None = None, caller: str = "scale:test") -> tuple[int, dict]:
    request = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "X-Caller-Id": caller})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def answers(base: str) -> bool:
    try:
        return call(base, "/health")[0] == 200
    except ConnectionError:
        return False


def worker(data: Path, log: Path, env: dict[str, str]) -> subprocess.Popen:
    environ = {**os.environ, **env, "FLUX_DATA_DIR": str(data)}
    environ.pop("DJANGO_SETTINGS_MODULE", None)
    data.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "fluxsite", "worker", "--beat", "--pool",
                                 "solo", "--loglevel", "INFO", "-n", f"{data.name}@%h"],
                                cwd=ROOT, env=environ, stdout=out, stderr=subprocess.STDOUT)


def stored_through_both_at_once(a: str, b: str, text: str) -> dict[str, tuple[int, dict]]:
    """``text`` stored through the services at ``a`` and ``b`` at the same moment (callers a:test and b:test);
    each one's (status, answer)."""
    results: dict[str, tuple[int, dict]] = {}
    go = threading.Barrier(2)

    def store(name: str, base: str) -> None:
        go.wait()
        results[name] = call(base, "/store", {"content": text}, caller=f"{name}:test")

    threads = [threading.Thread(target=store, args=(name, base)) for name, base in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def snapshots(url: str) -> int:
    with psycopg.connect(url) as db:
        return db.execute("SELECT count(*) FROM vitals_snapshot").fetchone()[0]


def test_two_rest_processes_a_dashboard_and_two_workers_share_only_postgresql_and_redis(tmp_path):
    with ExitStack() as stack:
        url, redis = stack.enter_context(postgres_server()), stack.enter_context(redis_server())
        env = {"DATABASE_URL": url, "REDIS_URL": redis, "RATE_RETRIEVE": "8/m", "HEALTH_INTERVAL_SECONDS": "1",
               "BEAT_LEASE_SECONDS": "6", "FEEDBACK_ENFORCEMENT_ENABLED": "false"}
        a, _ = stack.enter_context(flux_server(tmp_path / "a", **env))
        b, _ = stack.enter_context(flux_server(tmp_path / "b", **env))
        board, _ = stack.enter_context(dashboard_server(tmp_path / "board", **env))
        ws = stack.enter_context(connect(board.replace("http://", "ws://") + "/ws/activity", origin=board,
                                         open_timeout=30))
        assert json.loads(ws.recv(timeout=30))["type"] == "snapshot"

        # A store through A: retrieved through B, and on the dashboard's socket at once (pushed through Redis, in
        # milliseconds; the bound leaves room for a loaded machine).
        sent = time.monotonic()
        status, stored = call(a, "/store", {"content": "Marta keeps bees on the roof of the library"})
        assert status == 201
        grain_id = stored["grain"]["id"]
        seen = None
        while seen is None and time.monotonic() - sent < 5:
            message = json.loads(ws.recv(timeout=5))
            seen = next((e for e in message.get("events", []) if e["kind"] == "grains.grain_stored"
                         and e["payload"]["grain_id"] == grain_id), None)
        assert seen is not None and time.monotonic() - sent < 3.0, "the store reached the dashboard within 3 s"
        status, found = call(b, "/retrieve", {"query": "Who keeps bees?"})
        assert status == 200 and found["grains"][0]["id"] == grain_id

        # The same content through A and B at once: one grain, corroborated once (by the second caller).
        for n in range(5):
            text = f"Round {n}: the ferry to Tarsa leaves at {7 + n} every morning"
            results = stored_through_both_at_once(a, b, text)
            assert sorted(r[0] for r in results.values()) == [200, 201], results
        with psycopg.connect(url) as db:
            assert db.execute("SELECT count(*), count(DISTINCT content_hash) FROM grains_grain "
                              "WHERE content LIKE 'Round %%'").fetchone() == (5, 5)
            assert db.execute("SELECT count(*) FROM grains_confidenceevent WHERE reason = 'corroborated'"
                              ).fetchone()[0] == 5

        # RATE_RETRIEVE 8/m per client, counted in Redis whichever process answers.
        codes = [call(a if n % 2 else b, "/retrieve", {"query": "ferry"}, caller="greedy:test")[0] for n in range(10)]
        assert codes == [200] * 8 + [429, 429], codes

        # Two workers, each with beat: one sends the health snapshot every second, not two.
        first = worker(tmp_path / "w1", tmp_path / "w1.log", env)
        stack.callback(lambda: (first.terminate(), first.wait(60)))
        deadline = time.monotonic() + 60
        while snapshots(url) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        second = worker(tmp_path / "w2", tmp_path / "w2.log", env)
        stack.callback(lambda: (second.terminate(), second.wait(60)))
        time.sleep(3)  # the second beat is up
        start, began = snapshots(url), time.monotonic()
        time.sleep(8)
        made = snapshots(url) - start
        assert 4 <= made <= (time.monotonic() - began) + 2, made  # about one a second: one beat sends
        logs = [(tmp_path / f"w{n}.log").read_text() for n in (1, 2)]
        assert [log.count("now sends the periodic tasks") for log in logs] == [1, 0], logs[1][-2000:]
        first.terminate()
        first.wait(60)
        stopped = snapshots(url)
        deadline = time.monotonic() + 30
        while snapshots(url) <= stopped + 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert snapshots(url) > stopped + 2, "the second beat took over"
        assert "now sends the periodic tasks" in (tmp_path / "w2.log").read_text()


def test_flux_start_runs_web_workers_rest_processes_on_one_port(tmp_path):
    home = tmp_path / "home"
    assert flux(home, "init", "--name", "mem", "--yes").returncode == 0
    port = free_port()
    config = home / "mem" / "config.yaml"
    config.write_text(config.read_text() + f"REST_PORT: {port}\nDASHBOARD_PORT: {free_port()}\n"
                      f"MCP_PORT: {free_port()}\nSEMANTIC_ENTRY: off\n")
    started = flux(home, "start", "--name", "mem", "--web-workers", "2")  # on SQLite: the writers take turns
    try:
        assert started.returncode == 0, started.stderr
        assert "\nWEB_WORKERS: 2\n" in config.read_text()
        pids = {p.stem: int(p.read_text()) for p in (home / "mem" / "run").glob("rest*.pid")}
        assert set(pids) == {"rest", "rest-2"}
        base = f"http://127.0.0.1:{port}"
        assert call(base, "/store", {"content": "Two processes, one port"})[0] == 201
        assert all(call(base, "/health")[0] == 200 for _ in range(20))
        os.kill(pids["rest"], 9)  # the other answers alone; the supervisor starts a new one
        deadline = time.monotonic() + 10
        while alive(pids["rest"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        # A connection the kernel had just handed to the killed process's socket is reset (as with any server
        # killed mid-accept): its main thread shows as a zombie while its other threads, which still hold the
        # socket, are being torn down, so one may be reset after another was answered. Within a few seconds every
        # request is answered again: 20 in a row.
        streak = 0
        while streak < 20 and time.monotonic() < deadline:
            if answers(base):
                streak += 1
            else:
                streak = 0
                time.sleep(0.1)
        assert streak == 20
        status = flux(home, "status", "--name", "mem")
        deadline = time.monotonic() + 30
        while "rest:" not in status.stdout or status.returncode != 0:
            assert time.monotonic() < deadline, status.stdout
            time.sleep(0.5)
            status = flux(home, "status", "--name", "mem")
        assert "rest-2:" in status.stdout
    finally:
        flux(home, "stop", "--name", "mem")


def test_postgresql_down_is_a_503_that_says_so_and_back_is_served_at_once(tmp_path):
    """PostgreSQL stopped under a running REST process: each call is a 503 database_unavailable with Retry-After
    (the SDK retries it), never a bare 500; started again, the very next calls are served (a kept connection the
    server dropped is found out before a request uses it)."""
    with postgres_server() as url, flux_server(tmp_path / "rest", DATABASE_URL=url) as (base, _):
        assert call(base, "/store", {"content": "Lena grows tomatoes in the greenhouse"})[0] == 201
        assert call(base, "/retrieve", {"query": "greenhouse tomatoes"})[0] == 200
        postgres_control(url, "stop")
        for path, body in (("/retrieve", {"query": "greenhouse tomatoes"}), ("/store", {"content": "Lena sells"}),
                           ("/health", None)):
            request = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json", "X-Caller-Id": "pg:test"})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=60)
            answer = json.loads(refused.value.read())
            assert refused.value.code == 503 and answer["error"]["code"] == "database_unavailable", (path, answer)
            assert refused.value.headers["Retry-After"] == "5"
        postgres_control(url, "start")
        statuses = [call(base, "/retrieve", {"query": "greenhouse tomatoes"})[0] for _ in range(8)]
        assert statuses == [200] * 8
        assert call(base, "/store", {"content": "Lena sells tomatoes at the market"})[0] == 201
