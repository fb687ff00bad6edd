"""The processes of a running instance: started detached with pid files and logs, stopped gracefully."""
from __future__ import annotations

import os
import secrets
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.defaults import DEFAULT_ALLOWED_HOSTS
from core.keys import open_rest_refusal
from core.net import http_answers
from core.turns import Turns
from flux.instance import Instance, InstanceError, python


@dataclass(frozen=True)
class Service:
    """One process of an instance: its name (pid and log file names) and command line."""

    name: str
    argv: list[str]
    marker: str  # a word of its command line, so a recycled pid is never taken for it


# A word of each kind of service's command line, so a recycled pid is never taken for it. A kind with several
# processes names them rest, rest-2, rest-3, ... (their pid files likewise).
MARKERS = {"rest": "fluxsite.asgi", "dashboard": "fluxsite.dashboard_asgi", "worker": "celery", "mcp": "flux_mcp"}
SUPERVISOR_MARKER = "flux"  # `python -m flux supervise` or `flux start --foreground`
BROADCAST_HOST = "0.0.0.0"
VIEW_TOKEN_ENV = "FLUX_VIEW_TOKEN"  # read by dashboard/access.py
SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address
MAX_PROCESSES = 32  # of one kind (WEB_WORKERS, TASK_WORKERS)


def numbered(kind: str, n: int) -> str:
    return kind if n == 1 else f"{kind}-{n}"


def kind_of(name: str) -> str:
    return name.split("-", 1)[0]


FLAGS = {"WEB_WORKERS": "web-workers", "TASK_WORKERS": "workers"}  # the `flux start` options that set them


