"""Writers held in tests: a transaction held open on another connection (PostgreSQL's writers commit out of the
order of their ids), and a booth's writer held busy."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.db import connection, transaction

from core.booth import Booth

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


def writer_held(booth: Booth, release: threading.Event, timeout: float = 10) -> None:
    """Hold ``booth``'s writer with a write that waits for ``release``, and return once the writer has taken it
    up: what is queued after waits behind it (bookkeeping queued before would still go ahead of it)."""
    holding = threading.Event()
    booth.write(lambda: (holding.set(), release.wait()))
    assert holding.wait(timeout), "the writer did not take up the holding write"
