"""What MCP clients launch and what `flux stop` leaves, end to end on a real instance (`flux start`) in a
temporary FLUX_HOME on free loopback ports: `flux mcp` as a stdio server, every snippet `flux mcp-config` writes
(stdio ones launched exactly as written, HTTP ones connected to as written), `flux stop` escalating to SIGKILL,
and feedback accepted before a stop being applied after the restart."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from core.net import free_port
from tests.flux.test_cli import ROOT, alive, flux
from tests.mcp_bridge.test_mcp import TOOLS, ok
from tests.mcp_bridge.test_mcp_http import initialized
from tests.mcp_bridge.test_mcp_http import session as http_session

TIMEOUT = 60.0
NAME = "mem"
KEY = f"flux-{NAME}"  # the server's key in every snippet
STDIO_SNIPPETS = ("codex.toml", "claude_desktop.json", "claude_code.json", "cursor.json", "generic.json")
HTTP_SNIPPETS = ("codex_http.toml", "claude_code_http.json", "cursor_http.json", "generic_http.json")
SERVICES = ("rest", "dashboard", "worker", "mcp")
T = TypeVar("T")


@dataclass
class Lab:
    """An initialised instance NAME under ``home``; ``start`` runs `flux start`."""

    home: Path
    rest_port: int
    mcp_port: int

    @property
    def folder(self) -> Path:
        return self.home / NAME

    def start(self) -> dict[str, int]:
        out = flux(self.home, "start", "--name", NAME)
        assert out.returncode == 0, out.stdout + out.stderr
        pids = {name: int(path.read_text()) for name in SERVICES if (path := self.folder / "run" / f"{name}.pid")
                .exists()}
        assert set(pids) == set(SERVICES) and all(alive(p) for p in pids.values()), out.stdout
        return pids

    def log(self, service: str) -> str:
        path = self.folder / "logs" / f"{service}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    home = tmp_path / "home"
    out = flux(home, "init", "--name", NAME, "--yes")
    assert out.returncode == 0, out.stderr
    lab = Lab(home, free_port(), free_port())
    config = lab.folder / "config.yaml"
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {lab.rest_port}")
                      .replace("# DASHBOARD_PORT: 7462", f"DASHBOARD_PORT: {free_port()}")
                      .replace("# MCP_PORT: 7464", f"MCP_PORT: {lab.mcp_port}")
                      .replace("# SEMANTIC_ENTRY: auto", "SEMANTIC_ENTRY: off")  # lexical: no model to load
                      .replace("# STOP_GRACE_SECONDS: 30.0", f"STOP_GRACE_SECONDS: {STOP_GRACE_SECONDS}"))
    try:
        yield lab
    finally:
        flux(home, "stop", "--name", NAME, timeout=STOP_GRACE_SECONDS + 120)
        for pid in instance_processes(lab.folder):  # only what this test's `flux start` made, if any is left
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


STOP_GRACE_SECONDS = 4.0  # the instances' grace before `flux stop` kills a service that did not end


def instance_processes(folder: Path) -> set[int]:
    """The live processes of the instance in ``folder``: every one `flux start` makes (services, their children,
    anything supervising them) runs in the instance's environment, FLUX_DATA_DIR=folder."""
    mark = b"\0FLUX_DATA_DIR=" + bytes(folder) + b"\0"
    found = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if mark in b"\0" + (proc / "environ").read_bytes() and alive(int(proc.name)):
                found.add(int(proc.name))
        except OSError:
            continue
    return found


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (OSError, IndexError):
        return ""


def wait_until(check: Callable[[], T], what: str, timeout: float = TIMEOUT) -> T:
    """Poll ``check`` until it returns something true; fail naming ``what`` when ``timeout`` runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.2)


def rest(port: int, method: str, path: str, body: dict | None = None, key: str | None = None) -> tuple[int, Any]:
    """One REST call to the instance: (status, decoded JSON)."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    with anyio.fail_after(TIMEOUT):
        return ok(await session.call_tool(tool, arguments))


