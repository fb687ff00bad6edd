"""The processes of a running instance: started detached with pid files and logs, stopped gracefully."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from flux.instance import Instance, InstanceError, python
from fluxsite.net import wait_for_http

STOP_GRACE_SECONDS = 30.0


@dataclass(frozen=True)
class Service:
    """One process of an instance: its name (pid and log file names) and command line."""

    name: str
    argv: list[str]
    marker: str  # a word of its command line, so a recycled pid is never taken for it


def services(instance: Instance) -> list[Service]:
    """What `flux start` runs for an instance: the REST API under daphne, and a Celery worker with
    beat embedded (periodic maintenance; the in-memory scheduler needs no file)."""
    return [
        Service("rest", [python(), "-m", "daphne", "-b", str(instance.setting("REST_HOST")),
                         "-p", str(instance.setting("REST_PORT")), "fluxsite.asgi:application"], "daphne"),
        Service("worker", [python(), "-m", "celery", "-A", "fluxsite", "worker", "--beat", "--pool", "solo",
                           "--scheduler", "celery.beat:Scheduler", "--loglevel", "INFO"], "celery"),
    ]


def _pid_file(instance: Instance, service: Service) -> Path:
    return instance.run_dir / f"{service.name}.pid"


def running_pid(instance: Instance, service: Service) -> int | None:
    """The pid of the service if its pid file names a live process that is it; stale files are removed."""
    path = _pid_file(instance, service)
    try:
        pid = int(path.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        path.unlink(missing_ok=True)
        return None
    if service.marker not in cmdline:
        path.unlink(missing_ok=True)
        return None
    return pid


def running(instance: Instance) -> dict[str, int]:
    return {s.name: pid for s in services(instance) if (pid := running_pid(instance, s)) is not None}


def check_port_free(host: str, port: int, key: str, instance: Instance) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError:
            raise InstanceError(f"port {port} on {host} is in use by another program; stop it, or set {key} in "
                                f"{instance.config_file}") from None


def migrate(instance: Instance) -> None:
    """Migrate the database and prepare the Celery broker, before any process of the instance starts."""
    for step, argv in (("migrating the database", ["migrate", "--no-input"]),
                       ("preparing the task broker", ["flux_broker_prepare"])):
        out = subprocess.run([python(), "-m", "django", *argv], env=instance.environ(), cwd=instance.path,
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise InstanceError(f"{step} of {instance.name!r} failed:\n{out.stderr.strip()[-2000:]}")


def start(instance: Instance, timeout: float = 60.0) -> dict[str, int]:
    """Start every service detached, then wait until /health answers."""
    check_port_free(str(instance.setting("REST_HOST")), int(instance.setting("REST_PORT")), "REST_PORT", instance)
    migrate(instance)
    instance.run_dir.mkdir(exist_ok=True)
    instance.log_dir.mkdir(exist_ok=True)
    started: dict[str, int] = {}
    procs = []
    for service in services(instance):
        with open(instance.log_dir / f"{service.name}.log", "ab") as log:
            proc = subprocess.Popen(service.argv, env=instance.environ(), cwd=instance.path, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        _pid_file(instance, service).write_text(f"{proc.pid}\n")
        started[service.name] = proc.pid
        procs.append(proc)
    try:
        wait_for_http(instance.rest_url() + "/health", timeout=timeout, proc=procs[0])
    except (RuntimeError, TimeoutError) as exc:
        stop(instance)
        tail = (instance.log_dir / "rest.log").read_text(errors="replace")[-1500:]
        raise InstanceError(f"the service did not start ({exc}); end of {instance.log_dir / 'rest.log'}:\n{tail}")
    return started


def stop(instance: Instance, grace: float = STOP_GRACE_SECONDS) -> dict[str, int]:
    """SIGTERM every running service (queued writes run before it exits), SIGKILL after ``grace`` seconds."""
    pids = running(instance)
    for pid in pids.values():
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p) for p in pids.values()):
        time.sleep(0.1)
    for pid in pids.values():
        if _alive(pid):
            _signal_group(pid, signal.SIGKILL)
    for service in services(instance):
        _pid_file(instance, service).unlink(missing_ok=True)
    return pids


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"
