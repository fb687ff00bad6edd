"""The shared cache of an instance without Redis: Django's file cache with its read-modify-write steps (``add``,
``incr``) under an exclusive lock, so counters kept in it (request rate limits) are exact across the
instance's processes, as they are on Redis."""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache


class LockingFileBasedCache(FileBasedCache):
    @contextmanager
    def _locked(self) -> Iterator[None]:
        os.makedirs(self._dir, mode=0o700, exist_ok=True)
        with open(os.path.join(self._dir, ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        with self._locked():
            return super().add(key, value, timeout, version)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        with self._locked():
            return super().incr(key, delta, version)
