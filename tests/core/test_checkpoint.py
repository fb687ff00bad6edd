"""The write-ahead log is folded back into the database by the process's checkpoint thread, not by a commit."""
from __future__ import annotations

import os
import sqlite3
import threading
import time

import pytest
from django.db import connection

from core import checkpoint
from core.checkpoint import INTERVAL_S, wal_checkpoint
from core.env import WAL_BACKSTOP_PAGES
from memory.store import grain_store_batch

pytestmark = pytest.mark.sqlite_only  # SQLite's write-ahead log; the PostgreSQL pass leaves it out


def test_commits_leave_the_log_to_the_checkpoint_thread_which_folds_it_back(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        assert cursor.fetchone()[0] == WAL_BACKSTOP_PAGES  # a commit past 1,000 pages does not checkpoint
    path = str(connection.settings_dict["NAME"])
    before = os.path.getsize(path)
    for batch in range(6):  # a few thousand pages of log, fewer than the backstop
        store_hundred(batch)
    deadline = time.monotonic() + 20 * INTERVAL_S
    while os.path.getsize(path) == before and time.monotonic() < deadline:
        time.sleep(0.05)  # nothing here commits meanwhile: only the thread can copy the pages back
    assert os.path.getsize(path) > before


def test_while_writes_go_on_the_log_starts_again_from_the_beginning(transactional_db):
    """SQLite restarts the log only in a write that begins with every page copied back: the thread's own
    checkpoints seldom land there while writes go on, the backstop's (right after a commit) do, so the log stays
    near the backstop's size instead of growing with everything written."""
    path = str(connection.settings_dict["NAME"])
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint=200")  # the backstop made small, for a short test
    try:
        for batch in range(16):  # 60-130 pages each
            store_hundred(batch)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_BACKSTOP_PAGES}")
    busy, in_log, copied = wal_checkpoint(path)
    assert in_log < 600  # the backstop and the last transaction's pages, not 16 batches' worth


def test_a_database_without_a_log_is_left_alone_and_never_created(tmp_path):
    missing = tmp_path / "none.sqlite3"
    assert wal_checkpoint(str(missing)) is None
    assert not missing.exists()
    plain = tmp_path / "plain.sqlite3"
    sqlite3.connect(plain).execute("CREATE TABLE t (x)").connection.commit()  # a rollback journal: no log
    assert wal_checkpoint(str(plain)) is None


def test_a_checkpoint_copies_the_log_back(tmp_path):
    path = tmp_path / "wal.sqlite3"
    db = logged_database(path, 2000)
    busy, in_log, copied = wal_checkpoint(str(path))
    assert busy == 0 and in_log > 100 and copied == in_log
    assert sqlite3.connect(path).execute("SELECT count(*) FROM t").fetchone()[0] == 2000
    db.close()


def test_a_database_forgotten_is_let_go_only_once_its_checkpoint_is_over(tmp_path, monkeypatch):
    """A throwaway database (a benchmark's) is deleted with its folder: a checkpoint under way at that moment
    made its log and index again, and the folder could not be removed. forget() waits for it."""
    path = tmp_path / "gone.sqlite3"
    db = logged_database(path, 200)
    started, finished = threading.Event(), threading.Event()
    real = checkpoint.wal_checkpoint

    def slow(p: str) -> object:
        if p != str(path):  # another database of this process's own checkpoint thread
            return real(p)
        started.set()
        time.sleep(0.4)  # a checkpoint with much to copy
        try:
            return real(p)
        finally:
            finished.set()

    monkeypatch.setattr(checkpoint, "wal_checkpoint", slow)
    watcher = checkpoint._Checkpointer()
    watcher.watch(str(path))
    assert started.wait(10 * INTERVAL_S)
    watcher.forget(str(path))
    assert finished.is_set()  # it returned only after the checkpoint under way
    db.close()
    for leftover in tmp_path.iterdir():
        leftover.unlink()
    started.clear()
    time.sleep(3 * INTERVAL_S)
    assert not started.is_set() and list(tmp_path.iterdir()) == []


def logged_database(path, rows: int) -> sqlite3.Connection:
    """A database in WAL mode whose ``rows`` rows are all still in its log (no checkpoint of its own); open."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE t (x)")
    db.executemany("INSERT INTO t VALUES (?)", [("x" * 500,) for _ in range(rows)])
    db.commit()
    return db


def store_hundred(batch: int) -> None:
    grain_store_batch(items=[{"content": f"Ledger {batch}-{i}: the {i}th barrel of cider went to market "
                                          f"{batch * 100 + i}"} for i in range(100)], caller="tester:test")
