"""The booth's write that nobody waits for (a retrieval's trace): held until the read that asked for it is over,
then started after a short linger."""
from __future__ import annotations

import time

import pytest

from core.booth import LINGER_S, Booth


@pytest.fixture
def booth():
    made = Booth(2)
    yield made
    made.close()


def test_a_write_asked_for_in_a_read_waits_until_the_read_is_over(booth):
    ran: list[str] = []

    def read() -> tuple[object, bool]:
        later = booth.record_after(lambda: ran.append("trace"))
        time.sleep(0.05)  # the writer is idle all along, yet does not start it
        return later, bool(ran)

    later, ran_during_read = booth.read(read).result(5)
    assert not ran_during_read
    later.result(5)
    assert ran == ["trace"]


def test_a_read_that_fails_still_lets_its_writes_go(booth):
    held = []

    def read() -> None:
        held.append(booth.record_after(lambda: "written"))
        raise ValueError("the view failed")

    with pytest.raises(ValueError):
        booth.read(read).result(5)
    assert held[0].result(5) == "written"


def test_outside_a_read_the_write_starts_after_the_linger(booth):
    asked = time.monotonic()
    started = booth.record_after(time.monotonic).result(5)
    assert started - asked >= LINGER_S
