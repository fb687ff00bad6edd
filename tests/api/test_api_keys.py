"""API keys end to end: an instance with keys (`flux keys add`), its real service on loopback, and every way in:
REST with and without a key, the MCP bridge (`flux mcp --name`) and the SDK (`Flux.connect(name)`) sending the
key from the instance's config. The key decides the client; a header naming another client changes nothing."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from core.errors import Unauthorized
from core.net import free_port
from flux.sdk import Flux
from tests.servers import ROOT, flux_server

TIMEOUT = 60.0


def flux_cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")}
    return subprocess.run([sys.executable, "-m", "flux", *args], cwd=ROOT, env={**env, "FLUX_HOME": str(home)},
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    """(home, REST base URL, the local key, another client's key) of a running instance with two keys."""
    home = tmp_path_factory.mktemp("keys") / "home"
    assert flux_cli(home, "init", "--name", "team", "--yes").returncode == 0
    local = flux_cli(home, "keys", "--name", "team", "add", "agent", "--local")
    other = flux_cli(home, "keys", "add", "--name", "team", "second-agent")  # the order SECURITY.md shows
    assert local.returncode == other.returncode == 0, local.stderr + other.stderr
    key, other_key = (re.search(r"(flux_\S+)", out.stdout).group(1) for out in (local, other))
    folder, port = home / "team", free_port()
    config = folder / "config.yaml"
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {port}"))
    assert f"API_KEY: {key}" in config.read_text()
    assert key not in (folder / "api-keys").read_text()  # only its hash is kept
    with flux_server(folder, port=port) as (base, _):
        yield home, base, key, other_key


def request(url: str, body: dict | None = None, **headers: str) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


def callers(base: str, key: str) -> dict[str, dict]:
    listed = request(f"{base}/callers", Authorization=f"Bearer {key}")[1]["callers"]
    return {f"{c['client']}:{c['role']}": c for c in listed}


def test_rest_needs_a_key_and_the_key_decides_the_client(keyed):
    _, base, key, other_key = keyed
    for headers, said in (({}, "requires an API key"), ({"Authorization": "Bearer flux_wrong"}, "is not one of"),
                          ({"Authorization": key}, "requires an API key")):  # a wrong key was told it sent none
        status, answer, sent = request(f"{base}/health", **headers)
        assert status == 401 and answer["error"]["code"] == "unauthorized" and "Bearer" in sent["WWW-Authenticate"]
        assert said in answer["error"]["message"], (headers, answer)
        assert sent["X-Content-Type-Options"] == "nosniff"  # a refusal carries the security headers too
    assert request(f"{base}/store", {"content": "no key, no store"})[0] == 401
    status, stored, _ = request(f"{base}/store", {"content": "Team standup is at 9:30"}, Authorization=f"Bearer {key}",
                                **{"X-Flux-Client": "mallory", "X-Flux-Role": "chat"})
    assert status == 201
    status, _, _ = request(f"{base}/store", {"content": "Deploys happen on Thursdays"},
                           Authorization=f"Bearer {other_key}", **{"X-Caller-Id": "agent:chat"})
    assert status == 201
    status, _, _ = request(f"{base}/store", {"content": "Reviews are due by Friday noon"},
                           Authorization=f"Bearer {other_key}", **{"X-Flux-Role": "memory_writer"})
    assert status == 201  # the key names the client: the role alone is enough
    seen = callers(base, key)
    assert seen["agent:chat"]["stored"] == 1 and seen["second-agent:chat"]["stored"] == 1
    assert seen["second-agent:memory_writer"]["stored"] == 1
    assert not any(name.startswith("mallory") for name in seen)
    assert request(f"{base}/openapi.json")[0] == 200  # the description of the API stays public


def test_the_admins_styles_and_scripts_are_served_without_a_key_and_nothing_else_is(keyed):
    """The admin's pages asked for /static/admin/... and got 404s (unstyled); its files are Django's own, public,
    needing no key (a browser sends none); a path out of their folder is not there."""
    _, base, _, _ = keyed
    for name, kind in (("css/base.css", "text/css"), ("js/actions.js", "text/javascript")):
        with urllib.request.urlopen(f"{base}/static/admin/{name}", timeout=TIMEOUT) as response:
            assert response.status == 200 and response.headers["Content-Type"].startswith(kind)
            assert len(response.read()) > 1000
    for wrong in ("../../../settings.py", "%2e%2e/%2e%2e/__init__.py", "css/", "nope.css"):
        status, answer, _ = request(f"{base}/static/admin/{wrong}")
        assert status == 404 and answer["error"]["code"] == "not_found", (wrong, answer)
    assert request(f"{base}/static/dashboard/flux.js")[0] == 401  # only the admin's files are open


def test_the_mcp_bridge_sends_the_key_from_the_config(keyed):
    home, base, key, _ = keyed
    anyio.run(_bridge_stores, home)
    assert callers(base, key)["agent:memory_writer"]["stored"] == 1
    assert "someone:memory_writer" not in callers(base, key)


async def _bridge_stores(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "flux", "mcp", "--name", "team"],
                                   env={**env, "FLUX_HOME": str(home)}, cwd=ROOT)
    with open(home / "bridge-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.fail_after(TIMEOUT):
                    await session.initialize()
                    result = await session.call_tool("flux_store", {
                        "content": "The release train leaves every second Tuesday",
                        "caller_id": "someone:memory_writer"})
    assert not result.is_error and result.structured_content["created"], result.content


def test_the_sdk_sends_the_key_from_the_config(keyed, monkeypatch):
    home, base, key, _ = keyed
    monkeypatch.setenv("FLUX_HOME", str(home))
    with Flux.connect("team", caller="whoever:background_lookup") as mem:
        gid = mem.store("On-call rotates on Mondays")
        assert mem.retrieve("When does on-call rotate?").grains[0].id == gid
    assert callers(base, key)["agent:background_lookup"]["retrievals"] == 1
    with pytest.raises(Unauthorized):
        Flux.connect(base, api_key="flux_not-a-key").health()


def test_start_refuses_to_open_rest_beyond_loopback_without_keys(tmp_path):
    home = tmp_path / "home"
    assert flux_cli(home, "init", "--name", "open", "--yes").returncode == 0
    config = home / "open" / "config.yaml"
    config.write_text(config.read_text().replace("# REST_HOST: 127.0.0.1", "REST_HOST: 0.0.0.0"))
    out = flux_cli(home, "start", "--name", "open")
    assert out.returncode == 1 and "without API keys" in out.stderr and "Traceback" not in out.stderr
    assert not (home / "open" / "run").exists() or not list((home / "open" / "run").glob("*.pid"))


def test_a_keys_file_edited_badly_refuses_every_call_with_where_and_add_neither_joins_nor_adds(tmp_path):
    """A keys file that does not read as keys: every call refused 503 naming the file's line (it was a 500 with
    no reason, REST and MCP alike), `flux keys add` refused too (it added a key that could not work); a last line
    left without its newline is not joined by the next key (it made the file unreadable)."""
    home = tmp_path / "home"
    assert flux_cli(home, "init", "--name", "team", "--yes").returncode == 0
    first = flux_cli(home, "keys", "add", "alice", "--name", "team")
    key = re.search(r"(flux_\S+)", first.stdout).group(1)
    keys = home / "team" / "api-keys"
    keys.write_text(keys.read_text().rstrip("\n"))  # saved by an editor without the last newline
    assert flux_cli(home, "keys", "add", "bob", "--name", "team").returncode == 0
    assert [line.split()[0] for line in keys.read_text().splitlines()] == ["alice", "bob"]
    with flux_server(home / "team") as (base, _):
        assert request(f"{base}/health", Authorization=f"Bearer {key}")[0] == 200
        with open(keys, "a") as out:
            out.write("this is a bad line\n")
        status, answer, _ = request(f"{base}/health", Authorization=f"Bearer {key}")
        assert status == 503 and answer["error"]["code"] == "keys_unreadable", answer
        assert "line 3" in answer["error"]["message"]
        refused = flux_cli(home, "keys", "add", "carol", "--name", "team")
        assert refused.returncode == 1 and "line 3" in refused.stderr and "carol" not in keys.read_text()
        keys.write_text("\n".join(keys.read_text().splitlines()[:2]) + "\n")
        assert request(f"{base}/health", Authorization=f"Bearer {key}")[0] == 200


def test_removing_keys_says_what_it_did_and_never_opens_a_memory_beyond_this_machine(tmp_path):
    home = tmp_path / "home"
    assert flux_cli(home, "init", "--name", "team", "--yes").returncode == 0
    for args, text in ((["remove"], "give the client"), (["remove", "nobody"], "no key of client 'nobody'")):
        out = flux_cli(home, "keys", *args, "--name", "team")
        assert out.returncode == 1 and text in out.stderr, out.stderr
    assert not (home / "team" / "api-keys").exists()  # nothing made by a remove that removed nothing
    added = flux_cli(home, "keys", "add", "alice", "--local", "--name", "team")
    assert "every REST and MCP call needs a key (at once: no restart)" in added.stdout
    config = home / "team" / "config.yaml"
    config.write_text(config.read_text() + "REST_HOST: 0.0.0.0\nAPI_KEYS: svc:abcdefghijklmnop1234\n")
    listed = flux_cli(home, "keys", "list", "--name", "team")
    assert listed.stdout.splitlines() == ["alice", f"svc (API_KEYS in {config})"]
    config.write_text(config.read_text().replace("API_KEYS: svc:abcdefghijklmnop1234\n", ""))
    last = flux_cli(home, "keys", "remove", "alice", "--name", "team")
    assert last.returncode == 1 and "REST_HOST" in last.stderr and "last key" in last.stderr
    config.write_text(config.read_text().replace("REST_HOST: 0.0.0.0\n", ""))
    gone = flux_cli(home, "keys", "remove", "alice", "--name", "team")
    assert gone.returncode == 0 and "Removed 1 key(s)" in gone.stdout, gone.stderr
    assert "API_KEY in" in gone.stdout and "No key is left" in gone.stdout
    assert "refused until" not in gone.stdout  # it said both: refused, and open to every program
    # The removed key is cleared from config.yaml and the snippets (kept, it made the tools a 401 once another was
    # added, the instance's own key being one no longer known).
    assert "\nAPI_KEY: flux_" not in config.read_text()
    assert "Bearer" not in (home / "team" / "integrations" / "claude_code_http.json").read_text()