@asynccontextmanager
async def stdio_session(command: str, args: list[str], env: dict[str, str] | None, cwd: Path,
                        errlog: Path) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with ``command args`` over stdio, as an MCP client launches it: the SDK
    merges ``env`` over its minimal default environment (PATH, HOME, USER, ...), nothing of this process's."""
    params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
    with open(errlog, "w") as log:
        async with stdio_client(params, errlog=log) as (read, write), initialized(read, write) as session:
            yield session


# 1. `flux mcp --name NAME`: the stdio server every stdio snippet launches.

def test_flux_mcp_serves_the_running_instance_over_stdio(lab: Lab, tmp_path: Path) -> None:
    """The command line in this checkout (launched from it), with only FLUX_HOME over the SDK's minimal
    environment: the bridge finds the instance's REST service from the instance's config."""
    lab.start()
    errlog = tmp_path / "flux-mcp-stderr.log"
    try:
        anyio.run(_a_turn_through_flux_mcp, lab, ROOT, errlog)
    except BaseException:
        print(errlog.read_text(errors="replace"), lab.log("rest"))
        raise
    assert f"REST service at http://127.0.0.1:{lab.rest_port}" in errlog.read_text()
    status, grains = rest(lab.rest_port, "GET", "/grains")  # the bridge wrote to this instance, through REST
    assert status == 200 and [g["content"] for g in grains["grains"]] == ["Ines waters the ferns on Sundays"]


async def _a_turn_through_flux_mcp(lab: Lab, cwd: Path, errlog: Path) -> None:
    async with stdio_session(sys.executable, ["-m", "flux", "mcp", "--name", NAME],
                             {"FLUX_HOME": str(lab.home)}, cwd, errlog) as session:
        with anyio.fail_after(TIMEOUT):
            tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == TOOLS
        stored = await call(session, "flux_store", content="Ines waters the ferns on Sundays",
                            provenance="user_stated", caller_id="launcher:chat")
        assert stored["created"]
        found = await call(session, "flux_retrieve", query="who waters the ferns", caller_id="launcher:chat")
        assert stored["grain"]["id"] in [g["id"] for g in found["grains"]], found
        for grain in found["grains"]:
            rated = await call(session, "flux_feedback", trace_id=found["trace_id"], grain_id=grain["id"],
                               useful=grain["id"] == stored["grain"]["id"], caller_id="launcher:chat")
            assert rated["status"] == "accepted"


# 2. `flux mcp-config`: every snippet it writes works exactly as written.

def stdio_spec(name: str, content: str) -> dict[str, Any]:
    """command, args and env of a stdio snippet, read the way its client reads it."""
    if name.endswith(".toml"):
        return tomllib.loads(content)["mcp_servers"][KEY]
    data = json.loads(content)
    if name == "generic.json":
        assert data["name"] == KEY and data["transport"] == "stdio"
        return data
    return data["mcpServers"][KEY]


def http_spec(name: str, content: str) -> tuple[str, dict[str, str]]:
    """URL and headers of an HTTP snippet, read the way its client reads it."""
    if name.endswith(".toml"):
        entry = tomllib.loads(content)["mcp_servers"][KEY]
        return entry["url"], entry.get("http_headers", {})
    data = json.loads(content)
    if name == "generic_http.json":
        assert data["name"] == KEY and data["transport"] == "streamable-http"
        entry = data
    else:
        entry = data["mcpServers"][KEY]
        assert entry.get("type", "http") == "http"
    return entry["url"], entry.get("headers", {})