def process_counts(instance: Instance, **wanted: int | None) -> tuple[int, int]:
    """(WEB_WORKERS, TASK_WORKERS) as set, or as ``wanted`` (WEB_WORKERS=3) would set them, checked: each 1 to
    MAX_PROCESSES."""
    counts = []
    for key in ("WEB_WORKERS", "TASK_WORKERS"):
        given = wanted.get(key) is not None
        value = wanted[key] if given else instance.setting(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PROCESSES:
            where = f"--{FLAGS[key]} {value!r}" if given else f"{key} is {value!r} in {instance.config_file}"
            raise InstanceError(f"{where}; give a whole number from 1 to {MAX_PROCESSES}")
        counts.append(value)
    return counts[0], counts[1]


def services(instance: Instance, *, broadcast: bool = False) -> list[Service]:
    """What `flux start` runs for an instance: the REST API (WEB_WORKERS processes under uvicorn, sharing its
    port) and the dashboard under daphne (fluxsite/serve.py), TASK_WORKERS Celery workers, the first with beat
    embedded (periodic maintenance; one beat of the instance sends, fluxsite/beat.py), and the MCP server over
    streamable HTTP (a client of REST). With ``broadcast`` only the dashboard listens on every interface; the
    REST API stays where REST_HOST says, the MCP server where MCP_HOST says."""
    web, workers = process_counts(instance)
    dashboard_host = BROADCAST_HOST if broadcast else str(instance.setting("DASHBOARD_HOST"))
    rest = [python(), "-m", "fluxsite.serve", "-b", str(instance.setting("REST_HOST")), "-p",
            str(instance.setting("REST_PORT")), *(["--reuse-port"] if web > 1 else []), "fluxsite.asgi:application"]
    worker = [python(), "-m", "celery", "-A", "fluxsite", "worker", "--pool", "solo", "--loglevel", "INFO"]
    return [
        *(Service(numbered("rest", n), rest, MARKERS["rest"]) for n in range(1, web + 1)),
        Service("dashboard", [python(), "-m", "fluxsite.serve", "-b", dashboard_host, "-p",
                              str(instance.setting("DASHBOARD_PORT")), "fluxsite.dashboard_asgi:application"],
                MARKERS["dashboard"]),
        *(Service(numbered("worker", n), [*worker, *(["--beat"] if n == 1 else []), "-n",
                                          f"{numbered('worker', n)}@%h"], MARKERS["worker"])
          for n in range(1, workers + 1)),
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


def pid_file(instance: Instance, service: Service) -> Path:
    return instance.run_dir / f"{service.name}.pid"


def live_pid(path: Path, marker: str) -> int | None:
    """The pid in ``path`` (a file in an instance's run/) if it names a live process of that instance: its command
    line has ``marker`` and it works in the instance's folder (every process of an instance is started there), so
    that a pid reused by another program, or a pid file copied from another instance, is never reported or
    signalled. A stale file is removed."""
    try:
        pid = int(path.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        ours = marker in cmdline and os.path.samefile(f"/proc/{pid}/cwd", path.parent.parent)
    except (OSError, ValueError):
        ours = False
    if not ours:
        path.unlink(missing_ok=True)
        return None
    return pid


def running_in(folder: Path) -> dict[str, int]:
    """The services running on the instance in ``folder``, by their pid files (no config needed)."""
    found = {}
    for path in sorted((folder / "run").glob("*.pid")):
        marker = MARKERS.get(kind_of(path.stem))
        if marker is not None and (pid := live_pid(path, marker)) is not None:
            found[path.stem] = pid
    return found


def running(instance: Instance) -> dict[str, int]:
    return running_in(instance.path)


def start_lock(instance: Instance) -> Turns:
    """One `flux start` of an instance at a time, up to its supervisor's pid file: a second one waits for its
    turn, then finds the first's supervisor running."""
    instance.run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return Turns(instance.run_dir / "start.lock")


def supervisor_pid(instance: Instance) -> int | None:
    """The pid of the instance's supervisor (`flux supervise`, or a `flux start --foreground`), if it runs."""
    return live_pid(instance.run_dir / "supervisor.pid", SUPERVISOR_MARKER)


def check_port_free(host: str, port: int, key: str, instance: Instance) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError:
            raise InstanceError(f"port {port} on {host} is in use by another program; stop it, or set {key} in "
                                f"{instance.config_file}") from None


def command_error(stderr: str | None) -> str | None:
    """The one line a management command that failed on purpose said (its CommandError), if it did."""
    lines = (stderr or "").strip().splitlines()
    return lines[-1].removeprefix("CommandError: ") if lines and lines[-1].startswith("CommandError: ") else None


def migrate(instance: Instance) -> None:
    """Check and migrate the database and prepare the Celery broker, before any process of the instance starts;
    warnings (a damaged broker file made anew) are printed."""
    for step, argv in (("checking the database", ["flux_db_check"]),
                       ("migrating the database", ["migrate", "--no-input"]),
                       ("preparing the task broker", ["flux_broker_prepare"])):
        out = subprocess.run([python(), "-m", "django", *argv], env=instance.environ(), cwd=instance.path,
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            said = command_error(out.stderr)
            raise InstanceError(f"{step} of {instance.name!r} failed:"
                                + (f" {said}" if said else f"\n{out.stderr.strip()[-2000:]}"))
        for line in out.stdout.splitlines():
            if line.startswith("warning: "):
                print(f"flux: {line}", flush=True)


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


def _check_ports(instance: Instance, broadcast: bool, skip: set[str]) -> None:
    """Each service has a port of its own, and those of the services about to start (not those in ``skip``,
    running already) are free."""
    listeners = [(name, host, key, int(instance.setting(key))) for name, host, key in (
        ("rest", str(instance.setting("REST_HOST")), "REST_PORT"),
        ("dashboard", BROADCAST_HOST if broadcast else str(instance.setting("DASHBOARD_HOST")), "DASHBOARD_PORT"),
        ("mcp", str(instance.setting("MCP_HOST")), "MCP_PORT"))]
    seen: dict[int, str] = {}
    for _, _, key, port in listeners:
        if port in seen:
            raise InstanceError(f"{seen[port]} and {key} are both {port} in {instance.config_file}; give each service "
                                "a port of its own")
        seen[port] = key
    held = {kind_of(name) for name in skip}  # rest-2 holds the port every REST process shares
    for name, host, key, port in listeners:
        if name not in held:
            check_port_free(host, port, key, instance)


def prepare(instance: Instance, *, broadcast: bool, running_now: dict[str, int]) -> str:
    """Everything before the services start: refusals, free ports (of the services not running), the database
    migrated and checked, the folders; returns the dashboard's viewing token (empty unless broadcasting)."""
    for setting, what in (("REST_HOST", "REST API"), ("MCP_HOST", "MCP server")):
        refusal = open_rest_refusal(str(instance.setting(setting)), str(instance.setting("API_KEYS")), instance.path,
                                    what=what, setting=setting)
        if refusal:
            raise InstanceError(refusal)
    process_counts(instance)
    _check_ports(instance, broadcast, skip=set(running_now))
    migrate(instance)
    instance.run_dir.mkdir(exist_ok=True)
    instance.log_dir.mkdir(exist_ok=True)
    instance.make_private()
    (instance.run_dir / "broadcast").unlink(missing_ok=True)
    # A new viewing token each run: a LAN link works for this run of the service only.
    token = secrets.token_urlsafe(24) if broadcast else ""
    if broadcast:
        (instance.run_dir / "broadcast").write_text(token + "\n")
    return token


def spawn(instance: Instance, service: Service, *, broadcast: bool, token: str) -> subprocess.Popen:
    """Start one service in a session of its own (so it and its children can be signalled together), its
    output appended to its log, its pid in its pid file."""
    with open(instance.log_dir / f"{service.name}.log", "ab") as log:
        proc = subprocess.Popen(service.argv, env=_environ(instance, service, broadcast, token), cwd=instance.path,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    pid_file(instance, service).write_text(f"{proc.pid}\n")
    return proc


def start(instance: Instance, *, broadcast: bool = False, timeout: float = 60.0) -> int:
    """Start the instance's supervisor detached (`flux supervise`: it starts every service, adopting any still
    running, and restarts one that dies), then wait until the REST API's /health, the dashboard and the MCP
    server answer. Returns the supervisor's pid."""
    token = prepare(instance, broadcast=broadcast, running_now=running(instance))
    env = {**instance.environ(), "FLUX_HOME": str(instance.path.parent), VIEW_TOKEN_ENV: token}
    argv = [python(), "-m", "flux", "supervise", "--name", instance.name, *(["--broadcast"] if broadcast else [])]
    log = instance.log_dir / "supervisor.log"
    mark = log.stat().st_size if log.exists() else 0
    with open(log, "ab") as out:
        supervisor = subprocess.Popen(argv, env=env, cwd=instance.path, stdin=subprocess.DEVNULL, stdout=out,
                                      stderr=subprocess.STDOUT, start_new_session=True)
    (instance.run_dir / "supervisor.pid").write_text(f"{supervisor.pid}\n")
    wait_ready(instance, timeout=timeout, failed=lambda: _start_failure(instance, log, mark, supervisor))
    return supervisor.pid


def _start_failure(instance: Instance, log: Path, mark: int, supervisor: subprocess.Popen) -> str | None:
    """Why the start failed, if it did: the supervisor gone, or a service that exited while starting."""
    if supervisor.poll() is not None:
        return f"the supervisor exited (code {supervisor.returncode})"
    with open(log, "rb") as f:
        f.seek(mark)
        text = f.read().decode(errors="replace")
    for service in services(instance):
        if f"supervisor: {service.name} (pid" in text:
            return f"the {service.name} service exited while starting"
    return None


def wait_ready(instance: Instance, *, timeout: float, failed: Callable[[], str | None]) -> None:
    """Wait until REST /health, the dashboard and the MCP server answer; on ``failed()`` or the timeout, stop the
    instance and raise with the end of the log of the service that did not come up."""
    deadline = time.monotonic() + timeout
    for name, url in (("rest", instance.rest_url() + "/health"), ("dashboard", instance.dashboard_url() + "/"),
                      ("mcp", instance.mcp_url())):
        while True:
            if http_answers(url):
                break
            why = failed()
            if why is None and time.monotonic() > deadline:
                why = f"no answer from {url} within {timeout:g} s"
            if why is not None:
                stop(instance)
                log = instance.log_dir / f"{name}.log"
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                raise InstanceError(f"the {name} service did not start ({why}); end of {log}:\n{tail}")
            time.sleep(0.2)


def broadcasting(instance: Instance) -> bool:
    return (instance.run_dir / "broadcast").exists()


def stop(instance: Instance, grace: float | None = None) -> dict[str, int]:
    """Stop the supervisor (it stops its services: SIGTERM, so queued writes run before they exit; SIGKILL after
    STOP_GRACE_SECONDS), then anything of the instance still running the same way; the pid files go."""
    grace = float(instance.setting("STOP_GRACE_SECONDS")) if grace is None else grace
    pids = running(instance)
    supervisor = supervisor_pid(instance)
    if supervisor is not None:
        pids["supervisor"] = supervisor
        _signal(supervisor, signal.SIGTERM)
        deadline = time.monotonic() + grace + 10
        while time.monotonic() < deadline and alive(supervisor):
            time.sleep(0.1)
    stop_pids([pid for name, pid in running(instance).items()] + ([supervisor] if supervisor else []), grace)
    for path in instance.run_dir.glob("*.pid"):
        if kind_of(path.stem) in MARKERS:
            path.unlink(missing_ok=True)
    (instance.run_dir / "supervisor.pid").unlink(missing_ok=True)
    (instance.run_dir / "broadcast").unlink(missing_ok=True)
    return pids


def stop_pids(pids: list[int], grace: float) -> None:
    """SIGTERM each pid's process group, wait up to ``grace`` seconds, SIGKILL the groups still alive."""
    for pid in pids:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        if alive(pid):
            _signal_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)


def kill_group(pid: int | None) -> None:
    """SIGKILL what is left of a service's process group (its leader dead: children it started, like the
    worker's embedded beat, would otherwise run on beside its successor)."""
    if pid is not None:
        _signal_group(pid, signal.SIGKILL)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def alive(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"
