"""A transaction held open on another connection: PostgreSQL's writers commit out of the order of their ids."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.db import connection, transaction

T = TypeVar("T")


@contextmanager
def held_open(write: Callable[[], T]) -> Iterator[T]:
    """Run ``write`` in a transaction on a thread of its own (its own connection) and hold that transaction open
    while the block runs, then commit it: what ``write`` wrote takes its ids first and commits last. Yields what
    ``write`` returned."""
    written, release, result = threading.Event(), threading.Event(), []

    def writer() -> None:
        try:
            with transaction.atomic():
                result.append(write())
                written.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert written.wait(10), "the held transaction did not write"
        yield result[0]
    finally:
        release.set()
        thread.join(10)
