"""Loopback helpers shared by commands and tests: a free port, waiting for a server."""
from __future__ import annotations

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
