"""The shared cache of an instance without Redis: a small SQLite file of its own in the instance folder
(``cache/cache.sqlite3``, 0600), apart from the memory's database so that counting never waits for the
memory's writer. ``add`` and ``incr`` are single statements, so counters kept in it (request rate limits) are
exact across the instance's processes, as they are on Redis; a few tenths of a millisecond each, where files
under a lock took over a millisecond. Counters live as integers; other values are pickled (the file is the
instance's own, private, as the session data is).

A new file is made ready (created 0600, switched to WAL, its table made) once per process, under a lock file
beside it that the instance's processes take in turn: SQLite refuses a second connection's switch to WAL while
the first one's is under way ("database is locked", with no wait), which the first requests of a new instance
met when several arrived at once. Once the file exists only SQLite opens it: a descriptor of it opened and
closed beside SQLite's own, in the same process, would drop SQLite's locks."""
from __future__ import annotations

import fcntl
import os
import pickle
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache

NEVER = 1e18  # the expiry of a value kept until deleted
CULL_EVERY = 500  # writes of a connection between two sweeps of expired values
_ready: set[tuple[str, int]] = set()  # (file, process) made ready
_ready_lock = threading.Lock()


class SqliteCache(BaseCache):
    def __init__(self, location: str, params: dict) -> None:
        super().__init__(params)
        self._path = Path(location)
        self._local = threading.local()

    # Each thread (and each process after a fork) has its own connection.
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None or self._local.pid != os.getpid():
            _prepare(self._path)
            db = sqlite3.connect(self._path, timeout=10, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA synchronous=OFF")  # counters of the current minute: a crash may lose them
            self._local.db, self._local.pid, self._local.writes = db, os.getpid(), 0
        return db

    def _expiry(self, timeout: Any) -> float:
        at = self.get_backend_timeout(timeout)
        return NEVER if at is None else at

    def _written(self, db: sqlite3.Connection) -> None:
        self._local.writes += 1
        if self._local.writes % CULL_EVERY == 0:
            db.execute("DELETE FROM cache WHERE expires <= ?", (time.time(),))

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        key, db = self.make_and_validate_key(key, version=version), self._db()
        added = db.execute("INSERT INTO cache VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                           "expires = excluded.expires WHERE cache.expires <= ?",
                           (key, _encode(value), self._expiry(timeout), time.time())).rowcount == 1
        self._written(db)
        return added

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        key, db = self.make_and_validate_key(key, version=version), self._db()
        db.execute("INSERT INTO cache VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                   "expires = excluded.expires", (key, _encode(value), self._expiry(timeout)))
        self._written(db)

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        key = self.make_and_validate_key(key, version=version)
        row = self._db().execute("SELECT value FROM cache WHERE key = ? AND expires > ?", (key, time.time())).fetchone()
        return default if row is None else _decode(row[0])

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        """Add ``delta`` to an integer kept under ``key`` in one statement; ValueError when there is none."""
        name = self.make_and_validate_key(key, version=version)
        row = self._db().execute("UPDATE cache SET value = value + ? WHERE key = ? AND expires > ? AND "
                                 "typeof(value) = 'integer' RETURNING value", (delta, name, time.time())).fetchone()
        if row is None:
            raise ValueError(f"Key '{key}' not found")
        return row[0]

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        return self._db().execute("UPDATE cache SET expires = ? WHERE key = ? AND expires > ?",
                                  (self._expiry(timeout), key, time.time())).rowcount == 1

    def delete(self, key: Any, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        return self._db().execute("DELETE FROM cache WHERE key = ?", (key,)).rowcount == 1

    def has_key(self, key: Any, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        return self._db().execute("SELECT 1 FROM cache WHERE key = ? AND expires > ?", (key, time.time())).fetchone() \
            is not None

    def clear(self) -> None:
        self._db().execute("DELETE FROM cache")

    def close(self, **kwargs: Any) -> None:
        """Kept open between requests (Django closes caches at the end of each one)."""


def _prepare(path: Path) -> None:
    """Make the cache file at ``path`` ready for connections, once per process (see the module's docstring)."""
    with _ready_lock:
        if (str(path), os.getpid()) in _ready:
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = os.open(f"{path}-setup.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released by the kernel if this process dies holding it
            try:  # created here only when missing: no connection holds a lock on it yet
                os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                pass
            db = sqlite3.connect(path, timeout=10, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value, expires REAL NOT NULL)")
                db.execute("CREATE INDEX IF NOT EXISTS cache_expires ON cache (expires)")
            finally:
                db.close()
        finally:
            os.close(lock)
        _ready.add((str(path), os.getpid()))


def _encode(value: Any) -> Any:
    return value if type(value) is int and -2**63 <= value < 2**63 else pickle.dumps(value, pickle.HIGHEST_PROTOCOL)


def _decode(value: Any) -> Any:
    return pickle.loads(value) if isinstance(value, bytes) else value  # the instance's own private file
