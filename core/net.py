"""Small HTTP helpers: a free port, waiting for a server (commands and tests), an answer read by a deadline."""
from __future__ import annotations

import http.client
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def http_answers(url: str, timeout: float = 2.0) -> bool:
    """Whether a server answers ``url`` with any HTTP status (an error status is an answer)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def wait_for_http(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    """Return once ``url`` answers; raise if ``proc`` exits first or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering {url}")
        if http_answers(url):
            return
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


class AnswerTooLong(ValueError):
    """An HTTP answer longer than its reader takes."""


def read_by(response: http.client.HTTPResponse, deadline: float, *, max_bytes: int) -> bytes:
    """The whole body of ``response`` by ``deadline`` (a time.monotonic() value), else TimeoutError: an answer sent
    a byte at a time is bounded in all, not only between two bytes. AnswerTooLong past ``max_bytes``."""
    chunks, size = [], 0
    sock = getattr(getattr(response.fp, "raw", None), "_sock", None)  # each wait no longer than the time left
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer did not end in time")
        if sock is not None:
            sock.settimeout(left)
        chunk = response.read1(65536)
        if not chunk:
            if response.length:  # the connection closed before the length it declared: as read() says it
                raise http.client.IncompleteRead(b"".join(chunks), response.length)
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise AnswerTooLong(f"the answer is longer than {max_bytes} bytes")
        chunks.append(chunk)
