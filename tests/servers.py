"""Real servers for tests, started on free loopback ports and stopped afterwards."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_binary(path: str | None, what: str, install: str) -> str:
    """The binary, or a skip on a developer machine / a failure in CI (where .ci/run installs it)."""
    if path and os.path.exists(path):
        return path
    message = f"{what} not installed ({install})"
    if os.environ.get("CI"):
        pytest.fail(message + " - .ci/run should have installed it")
    pytest.skip(message)


def _postgres_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(found[-1]) if found else None


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1; yields its DATABASE_URL.

    Its folder is a new one under the system temp dir, which the postgres user
    can enter (the server refuses to run as root).
    """
    bindir = require_binary(_postgres_bin(), "PostgreSQL", "apt-get install postgresql")
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    base = Path(tempfile.mkdtemp(prefix="flux-pg-"))
    data, port = base / "pgdata", free_port()
    if as_postgres:
        shutil.chown(base, "postgres")
    run = lambda *cmd: subprocess.run([*as_postgres, *cmd], check=True, capture_output=True, timeout=120)  # noqa: E731
    run(f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", "flux")
    opts = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
    run(f"{bindir}/pg_ctl", "-D", str(data), "-o", opts, "-l", str(base / "log"), "-w", "start")
    try:
        run(f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "flux", "flux")
        yield f"postgres://flux@127.0.0.1:{port}/flux"
    finally:
        run(f"{bindir}/pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)
