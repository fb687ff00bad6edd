"""Turns on a file lock (no Django: the command line takes them too)."""
from __future__ import annotations

import fcntl
import os


class Turns:
    """An exclusive lock on a file (0600), held by one process of the machine at a time (``flock``: released by
    the kernel when its process dies; no child inherits it); without a path, no lock at all (PostgreSQL, tests)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self._fd = None if path is None else os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def take(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)

    def give(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def __enter__(self) -> None:
        self.take()

    def __exit__(self, *exc: object) -> None:
        self.give()
