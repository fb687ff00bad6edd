"""The SDK as a client of the running service (``Flux.connect`` / ``AsyncFlux``), against the real service on
loopback; the embedded SDK beside it gives the same answers and refuses an instance whose service runs."""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time

import pytest

from core.client import ServiceUnavailable
from core.errors import (
    FeedbackOwed,
    Forbidden,
    InvalidInput,
    NotFound,
    NotYourTrace,
    RateLimited,
    ReservedIdentity,
    TooLarge,
)
from core.net import free_port
from flux.sdk import AsyncFlux, Flux
from graph.results import RetrieveResult
from tests.servers import ROOT, flux_server, json_server

FACTS = [
    {"content": "Lena grows tomatoes in her greenhouse", "context": "garden"},
    {"content": "Lena waters the tomatoes every morning", "context": "garden"},
    {"content": "Omar fixes bicycles on Saturdays", "context": "town"},
]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    data = tmp_path_factory.mktemp("connect") / "inst"
    with flux_server(data, FEEDBACK_ENFORCEMENT_GRACE_SECONDS="0") as (base, _):
        yield base, data


def test_every_method_over_rest(service):
    base, _ = service
    with Flux.connect(base, caller="sdk-remote:chat") as mem:
        ids = mem.store_batch(FACTS)
        assert len(ids) == 3 and all(isinstance(i, int) for i in ids)
        new = mem.store("Lena now grows peppers instead of tomatoes", provenance="user_stated", context="garden")
        assert mem.store("Lena grows tomatoes in her greenhouse") == ids[0]  # known content: the same grain
        found = mem.retrieve("What does Lena grow?", limit=3)
        assert isinstance(found, RetrieveResult) and found.grains and found.grains[0].content.startswith("Lena")
        for grain in found.grains:
            mem.feedback(found.trace_id, grain.id, useful=grain.id == found.grains[0].id)
        with pytest.raises(InvalidInput):
            mem.feedback(found.trace_id, 999999, useful=True)
        assert {g["id"] for g in mem.grains(status="active", limit=10)} >= {*ids, new}
        assert mem.grain(ids[0])["id"] == ids[0]
        with pytest.raises(NotFound):
            mem.grain(424242)
        relation = mem.relate(new, "supersedes", ids[0], note="she switched")
        assert any(r["id"] == relation for r in mem.relations(kind="supersedes"))
        assert isinstance(mem.clusters(), list) and isinstance(mem.dreams(), list)
        assert set(mem.dream_run()) >= {"candidates", "accepted", "rejected"}
        assert mem.health()["grains"]["total"] >= 4


def test_every_method_async(service):
    base, _ = service

    async def main() -> dict:
        async with AsyncFlux.connect(base, caller="sdk-async:chat") as mem:
            gid = await mem.store("Omar's shop opens at nine", context="town")
            found, health = await asyncio.gather(mem.retrieve("When does Omar's shop open?"), mem.health())
            await mem.feedback(found.trace_id, found.grains[0].id, useful=True)
            return {"gid": gid, "top": found.grains[0].id, "total": health["grains"]["total"],
                    "grain": (await mem.grain(gid))["id"], "listed": len(await mem.grains(limit=100))}

    result = asyncio.run(main())
    assert result["top"] == result["gid"] == result["grain"] and result["listed"] == result["total"] >= 1


def test_the_service_errors_arrive_as_the_services_own_classes(service):
    base, _ = service
    mem = Flux.connect(base, caller="sdk-owing:chat")
    mem.store("Kai drinks oat milk")
    mem.retrieve("Kai")
    time.sleep(1.1)  # past the grace period of 0 s
    with pytest.raises(FeedbackOwed) as owed:
        mem.retrieve("Kai")
    assert owed.value.http_status == 409 and owed.value.details["owed"]
    # Codes a service raises more precisely than its status says arrive as those classes, still caught as Forbidden.
    found = Flux.connect(base, caller="sdk-other:chat").retrieve("Kai")
    with pytest.raises(NotYourTrace) as theirs:
        mem.feedback(found.trace_id, found.grains[0].id, useful=True)
    assert isinstance(theirs.value, Forbidden) and theirs.value.http_status == 403
    with pytest.raises(ReservedIdentity):
        Flux.connect(base, caller="flux-sdk:chat").retrieve("Kai")
    with pytest.raises(TooLarge):  # a body past MAX_REQUEST_BYTES: refused, not "the service is not running"
        mem.store("x" * 5_000_000)
    assert mem.health()["grains"]["total"] >= 1


