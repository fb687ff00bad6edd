"""Background work killed with -9 mid-run leaves nothing half-done, and the next run finishes it, never twice in
effect: a dream cycle killed between two clumps, a clustering killed at random moments. Real processes."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.graph.test_untested_behaviours import CLUMPS
from tests.servers import ROOT, fake_ollama

pytestmark = pytest.mark.slow  # several Django processes


def django(data: Path, code: str, **env: str) -> subprocess.Popen:
    environ = {**os.environ, "FLUX_DATA_DIR": str(data), "DJANGO_SETTINGS_MODULE": "fluxsite.settings", **env}
    return subprocess.Popen([sys.executable, "-c", "import django; django.setup()\n" + code], cwd=ROOT, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(data: Path, code: str, **env: str) -> str:
    proc = django(data, code, **env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return out


def query(data: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(data / "flux.sqlite3", timeout=30) as db:
        return db.execute(sql).fetchall()


def grounded(body: dict) -> tuple[int, dict]:
    """The LLM, slowly: answers with the first source sentence of the prompt (grounded, so the gate accepts it)."""
    time.sleep(1.0)  # an LLM takes its time: the cycle is killed while it waits
    first = next(c for contents in CLUMPS.values() for c in contents if c in body["prompt"])
    return 200, {"model": body["model"], "response": json.dumps({"abstraction": first + "."})}


def test_a_dream_cycle_killed_between_clumps_is_finished_by_the_next_run_with_no_clump_dreamt_twice(tmp_path):
    data = tmp_path / "inst"
    run(data, "from django.core.management import call_command; call_command('migrate', verbosity=0)")
    run(data, "from memory.store import grain_store_batch; from memory.upkeep import cluster_rebuild\n"
              f"clumps = {CLUMPS!r}\n"
              "for context, contents in clumps.items():\n"
              "    grain_store_batch(items=[{'content': c, 'context': context} for c in contents])\n"
              "assert cluster_rebuild().clusters == len(clumps)")
    with fake_ollama(grounded) as (url, _):
        llm = {"DREAM_LLM": "true", "OLLAMA_URL": url}
        cycle = django(data, "from memory.dreaming import dream_run; print(dream_run())", **llm)
        deadline = time.monotonic() + 120
        while not query(data, "SELECT count(*) FROM dreams_dream")[0][0] and time.monotonic() < deadline:
            time.sleep(0.05)
        cycle.send_signal(signal.SIGKILL)  # during the next clump's wait for the LLM
        cycle.communicate(timeout=60)
        first = query(data, "SELECT count(*) FROM dreams_dream")[0][0]
        assert 1 <= first < len(CLUMPS), "killed mid-cycle"
        assert query(data, "SELECT count(*) FROM grains_lock WHERE name = 'dream_run'")[0][0] == 1  # left behind
        out = run(data, "from memory.dreaming import dream_run; r = dream_run(); print(len(r.accepted))", **llm)
    assert int(out.strip().splitlines()[-1]) == len(CLUMPS) - first  # the rest, not the ones already dreamt
    dreams = query(data, "SELECT signature, grain_id FROM dreams_dream")
    assert len(dreams) == len(CLUMPS) == len({s for s, _ in dreams})  # each clump once
    abstractions = query(data, "SELECT count(*) FROM grains_grain WHERE level = 1")[0][0]
    assert abstractions == len(CLUMPS)  # no abstraction without its dream, none twice
    assert query(data, "SELECT count(*) FROM grains_lock")[0][0] == 0
    assert query(data, "PRAGMA integrity_check") == [("ok",)]


CLUSTER = ("from memory.upkeep import cluster_rebuild; import sys; print('go', flush=True); "
           "r = cluster_rebuild(); print(r.seconds)")
ASSIGNMENT = "SELECT id, cluster_id FROM grains_grain ORDER BY id"


def partition(rows: list[tuple]) -> set[frozenset[int]]:
    """The clusters as sets of grains (a run killed after making its clusters but before filling them leaves
    clusters that the next run replaces: the same groups under new ids)."""
    groups: dict[int, set[int]] = {}
    for grain, cluster in rows:
        if cluster is not None:
            groups.setdefault(cluster, set()).add(grain)
    return {frozenset(g) for g in groups.values()}


def test_a_clustering_killed_at_any_moment_is_completed_by_the_next_to_the_same_clusters(tmp_path):
    data = tmp_path / "inst"
    run(data, "from django.core.management import call_command; call_command('migrate', verbosity=0)")
    run(data, "from memory.store import grain_store_batch\n"
              "words = ['harbour', 'lantern', 'ferry', 'orchard', 'violin', 'bakery', 'glacier', 'market']\n"
              "for b in range(60):\n"
              "    grain_store_batch(items=[{'content': f'Note {b}-{i} about the {words[b % 8]} and the "
              "{words[(b + i) % 8]} at pier {b % 13}', 'context': f'day-{b // 3}'} for i in range(100)])")
    clean = tmp_path / "clean"
    shutil.copytree(data, clean)
    seconds = float(run(clean, CLUSTER).split()[-1])
    expected = partition(query(clean, ASSIGNMENT))
    assert len(expected) > 1
    rng = random.Random(7)
    for _ in range(3):
        attempt = django(data, CLUSTER)
        assert attempt.stdout.readline().strip() == "go"
        time.sleep(rng.uniform(0.0, seconds))
        attempt.send_signal(signal.SIGKILL)
        attempt.communicate(timeout=60)
    run(data, CLUSTER)
    assert partition(query(data, ASSIGNMENT)) == expected  # the same clusters as one clean run
    assert query(data, "SELECT count(*) FROM graph_cluster") == query(clean, "SELECT count(*) FROM graph_cluster")
    assert query(data, "SELECT count(*) FROM grains_lock")[0][0] == 0
    assert query(data, "PRAGMA integrity_check") == [("ok",)]
