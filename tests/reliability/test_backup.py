"""`flux backup` and `flux restore` on real instances: a consistent copy under load, a restore that gives back
every record, the refusals, and the daily backups the beat keeps."""
from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from core.net import free_port
from tests.flux.test_cli import flux
from tests.servers import postgres_server

pytestmark = pytest.mark.slow  # whole instances

# The records an operator expects back: grains with provenance and confidence, their history, conduits,
# tombstones, callers, the audit log, dreams.
TABLES = ["grains_grain", "grains_confidenceevent", "graph_conduit", "grains_tombstone", "grains_caller",
          "grains_auditevent", "grains_source", "dreams_dream", "graph_feedback"]


def instance(home: Path, name: str = "mem", **settings: str) -> int:
    assert flux(home, "init", "--name", name, "--yes").returncode == 0
    port = free_port()
    config = home / name / "config.yaml"
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {port}")
                      .replace("# DASHBOARD_PORT: 7462", f"DASHBOARD_PORT: {free_port()}")
                      .replace("# MCP_PORT: 7464", f"MCP_PORT: {free_port()}")
                      + "".join(f"{k}: {v}\n" for k, v in {"SEMANTIC_ENTRY": "off", **settings}.items()))
    return port


def post(port: int, path: str, body: dict) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "X-Caller-Id": "keeper:test"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def rows(path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()  # the tables above


def test_a_backup_under_load_is_consistent_and_a_restore_gives_back_every_record(tmp_path):
    home = tmp_path / "home"
    port = instance(home, MAX_GRAINS_PER_MINUTE="1000000")
    assert flux(home, "start", "--name", "mem").returncode == 0
    stored: list[int] = []
    stop = threading.Event()

    def load() -> None:  # batches of 10, each its own context, until told to stop (bounded in count)
        for n in range(2000):
            if stop.is_set():
                return
            items = [{"content": f"load batch {n} item {i} near the lighthouse", "context": f"load-{n}"}
                     for i in range(10)]
            post(port, "/store/batch", {"items": items})
            stored.append(n)

    try:
        found = post(port, "/retrieve", {"query": "lighthouse"})  # history to keep: a trace, feedback
        writer = threading.Thread(target=load)
        writer.start()
        deadline = time.monotonic() + 60
        while len(stored) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        during = flux(home, "backup", "--name", "mem", "--to", str(tmp_path / "during.sqlite3"))
        assert during.returncode == 0, during.stderr
        assert "Backup written to" in during.stdout and (tmp_path / "during.sqlite3").stat().st_mode & 0o777 == 0o600
        stop.set()
        writer.join(timeout=120)
        if found["grains"]:
            post(port, "/feedback", {"trace_id": found["trace_id"], "grain_id": found["grains"][0]["id"],
                                     "useful": True})
        after = flux(home, "backup", "--name", "mem")
        assert after.returncode == 0, after.stderr
    finally:
        assert flux(home, "stop", "--name", "mem").returncode == 0
    # Under load: one moment's copy, sound, every batch whole.
    with sqlite3.connect(tmp_path / "during.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        sizes = [n for (n,) in db.execute("SELECT count(*) FROM grains_grain WHERE context LIKE 'load-%' "
                                          "GROUP BY context")]
    assert sizes and set(sizes) == {10} and len(sizes) < len(stored) + 1
    # After the load: a restore into another instance gives back every record as it was.
    [copy] = list((home / "mem" / "backups").glob("flux-*.sqlite3"))
    instance(home, "twin")
    restored = flux(home, "restore", "--name", "twin", str(copy))
    assert restored.returncode == 0 and "Restored" in restored.stdout, restored.stderr
    for table in TABLES:
        assert rows(home / "twin" / "flux.sqlite3", table) == rows(home / "mem" / "flux.sqlite3", table), table
    assert len(rows(home / "twin" / "flux.sqlite3", "grains_grain")) >= 200
    assert list((home / "twin").glob("flux.sqlite3.before-restore-*")), "the replaced database is kept"


