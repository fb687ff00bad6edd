"""The embedded task broker's file deleted or damaged between runs: `flux start` makes it anew (a damaged one is
moved aside with a warning) and the beat's tasks run again."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tests.flux.test_cli import flux
from tests.reliability.test_backup import instance

pytestmark = pytest.mark.slow  # three starts of a whole instance


def sweeps(folder: Path) -> int:
    with sqlite3.connect(folder / "flux.sqlite3", timeout=30) as db:
        return db.execute("SELECT count(*) FROM grains_activityevent WHERE kind = 'graph.decay_swept'").fetchone()[0]


def run_until_a_sweep(home: Path, folder: Path) -> str:
    started = flux(home, "start", "--name", "mem")
    assert started.returncode == 0, started.stderr
    try:
        before, deadline = sweeps(folder), time.monotonic() + 60
        while sweeps(folder) == before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sweeps(folder) > before, "the beat ran its decay sweep through the broker"
    finally:
        assert flux(home, "stop", "--name", "mem").returncode == 0
    return started.stdout


def test_a_deleted_or_damaged_broker_file_is_made_anew_and_tasks_run(tmp_path):
    home = tmp_path / "home"
    instance(home, DECAY_INTERVAL_SECONDS="1")
    folder = home / "mem"
    broker = folder / "celery-broker.sqlite3"
    run_until_a_sweep(home, folder)
    assert broker.exists()
    broker.unlink()
    for side in folder.glob("celery-broker.sqlite3-*"):
        side.unlink()
    out = run_until_a_sweep(home, folder)
    assert broker.exists() and "warning" not in out  # a missing file is simply made
    broker.write_bytes(b"this is not a database" * 100)
    out = run_until_a_sweep(home, folder)
    assert "flux: warning: the task broker file" in out and "was damaged" in out
    assert list(folder.glob("celery-broker.sqlite3.corrupt-*"))
    with sqlite3.connect(broker) as db:
        assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
