"""The processes of a running instance: started detached with pid files and logs, stopped gracefully."""
from __future__ import annotations

import os
import secrets
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from core.defaults import DEFAULT_ALLOWED_HOSTS
from core.keys import open_rest_refusal
from core.net import wait_for_http
from flux.instance import Instance, InstanceError, python

STOP_GRACE_SECONDS = 30.0


@dataclass(frozen=True)
class Service:
    """One process of an instance: its name (pid and log file names) and command line."""

    name: str
    argv: list[str]
    marker: str  # a word of its command line, so a recycled pid is never taken for it


# A word of each service's command line, so a recycled pid is never taken for it.
MARKERS = {"rest": "fluxsite.asgi", "dashboard": "fluxsite.dashboard_asgi", "worker": "celery", "mcp": "flux_mcp"}
BROADCAST_HOST = "0.0.0.0"
VIEW_TOKEN_ENV = "FLUX_VIEW_TOKEN"  # read by dashboard/access.py
SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address


def services(instance: Instance, *, broadcast: bool = False) -> list[Service]:
    """What `flux start` runs for an instance: the REST API and the dashboard, each under its own daphne, a
    Celery worker with beat embedded (periodic maintenance; the in-memory scheduler needs no file), and the MCP
    server over streamable HTTP (a client of REST). With ``broadcast`` only the dashboard listens on every
    interface; the REST API stays where REST_HOST says, the MCP server where MCP_HOST says."""
    dashboard_host = BROADCAST_HOST if broadcast else str(instance.setting("DASHBOARD_HOST"))
    return [
        Service("rest", [python(), "-m", "fluxsite.serve", "-b", str(instance.setting("REST_HOST")),
                         "-p", str(instance.setting("REST_PORT")), "fluxsite.asgi:application"], MARKERS["rest"]),
        Service("dashboard", [python(), "-m", "fluxsite.serve", "-b", dashboard_host, "-p",
                              str(instance.setting("DASHBOARD_PORT")), "fluxsite.dashboard_asgi:application"],
                MARKERS["dashboard"]),
        Service("worker", [python(), "-m", "celery", "-A", "fluxsite", "worker", "--beat", "--pool", "solo",
                           "--scheduler", "celery.beat:Scheduler", "--loglevel", "INFO"], MARKERS["worker"]),
        Service("mcp", [python(), "-m", "django", "flux_mcp", "--http"], MARKERS["mcp"]),
    ]


def lan_addresses() -> list[str]:
    """This machine's own IPv4 addresses other than loopback (what a phone on the LAN would use): each
    interface's address where the system tells it (Linux), else what the host name resolves to."""
    found: set[str] = set()
    try:
        import fcntl

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            for _, name in socket.if_nameindex():
                try:
                    packed = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
                except OSError:  # an interface without an IPv4 address
                    continue
                found.add(socket.inet_ntoa(packed[20:24]))
    except (ImportError, OSError):
        pass
    try:
        found.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return sorted(a for a in found if not a.startswith("127."))


def _pid_file(instance: Instance, service: Service) -> Path:
    return instance.run_dir / f"{service.name}.pid"