def test_every_snippet_mcp_config_writes_reaches_the_instance(lab: Lab, tmp_path: Path) -> None:
    """With an API key (`flux keys add --local`), `flux mcp-config` rewrites the snippets, the HTTP ones now
    carrying the key; each stdio snippet is launched exactly as written and each HTTP one connected to as written,
    and each stores one fact in this instance."""
    integrations = lab.folder / "integrations"
    added = flux(lab.home, "keys", "--name", NAME, "add", "agents", "--local")
    assert added.returncode == 0, added.stderr
    key = added.stdout.split(": ", 1)[1].split()[0]
    assert "headers" not in (integrations / "cursor_http.json").read_text()  # written by init, before the key
    (integrations / "codex.toml").unlink()
    (integrations / "generic.json").write_text("{}")

    out = flux(lab.home, "mcp-config", "--name", NAME)
    assert out.returncode == 0, out.stderr
    written = {p.name: p.read_text() for p in integrations.iterdir()}
    assert set(written) == set(STDIO_SNIPPETS) | set(HTTP_SNIPPETS)
    for name, content in written.items():
        assert f"# {integrations / name}\n{content}" in out.stdout, name  # printed as written

    lab.start()
    neutral = tmp_path / "client-cwd"  # an MCP client launches from wherever it runs, not from the checkout:
    for package in ("flux", "core", "memory", "grains", "graph", "api", "mcp_bridge"):  # a project of its own
        (neutral / package).mkdir(parents=True)  # whose packages, first on the path, crashed the bridge
        (neutral / package / "__init__.py").write_text("raise ImportError('the project in the current folder')\n")
    expected = []
    for name in STDIO_SNIPPETS:
        spec = stdio_spec(name, written[name])
        content = f"The {name} snippet launched the bridge"
        errlog = tmp_path / f"{name}-stderr.log"
        try:
            anyio.run(_store_over_stdio, spec, neutral, errlog, content)
        except BaseException:
            print(name, written[name], errlog.read_text(errors="replace") if errlog.exists() else "")
            raise
        assert spec["args"] == ["-P", "-m", "flux", "mcp", "--name", NAME], (name, spec)
        expected.append(content)
    for name in HTTP_SNIPPETS:
        url, headers = http_spec(name, written[name])
        content = f"The {name} snippet reached the MCP server"
        try:
            anyio.run(_store_over_http, url, headers, content)
        except BaseException:
            print(name, written[name], lab.log("mcp"))
            raise
        assert url == f"http://127.0.0.1:{lab.mcp_port}/mcp" and headers == {"Authorization": f"Bearer {key}"}, name
        expected.append(content)
    refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"}, timeout=TIMEOUT)
    assert refused.status_code == 401  # so the snippets' headers are what let them in

    status, grains = rest(lab.rest_port, "GET", "/grains?limit=100", key=key)
    assert status == 200, grains
    assert sorted(g["content"] for g in grains["grains"]) == sorted(expected)
    status, callers = rest(lab.rest_port, "GET", "/callers", key=key)
    assert {c["client"] for c in callers["callers"]} == {"agents"}  # every call carried the instance's key


async def _store_over_stdio(spec: dict[str, Any], cwd: Path, errlog: Path, content: str) -> None:
    async with stdio_session(spec["command"], spec["args"], spec.get("env"), cwd, errlog) as session:
        assert (await call(session, "flux_store", content=content, caller_id="snippet:memory_writer"))["created"]


async def _store_over_http(url: str, headers: dict[str, str], content: str) -> None:
    async with http_session(url, headers=headers) as session:
        with anyio.fail_after(TIMEOUT):
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        assert (await call(session, "flux_store", content=content, caller_id="snippet:memory_writer"))["created"]


# 3. `flux stop` escalates to SIGKILL.

def test_stop_kills_a_service_that_ignores_sigterm(lab: Lab) -> None:
    """The worker's whole process group is stopped (SIGSTOP), so SIGTERM stays pending and it cannot exit:
    `flux stop` still ends every process of every service after STOP_GRACE_SECONDS and removes the pid files.
    (The grace is a module constant, the default of processes.stop: neither a setting nor an option, so this
    test waits the full grace.)"""
    pids = lab.start()
    processes = instance_processes(lab.folder)
    assert set(pids.values()) <= processes, (pids, processes)
    os.killpg(pids["worker"], signal.SIGSTOP)
    wait_until(lambda: state(pids["worker"]) == "T", "the worker stopped by SIGSTOP", timeout=10)

    began = time.monotonic()
    out = flux(lab.home, "stop", "--name", NAME, timeout=STOP_GRACE_SECONDS + 120)
    took = time.monotonic() - began
    assert out.returncode == 0, out.stderr
    assert all(str(pid) in out.stdout for pid in pids.values()), out.stdout
    assert took >= STOP_GRACE_SECONDS - 1, f"the frozen worker ended after {took:.1f} s, before the grace"
    assert took < STOP_GRACE_SECONDS + 60, f"`flux stop` took {took:.1f} s"
    left = [pid for pid in processes | instance_processes(lab.folder) if alive(pid)]
    assert not left, f"still alive after `flux stop`: {left} (worker state {state(pids['worker'])!r})"
    assert not list((lab.folder / "run").glob("*.pid"))
    after = flux(lab.home, "status", "--name", NAME)
    assert after.returncode == 1 and "not running" in after.stdout