def test_the_sdk_says_a_malformed_caller_a_bad_id_and_a_url_with_nothing_there_plainly(service):
    base, _ = service
    with pytest.raises(InvalidInput, match="not of the form 'client:role'"):
        Flux.connect(base, caller="nocolon")
    with pytest.raises(InvalidInput) as bad:
        Flux.connect(base, caller="sdk:chat").grain(-1)
    assert bad.value.details["field"] == "grain_id"
    with pytest.raises(InvalidInput) as strings:  # items are {"content": ...}: the service names the first that is not
        Flux.connect(base, caller="sdk:chat").store_batch(["a fact", "another"])
    assert strings.value.details.get("index") == 0 and "object" in strings.value.message, strings.value.message
    for wrong in ("\u00b2", "\u2460"):  # digits int() does not read: a ValueError before
        with pytest.raises(InvalidInput):
            Flux.connect(base, caller="sdk:chat").grain(wrong)
    with pytest.raises(InvalidInput, match="list of items"):  # not a batch of three one-letter items
        Flux.connect(base, caller="sdk:chat").store_batch("abc")
    with pytest.raises(InvalidInput, match="NaN or an infinity"):  # sent as bare NaN: the service's invalid_json
        Flux.connect(base, caller="sdk:chat").retrieve("x", limit=float("nan"))
    assert Flux.connect(base, api_key="flux_k3y\n", caller="sdk:chat").health()  # a key file's newline is no part
    with pytest.raises(InvalidInput) as spaced:  # a ValueError that printed the whole key
        Flux.connect(base, api_key="flux_k3y and more", caller="sdk:chat").health()
    assert "k3y" not in spaced.value.message
    with pytest.raises(ServiceUnavailable) as down:
        Flux.connect(f"http://127.0.0.1:{free_port()}", caller="sdk:chat").health()
    assert "Start it with `flux start` where it is served, then retry" in down.value.message


def test_a_429_is_retried_after_retry_after():
    limited = (429, {"error": {"code": "rate_limited", "message": "slow down", "details": {"retry_after": 2}}},
               {"Retry-After": "2"})
    plan = [limited]  # answers to come, then 200s

    def reply(path: str, body: dict, n: int) -> tuple:
        return plan.pop(0) if plan else (200, {"trace_id": 7, "query": body["query"], "grains": []})

    with json_server(reply) as (url, received):
        started = time.monotonic()
        found = Flux.connect(url, caller="sdk:chat").retrieve("anything")
        assert found.trace_id == 7 and len(received) == 2 and time.monotonic() - started >= 1.9  # waited 2 s
        plan.extend([limited, limited])  # two 429s in a row: with retries=1 the second one is raised
        with pytest.raises(RateLimited) as refused:
            Flux.connect(url, caller="sdk:chat", retries=1).retrieve("again")
        assert refused.value.http_status == 429 and refused.value.details["retry_after"] == 2


def test_the_service_down_names_the_command_that_starts_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    out = subprocess.run([sys.executable, "-m", "flux", "init", "--name", "off", "--yes"], cwd=ROOT, timeout=300,
                         env={**os.environ, "FLUX_HOME": str(home)}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    config = home / "off" / "config.yaml"
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {free_port()}"))
    monkeypatch.setenv("FLUX_HOME", str(home))
    with pytest.raises(ServiceUnavailable) as down:
        Flux.connect("off").health()
    assert "Start it with `flux start --name off`" in down.value.message


def test_the_same_results_as_the_embedded_sdk_on_the_same_data(tmp_path):
    """One memory, copied: the embedded SDK in a subprocess on one copy, the service on the other."""
    script = ("import json, sys; from flux.sdk import Flux; mem = Flux.embedded(sys.argv[1], caller='cmp:chat'); "
              "print(json.dumps([[g.id, g.content] for g in mem.retrieve('What does Lena grow?').grains]))")
    seed = ("import json, sys; from flux.sdk import Flux; mem = Flux.embedded(sys.argv[1], caller='cmp:chat'); "
            "mem.store_batch(json.loads(sys.argv[2]))")
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")}
    run = lambda code, *args: subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,  # noqa: E731
                                             capture_output=True, text=True, timeout=300, check=True).stdout
    import json

    run(seed, str(tmp_path / "a"), json.dumps(FACTS))
    assert (tmp_path / "a" / "flux.sqlite3").stat().st_mode & 0o777 == 0o600  # was the umask's: 0644
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    embedded = json.loads(run(script, str(tmp_path / "a")).strip().splitlines()[-1])
    with flux_server(tmp_path / "b") as (base, _):
        remote = Flux.connect(base, caller="cmp:chat").retrieve("What does Lena grow?").grains
    assert embedded and [[g.id, g.content] for g in remote] == embedded


def test_embedded_refuses_an_instance_whose_service_runs(tmp_path):
    folder = tmp_path / "busy"
    (folder / "run").mkdir(parents=True)
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "fluxsite.asgi:application"],
                                cwd=folder)  # as a REST process of the instance: in its folder
    try:
        (folder / "run" / "rest.pid").write_text(f"{stand_in.pid}\n")
        code = f"from flux.sdk import Flux; Flux.embedded({str(folder)!r})"
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"})
    finally:
        stand_in.kill()
        stand_in.wait()
    assert out.returncode != 0 and "is running" in out.stderr and "Flux.connect('busy')" in out.stderr