def _live_pid(path: Path, marker: str) -> int | None:
    """The pid in ``path`` if it names a live process whose command line has ``marker``; a stale file is removed."""
    try:
        pid = int(path.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        path.unlink(missing_ok=True)
        return None
    if marker not in cmdline:
        path.unlink(missing_ok=True)
        return None
    return pid


def running_in(folder: Path) -> dict[str, int]:
    """The services running on the instance in ``folder``, by their pid files (no config needed)."""
    return {name: pid for name, marker in MARKERS.items()
            if (pid := _live_pid(folder / "run" / f"{name}.pid", marker)) is not None}


def running(instance: Instance) -> dict[str, int]:
    return running_in(instance.path)


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


def _environ(instance: Instance, service: Service, broadcast: bool, view_token: str) -> dict[str, str]:
    env = instance.environ()
    if broadcast and service.name == "dashboard":  # pages asked for by the machine's LAN address or name
        hosts = [h for h in env.get("ALLOWED_HOSTS", DEFAULT_ALLOWED_HOSTS).split(",") if h]
        env["ALLOWED_HOSTS"] = ",".join([*hosts, *lan_addresses(), socket.gethostname()])
    if service.name == "dashboard":
        env[VIEW_TOKEN_ENV] = view_token
    return env


def view_token(instance: Instance) -> str | None:
    """The viewing token of a broadcasting instance (in its LAN URLs), or None when it is not broadcasting."""
    try:
        return (instance.run_dir / "broadcast").read_text().strip() or None
    except OSError:
        return None


def _check_ports(instance: Instance, broadcast: bool) -> None:
    check_port_free(str(instance.setting("REST_HOST")), int(instance.setting("REST_PORT")), "REST_PORT", instance)
    check_port_free(BROADCAST_HOST if broadcast else str(instance.setting("DASHBOARD_HOST")),
                    int(instance.setting("DASHBOARD_PORT")), "DASHBOARD_PORT", instance)
    check_port_free(str(instance.setting("MCP_HOST")), int(instance.setting("MCP_PORT")), "MCP_PORT", instance)


def start(instance: Instance, *, broadcast: bool = False, timeout: float = 60.0) -> dict[str, subprocess.Popen]:
    """Start every service detached (each in its own session, so `flux stop` can signal it and its children),
    then wait until the REST API's /health and the dashboard answer."""
    for setting, what in (("REST_HOST", "REST API"), ("MCP_HOST", "MCP server")):
        refusal = open_rest_refusal(str(instance.setting(setting)), str(instance.setting("API_KEYS")), instance.path,
                                    what=what, setting=setting)
        if refusal:
            raise InstanceError(refusal)
    _check_ports(instance, broadcast)
    migrate(instance)
    instance.run_dir.mkdir(exist_ok=True)
    instance.log_dir.mkdir(exist_ok=True)
    instance.make_private()
    (instance.run_dir / "broadcast").unlink(missing_ok=True)
    # A new viewing token each run: a LAN link works for this run of the service only.
    token = secrets.token_urlsafe(24) if broadcast else ""
    procs: dict[str, subprocess.Popen] = {}
    for service in services(instance, broadcast=broadcast):
        with open(instance.log_dir / f"{service.name}.log", "ab") as log:
            proc = subprocess.Popen(service.argv, env=_environ(instance, service, broadcast, token), cwd=instance.path,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        _pid_file(instance, service).write_text(f"{proc.pid}\n")
        procs[service.name] = proc
    if broadcast:
        (instance.run_dir / "broadcast").write_text(token + "\n")
    for name, url in (("rest", instance.rest_url() + "/health"), ("dashboard", instance.dashboard_url() + "/"),
                      ("mcp", instance.mcp_url())):
        try:
            wait_for_http(url, timeout=timeout, proc=procs[name])
        except (RuntimeError, TimeoutError) as exc:
            stop(instance)
            log = instance.log_dir / f"{name}.log"
            tail = log.read_text(errors="replace")[-1500:]
            raise InstanceError(f"the {name} service did not start ({exc}); end of {log}:\n{tail}") from None
    return procs


def broadcasting(instance: Instance) -> bool:
    return (instance.run_dir / "broadcast").exists()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def wait_foreground(instance: Instance, procs: dict[str, subprocess.Popen]) -> int:
    """Run until a service exits or the user presses Ctrl-C (or SIGTERM arrives), then stop them all."""
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while all(p.poll() is None for p in procs.values()):
            time.sleep(0.5)
        failed = [n for n, p in procs.items() if p.poll() is not None]
        print(f"flux: {', '.join(failed)} exited; stopping the others (see {instance.log_dir})", flush=True)
        code = 1
    except KeyboardInterrupt:
        code = 0
    stop(instance)
    return code


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
    (instance.run_dir / "broadcast").unlink(missing_ok=True)
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
