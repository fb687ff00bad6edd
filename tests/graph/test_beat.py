"""A real Celery worker with beat runs every scheduled task: on the embedded broker, and on a real Redis."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.servers import ROOT, flux_server, redis_server

SCHEDULED = {"graph.decay_swept", "graph.clusters_rebuilt", "epistemic.pass_completed", "dreams.cycle_completed",
             "vitals.snapshot"}
SEED = """
from flux.sdk import Flux
mem = Flux.embedded(caller="seed:test")
mem.store_batch([{"content": c, "context": "chat-1"} for c in (
    "Alice lives in Paris", "Alice works as a nurse in Paris", "Alice has a cat named Tom",
    "Bob plays the cello", "Bob practices the cello every evening", "Bob lives near the river")])
"""


def environ(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "FLUX_DATA_DIR": str(data_dir), "DECAY_INTERVAL_SECONDS": "1",
           "CLUSTER_INTERVAL_SECONDS": "1", "EPISTEMIC_INTERVAL_SECONDS": "1", "DREAM_INTERVAL_SECONDS": "1",
           "HEALTH_INTERVAL_SECONDS": "1", **extra}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def prepare(data_dir: Path, **extra: str) -> dict[str, str]:
    env = environ(data_dir, **extra)
    for argv in (["manage.py", "migrate", "--no-input"], ["manage.py", "flux_broker_prepare"], ["-c", SEED]):
        subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, check=True, capture_output=True, timeout=300)
    return env


def run_worker_until_every_task_ran(data_dir: Path, **extra: str) -> set[str]:
    """Prepare an instance, start `celery worker --beat` on it, and wait (at most 90 s) for each scheduled task."""
    env = prepare(data_dir, **extra)
    log = data_dir / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "fluxsite", "worker", "--beat", "--pool",
                                   "solo", "--loglevel", "INFO"],
                                  cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 90
        while not SCHEDULED <= seen and time.monotonic() < deadline and worker.poll() is None:
            time.sleep(0.5)
            with sqlite3.connect(data_dir / "flux.sqlite3", timeout=30) as db:
                seen = {k for (k,) in db.execute("SELECT DISTINCT kind FROM grains_activityevent")}
                if db.execute("SELECT count(*) FROM vitals_snapshot").fetchone()[0]:
                    seen.add("vitals.snapshot")
    finally:
        running = stopped(worker, log)
    assert SCHEDULED <= seen, running[-3000:]
    no_errors(running, log.read_text())
    return seen


def stopped(worker: subprocess.Popen, log: Path) -> str:
    """Stop ``worker``; what it logged before. A SIGTERM that lands while the embedded beat's process is in a
    finaliser (a sent task's AsyncResult.__del__) prints "Exception ignored in ... SystemExit" with a traceback
    on the way out: Celery's shutdown, not the tasks' work, which is what these tests read the log for."""
    running = log.read_text()
    worker.terminate()
    worker.wait(timeout=60)
    return running


def no_errors(running: str, whole: str) -> None:
    """No traceback in what was logged while running, and no locked database in the whole log."""
    assert "Traceback" not in running and "database is locked" not in whole, running[-3000:]


def clusters_of(data_dir: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(data_dir / "flux.sqlite3", timeout=30) as db:
        return db.execute("SELECT label, size FROM graph_cluster ORDER BY size DESC").fetchall()


def test_beat_runs_every_scheduled_task_on_the_embedded_broker(tmp_path):
    run_worker_until_every_task_ran(tmp_path / "inst")
    assert (tmp_path / "inst" / "celery-broker.sqlite3").exists()
    assert clusters_of(tmp_path / "inst"), "the clustering task stored clusters"


def test_beat_runs_every_scheduled_task_on_redis(tmp_path):
    with redis_server() as url:
        run_worker_until_every_task_ran(tmp_path / "inst", REDIS_URL=url)
    assert not (tmp_path / "inst" / "celery-broker.sqlite3").exists(), "with REDIS_URL the broker is Redis"
    assert clusters_of(tmp_path / "inst")


def test_maintenance_runs_beside_a_storing_rest_service_without_locking_it(tmp_path):
    """The worker re-clusters, sweeps and reviews every second while a client stores through the REST API."""
    data_dir = tmp_path / "inst"
    env = prepare(data_dir)
    extra = {k: env[k] for k in env if k.endswith("_INTERVAL_SECONDS")}
    with flux_server(data_dir, **extra, MAX_GRAINS_PER_MINUTE="100000") as (base, server_log):
        log = data_dir / "worker.log"
        with open(log, "wb") as out:
            worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "fluxsite", "worker", "--beat",
                                       "--pool", "solo"],
                                      cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        statuses: list[int] = []
        try:  # store until the worker has re-clustered three times; bounded by count and time
            deadline = time.monotonic() + 90
            while len(statuses) < 300 and time.monotonic() < deadline and rebuilds(data_dir) < 3:
                statuses.append(store_batch(base, len(statuses)))
        finally:
            running = stopped(worker, log)
    assert rebuilds(data_dir) >= 3, running[-3000:]
    assert statuses == [201] * len(statuses)
    with sqlite3.connect(data_dir / "flux.sqlite3", timeout=30) as db:
        assert db.execute("SELECT count(*) FROM grains_grain WHERE level = 0").fetchone()[0] == 6 + len(statuses) * 25
    no_errors(running, log.read_text())
    served = server_log.read_text()
    no_errors(served, served)


def rebuilds(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "flux.sqlite3", timeout=30) as db:
        return db.execute("SELECT count(*) FROM grains_activityevent WHERE kind = 'graph.clusters_rebuilt'"
                          ).fetchone()[0]


def store_batch(base: str, n: int) -> int:
    import json
    import urllib.request

    items = [{"content": f"Maintenance probe {n}-{i}: Kim repaired lamp {i} in room {n}", "context": f"probe-{n}"}
             for i in range(25)]
    request = urllib.request.Request(base + "/store/batch", data=json.dumps({"items": items}).encode(),
                                     headers={"Content-Type": "application/json", "X-Caller-Id": "probe:test"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status


def test_a_young_memory_is_clustered_within_seconds_of_growing_not_hours(tmp_path):
    """The fixed clock is an hour away; the growth check (every second here) clusters the seeded grains, stays
    quiet while nothing is stored, and re-clusters once CLUSTER_GROWTH_GRAINS more arrive."""
    import json
    import urllib.request

    data_dir = tmp_path / "inst"
    env = prepare(data_dir, CLUSTER_INTERVAL_SECONDS="3600", CLUSTER_CHECK_SECONDS="1", CLUSTER_GROWTH_GRAINS="20",
                  DREAM_INTERVAL_SECONDS="3600")
    extra = {k: env[k] for k in env if k.startswith(("CLUSTER_", "DREAM_"))}
    with flux_server(data_dir, **extra) as (base, _):
        def clusters() -> list:
            with urllib.request.urlopen(base + "/clusters", timeout=30) as response:
                return json.load(response)["clusters"]

        assert clusters() == []
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "fluxsite", "worker", "--beat", "--pool",
                                   "solo"], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while rebuilds(data_dir) < 1 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert rebuilds(data_dir) == 1 and clusters(), "the first check clusters the young memory"
            time.sleep(4)  # four checks, nothing stored
            assert rebuilds(data_dir) == 1
            assert store_batch(base, 1) == 201  # 25 grains >= CLUSTER_GROWTH_GRAINS
            deadline = time.monotonic() + 60
            while rebuilds(data_dir) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert rebuilds(data_dir) == 2
        finally:
            worker.terminate()
            worker.wait(timeout=60)