def test_the_embedded_sdk_stores_in_the_instances_mode_and_says_what_the_service_says(tmp_path):
    """In flux_extracts mode the embedded SDK stores the facts the LLM finds, as the service does (it stored the
    text as one grain and never asked the LLM); a warning beside a store (the LLM down, the text stored as given)
    reaches the caller as a FluxWarning, embedded or remote."""
    import json

    from flux.sdk import FluxWarning
    from tests.servers import fake_ollama

    facts = ["Nora moved to Oslo in 2021.", "Nora works as a pilot."]
    code = ("import json, sys, warnings; from flux.sdk import Flux\n"
            "mem = Flux.embedded(sys.argv[1], caller='emb:chat')\n"
            "with warnings.catch_warnings(record=True) as said:\n"
            "    warnings.simplefilter('always')\n"
            "    every = mem.store_all('Nora moved to Oslo in 2021 and works as a pilot.')\n"
            "print(json.dumps([every, [g['content'] for g in mem.grains()], [str(w.message) for w in said]]))")
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")}
    reply = {"response": json.dumps({"facts": facts}), "done": True}
    with fake_ollama(lambda body: (200, reply)) as (url, received):
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x")], cwd=ROOT, timeout=300, text=True,
                             capture_output=True, check=True,
                             env={**env, "OPERATING_MODE": "flux_extracts", "OLLAMA_URL": url})
    every, contents, said = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(received) == 1 and sorted(contents) == sorted(facts) and len(every) == 2 and said == []
    down = subprocess.run([sys.executable, "-c", code, str(tmp_path / "y")], cwd=ROOT, timeout=300, text=True,
                          capture_output=True, check=True,
                          env={**env, "OPERATING_MODE": "flux_extracts", "EXTRACT_FALLBACK": "caller_extracts",
                               "OLLAMA_URL": f"http://127.0.0.1:{free_port()}"})
    every, contents, said = json.loads(down.stdout.strip().splitlines()[-1])
    assert contents == ["Nora moved to Oslo in 2021 and works as a pilot."] and "stored as given" in said[0]
    assert len(every) == 1
    # An instance of `flux init`: its config.yaml is the embedded SDK's, as its service's, not the shell's (it
    # stored the text whole in caller_extracts mode, never asking the instance's LLM).
    home = tmp_path / "home"
    made = subprocess.run([sys.executable, "-m", "flux", "init", "--name", "nora", "--mode", "flux_extracts"],
                          cwd=ROOT, env={**env, "FLUX_HOME": str(home)}, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    with fake_ollama(lambda body: (200, reply)) as (url, received):
        (home / "nora" / "config.yaml").write_text((home / "nora" / "config.yaml").read_text()
                                                   + f'OLLAMA_URL: "{url}"\n')
        out = subprocess.run([sys.executable, "-c", code, str(home / "nora")], cwd=ROOT, timeout=300, text=True,
                             capture_output=True, check=True, env={**env, "OPERATING_MODE": "caller_extracts"})
    every, contents, said = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(received) == 1 and sorted(contents) == sorted(facts) and len(every) == 2
    # The remote SDK, from the service's answer (a stand-in for it answering as POST /store does then).
    answer = {"items": [{"grain": {"id": 7}}], "created": 1, "source_id": None,
              "warning": "the LLM is down; the text was stored as given"}
    with json_server(lambda path, body, n: (201, answer)) as (base, _), \
            pytest.warns(FluxWarning, match="stored as given"):
        assert Flux.connect(base, caller="sdk:chat").store_all("a text") == [7]


def test_a_call_may_wait_longer_than_the_clients_own_timeout():
    """A store that may wait on the service's LLM waits for it (the client gave up at its 30 s while the service
    went on, and stored); any other call keeps the client's own bound, and a timeout the SDK's caller sets binds
    stores too (they waited 150 s whatever it said)."""
    from core.client import RestClient
    from tests.servers import raw_http_server

    body = b'{"ok": true}'
    late = [(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
             2.0)]
    with raw_http_server(late) as url:
        client = RestClient(url, timeout=1.0, retries=0)
        with pytest.raises(ServiceUnavailable, match="did not answer within 1 s"):
            client.post("/store", {"content": "x"})
        assert client.post("/store", {"content": "x"}, timeout=10.0) == {"ok": True}
        with pytest.raises(ServiceUnavailable, match="did not answer within 1 s"):  # the SDK's caller set one: kept
            Flux.connect(url, caller="sdk:chat", timeout=1.0, retries=0).store("x")
