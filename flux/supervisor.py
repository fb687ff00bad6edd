"""The supervisor of a running instance: one process that starts every service, restarts one that dies, and
stops them all when asked.

`flux start` runs it detached (`flux supervise`, its pid in run/supervisor.pid, its log in logs/supervisor.log);
`flux start --foreground` runs it in the terminal. A service that exits on its own (killed, crashed, out of
memory) is started again after a back-off that doubles from RESTART_BACKOFF_SECONDS to RESTART_BACKOFF_MAX_SECONDS
(settings) and resets once the service has stayed up STABLE_SECONDS. Services found running when the supervisor
starts (their supervisor was killed) are adopted, not started twice. SIGTERM or SIGINT: every service gets
SIGTERM (its queued writes run first), SIGKILL after the grace, and the pid files go.
"""
from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from flux.instance import Instance
from flux.processes import (
    Service,
    alive,
    kill_group,
    live_pid,
    pid_file,
    services,
    spawn,
    stop_pids,
)

STABLE_SECONDS = 60.0
TICK_SECONDS = 0.5


@dataclass
class Watched:
    service: Service
    pid: int | None = None
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    backoff: float = 0.0
    restart_at: float | None = None
    restarts: int = 0
    exits: list[str] = field(default_factory=list)

    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid is not None and alive(self.pid)

    def exit_text(self) -> str:
        code = self.proc.poll() if self.proc is not None else None
        if code is None:
            return "exited"
        return f"killed by signal {-code}" if code < 0 else f"exited with code {code}"


class Supervisor:
    def __init__(self, instance: Instance, *, broadcast: bool = False, token: str = "",
                 log: Callable[[str], None] | None = None) -> None:
        self.instance, self.broadcast, self.token = instance, broadcast, token
        self.grace = float(instance.setting("STOP_GRACE_SECONDS"))
        self._log = log or (lambda line: None)
        self.first_backoff = float(instance.setting("RESTART_BACKOFF_SECONDS"))
        self.max_backoff = float(instance.setting("RESTART_BACKOFF_MAX_SECONDS"))
        self.watched = [Watched(s, backoff=self.first_backoff) for s in services(instance, broadcast=broadcast)]
        self.stopping = False

    def say(self, text: str) -> None:
        self._log(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} supervisor: {text}")

    def start_all(self) -> dict[str, str]:
        """Adopt each service already running (by its pid file), start the others; {name: what was done}."""
        done = {}
        for w in self.watched:
            pid = live_pid(pid_file(self.instance, w.service), w.service.marker)
            if pid is not None:
                w.pid, w.started_at = pid, time.monotonic()
                done[w.service.name] = f"adopted (pid {pid})"
            else:
                self._start(w)
                done[w.service.name] = f"started (pid {w.pid})"
        self.say("; ".join(f"{n} {d}" for n, d in done.items()))
        return done

    def _start(self, w: Watched) -> None:
        w.proc = spawn(self.instance, w.service, broadcast=self.broadcast, token=self.token)
        w.pid, w.started_at, w.restart_at = w.proc.pid, time.monotonic(), None

    def tick(self) -> None:
        """Notice services that died and restart those whose back-off has passed."""
        now = time.monotonic()
        for w in self.watched:
            if w.restart_at is None and w.running():
                if now - w.started_at >= STABLE_SECONDS:
                    w.backoff = self.first_backoff
                continue
            if w.restart_at is None:  # just found dead: its children (the worker's beat) go with it
                why = w.exit_text()
                kill_group(w.pid)
                w.exits.append(why)
                pid_file(self.instance, w.service).unlink(missing_ok=True)
                w.restart_at = now + w.backoff
                self.say(f"{w.service.name} (pid {w.pid}) {why}; restarting in {w.backoff:g} s")
                w.backoff = min(w.backoff * 2, self.max_backoff)
            elif now >= w.restart_at and not self.stopping:
                self._start(w)
                w.restarts += 1
                self.say(f"{w.service.name} restarted (pid {w.pid}, restart {w.restarts})")

    def watch(self, until: Callable[[], bool] = lambda: False) -> None:
        """Tick until SIGTERM or SIGINT (or ``until()``), then stop every service. Both are handled explicitly: a
        process started in the background of a shell inherits SIGINT ignored, and Ctrl-C must still stop it."""
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        try:
            while not until():
                self.tick()
                time.sleep(TICK_SECONDS)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop_all()

    def stop_all(self) -> dict[str, int]:
        self.stopping = True
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the graceful stop short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pids = {w.service.name: w.pid for w in self.watched if w.pid is not None and w.running()}
        stop_pids(list(pids.values()), self.grace)
        for w in self.watched:
            if w.proc is not None:
                w.proc.poll()  # reap
            pid_file(self.instance, w.service).unlink(missing_ok=True)
        self.say(f"stopped {', '.join(pids) or 'nothing'}")
        return pids


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