# 4. Feedback accepted before a stop is applied after the restart.

def applied_at(folder: Path, feedback_id: int) -> str | None:
    with closing(sqlite3.connect(folder / "flux.sqlite3", timeout=30)) as db:
        row = db.execute("SELECT applied_at FROM graph_feedback WHERE id = ?", (feedback_id,)).fetchone()
    assert row is not None, f"feedback {feedback_id} is not in the database"
    return row[0]


def rate_a_retrieval(lab: Lab) -> tuple[int, list[int]]:
    """Store, retrieve and rate through REST: (the stored grain's id, the ids of the accepted feedback)."""
    port = lab.rest_port
    status, stored = rest(port, "POST", "/store", {"content": "The boiler is serviced every October"})
    assert status == 201, stored
    gid = stored["grain"]["id"]
    status, found = rest(port, "POST", "/retrieve", {"query": "when is the boiler serviced"})
    assert status == 200 and gid in [g["id"] for g in found["grains"]], found
    feedback_ids = []
    for grain in found["grains"]:
        status, rated = rest(port, "POST", "/feedback", {"trace_id": found["trace_id"], "grain_id": grain["id"],
                                                          "useful": grain["id"] == gid})
        assert status == 202 and rated["status"] == "accepted", rated  # accepted now, applied in the background
        feedback_ids.append(rated["feedback_id"])
    return gid, feedback_ids


def stop(lab: Lab) -> None:
    out = flux(lab.home, "stop", "--name", NAME, timeout=STOP_GRACE_SECONDS + 120)
    assert out.returncode == 0, out.stderr


def test_feedback_accepted_before_a_stop_is_applied_after_the_restart(lab: Lab) -> None:
    """Rated, then stopped at once: after the restart the feedback is applied (today the REST service applies
    it before it exits, its write queue drained on a graceful stop) and nothing is left pending."""
    lab.start()
    gid, feedback_ids = rate_a_retrieval(lab)
    stop(lab)
    lab.start()
    for feedback_id in feedback_ids:
        wait_until(lambda f=feedback_id: applied_at(lab.folder, f), f"feedback {feedback_id} applied")
    status, health = rest(lab.rest_port, "GET", "/health")
    assert status == 200 and health["queues"]["feedback_pending"] == 0, health
    with closing(sqlite3.connect(lab.folder / "flux.sqlite3", timeout=30)) as db:
        useful = db.execute("SELECT useful_count FROM grains_grain WHERE id = ?", (gid,)).fetchone()
    assert useful == (1,), useful


def test_feedback_left_pending_by_a_dead_service_is_applied_after_the_restart(lab: Lab) -> None:
    """The beat's sweep (every FEEDBACK_SWEEP_SECONDS, 1 s here) applies what a dead service left pending."""
    config = lab.folder / "config.yaml"
    config.write_text(config.read_text().replace("# FEEDBACK_SWEEP_SECONDS: 60", "FEEDBACK_SWEEP_SECONDS: 1"))
    lab.start()
    _, feedback_ids = rate_a_retrieval(lab)
    for feedback_id in feedback_ids:
        wait_until(lambda f=feedback_id: applied_at(lab.folder, f), f"feedback {feedback_id} applied")
    stop(lab)
    with closing(sqlite3.connect(lab.folder / "flux.sqlite3", timeout=30)) as db:  # as a service killed between
        db.execute("UPDATE graph_feedback SET applied_at = NULL")  # accepting and applying would have left it
        db.commit()
    lab.start()
    for feedback_id in feedback_ids:
        wait_until(lambda f=feedback_id: applied_at(lab.folder, f), f"feedback {feedback_id} applied", timeout=30)
