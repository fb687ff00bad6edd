"""SQLite's write-ahead log folded back into the database by a thread of its own.

By default the commit that takes the log past 1,000 pages copies them into the database file and syncs it,
while its writer waits (and with it every write queued behind it). Here one daemon thread per process
checkpoints each database this process opened every ``INTERVAL_S``, on a connection of its own (PASSIVE: it
never waits for a reader or a writer, and SQLite releases the interpreter lock while it copies). A commit still
checkpoints once the log holds ``core.env.WAL_BACKSTOP_PAGES``: little is left to copy by then, and that
checkpoint is what lets SQLite start the log again from the beginning.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from urllib.parse import quote

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver

log = logging.getLogger("flux.checkpoint")
INTERVAL_S = 0.5  # at most this long of writes waits in the log (a batch of 100 grains writes ~500 pages)


def wal_checkpoint(path: str) -> tuple[int, int, int] | None:
    """A PASSIVE checkpoint of the SQLite database at ``path``: (busy, pages in the log, pages copied back), or
    None when it has no log (or no longer exists: a connection here never creates one)."""
    if not os.path.exists(f"{path}-wal"):
        return None
    try:
        db = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=0)
    except sqlite3.Error:
        return None
    try:
        return tuple(db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
    finally:
        db.close()


class _Checkpointer:
    def __init__(self) -> None:
        self._paths: set[str] = set()
        self._lock = threading.Lock()
        self._round = threading.Lock()  # held while a round checkpoints: forget() waits for it
        self._thread: threading.Thread | None = None

    def watch(self, path: str) -> None:
        """Checkpoint ``path`` from now on (the thread started if this process has none: a forked child)."""
        with self._lock:
            self._paths.add(path)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="flux-wal-checkpoint", daemon=True)
                self._thread.start()

    def forget(self, path: str) -> None:
        """Checkpoint ``path`` no more, and return only once no checkpoint of it is under way: its files can be
        deleted then (a checkpoint's connection opened as they go would make its log and index again)."""
        with self._lock:
            self._paths.discard(path)
        with self._round:
            pass

    def _run(self) -> None:
        while True:
            time.sleep(INTERVAL_S)
            with self._round:
                with self._lock:
                    paths = sorted(self._paths)
                for path in paths:
                    try:
                        wal_checkpoint(path)
                    except sqlite3.Error as exc:  # busy opening it, or the disk failed: the next round tries again
                        log.warning("the write-ahead log of %s could not be checkpointed: %s", path, exc)


checkpointer = _Checkpointer()


@receiver(connection_created)
def watch_sqlite(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    """A SQLite database this process opened: checkpointed from now on, and its owner's alone (0600, with its log
    and index, which SQLite makes with the database's mode: it was the umask's, 0644 where the folder was not
    made private by `flux init`, e.g. the embedded SDK's)."""
    if connection.vendor == "sqlite" and not connection.is_in_memory_db():
        path = str(connection.settings_dict["NAME"])
        checkpointer.watch(path)
        for name in (path, f"{path}-wal", f"{path}-shm"):
            try:
                if os.stat(name).st_mode & 0o077:
                    os.chmod(name, 0o600)
            except OSError:  # not there (no log yet), or not ours to change
                pass