def test_restore_refuses_a_running_instance_a_damaged_file_and_a_newer_schema(tmp_path):
    home = tmp_path / "home"
    instance(home)
    assert flux(home, "backup", "--name", "mem", "--to", str(tmp_path / "good.sqlite3")).returncode == 0
    again = flux(home, "backup", "--name", "mem", "--to", str(tmp_path / "good.sqlite3"))
    assert again.returncode == 1 and "exists already" in again.stderr
    astray = flux(home, "backup", "--name", "mem", "--to", str(tmp_path / "no" / "such" / "b.sqlite3"))
    assert astray.returncode == 1 and "create it first" in astray.stderr and not (tmp_path / "no").exists()
    blank = flux(home, "backup", "--name", "mem", "--to", "")  # it wrote to the default folder
    assert blank.returncode == 1 and "exists already" in blank.stderr
    damaged = tmp_path / "damaged.sqlite3"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    out = flux(home, "restore", "--name", "mem", str(damaged))
    assert out.returncode == 1 and "is not a sound SQLite database" in out.stderr and "Traceback" not in out.stderr
    newer = tmp_path / "newer.sqlite3"
    shutil.copyfile(tmp_path / "good.sqlite3", newer)
    with sqlite3.connect(newer) as db:
        db.execute("INSERT INTO django_migrations (app, name, applied) VALUES ('grains', '9999_future', '2030-01-01')")
    out = flux(home, "restore", "--name", "mem", str(newer))
    assert out.returncode == 1 and "made by a newer Flux Memory" in out.stderr and "grains.9999_future" in out.stderr
    dropped = tmp_path / "dropped.sqlite3"  # restored, then every call of the service was a 500
    shutil.copyfile(tmp_path / "good.sqlite3", dropped)
    with sqlite3.connect(dropped) as db:
        db.execute("DROP TABLE graph_conduit")
    out = flux(home, "restore", "--name", "mem", str(dropped))
    assert out.returncode == 1 and "not a whole Flux Memory database" in out.stderr and "graph_conduit" in out.stderr
    stranger = tmp_path / "stranger.sqlite3"  # restored as an empty memory in place of the user's
    with sqlite3.connect(stranger) as db:
        db.execute("CREATE TABLE django_migrations (id INTEGER PRIMARY KEY, app TEXT, name TEXT, applied TEXT)")
        db.execute("CREATE TABLE t (x)")
    out = flux(home, "restore", "--name", "mem", str(stranger))
    assert out.returncode == 1 and "is not a Flux Memory database" in out.stderr, out.stderr
    before = rows(home / "mem" / "flux.sqlite3", "django_migrations")
    assert ("grains", "9999_future") not in {(r[1], r[2]) for r in before}  # nothing was replaced
    assert flux(home, "start", "--name", "mem").returncode == 0
    try:
        out = flux(home, "restore", "--name", "mem", str(tmp_path / "good.sqlite3"))
        assert out.returncode == 1 and "is running" in out.stderr
    finally:
        flux(home, "stop", "--name", "mem")


def test_a_postgresql_restore_refuses_a_newer_schema_and_what_is_no_dump(tmp_path):
    """On PostgreSQL too a backup from a newer version is refused before anything is replaced (its migrations are
    read from the dump), as is a file pg_restore cannot read; a sound one is restored."""
    import psycopg

    home = tmp_path / "home"
    with postgres_server() as url:
        assert flux(home, "init", "--name", "pg", "--yes", DATABASE_URL=url).returncode == 0
        good, newer = tmp_path / "good.pgdump", tmp_path / "newer.pgdump"
        assert flux(home, "backup", "--name", "pg", "--to", str(good)).returncode == 0
        with psycopg.connect(url, autocommit=True) as db:
            db.execute("INSERT INTO django_migrations (app, name, applied) VALUES ('grains', '9999_future', now())")
        assert flux(home, "backup", "--name", "pg", "--to", str(newer)).returncode == 0
        with psycopg.connect(url, autocommit=True) as db:
            db.execute("DELETE FROM django_migrations WHERE name = '9999_future'")
        out = flux(home, "restore", "--name", "pg", str(newer))
        assert out.returncode == 1 and "made by a newer Flux Memory" in out.stderr, out.stderr
        assert "grains.9999_future" in out.stderr and "Traceback" not in out.stderr
        with psycopg.connect(url) as db:
            assert not db.execute("SELECT 1 FROM django_migrations WHERE name = '9999_future'").fetchall()
        garbage = tmp_path / "garbage.pgdump"
        garbage.write_bytes(b"not a dump at all")
        out = flux(home, "restore", "--name", "pg", str(garbage))
        assert out.returncode == 1 and "is not a PostgreSQL backup" in out.stderr, out.stderr
        out = flux(home, "restore", "--name", "pg", str(good))
        assert out.returncode == 0, out.stderr


def test_the_beat_keeps_the_newest_backup_keep_backups(tmp_path):
    home = tmp_path / "home"
    instance(home, BACKUP_KEEP="2", BACKUP_INTERVAL_SECONDS="1")
    assert flux(home, "start", "--name", "mem").returncode == 0
    folder = home / "mem" / "backups"
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 90
        while len(seen) < 4 and time.monotonic() < deadline:
            now = {p.name for p in folder.glob("flux-daily-*")} if folder.exists() else set()
            assert len(now) <= 2, now  # never more than BACKUP_KEEP
            seen |= now
            time.sleep(0.2)
    finally:
        flux(home, "stop", "--name", "mem")
    assert len(seen) >= 4, "the beat took a backup a second and pruned the oldest"
    kept = sorted(folder.glob("flux-daily-*"))
    assert len(kept) == 2 and all(p.stat().st_mode & 0o777 == 0o600 for p in kept)
    with sqlite3.connect(kept[-1]) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
