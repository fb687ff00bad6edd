"""The bridge's pieces in-process: the REST client's failures, caller identity, the vocabularies.

No database: these tests only read settings and talk to loopback sockets.
"""
from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from core.errors import FeedbackOwed, FluxError
from core.net import free_port
from grains.callers import CALLER_ROLES
from grains.models import Provenance, Status
from mcp_bridge import server
from mcp_bridge.client import FluxClient, rest_base_url
from mcp_bridge.identity import ROLES, resolve_caller
from tests.servers import fake_ollama


def test_vocabularies_match_the_service() -> None:
    assert list(ROLES) == CALLER_ROLES
    assert list(get_args(server.Provenance)) == [p.value for p in Provenance]
    assert list(get_args(server.Status)) == [s.value for s in Status]


@pytest.mark.parametrize(("host", "url"), [("127.0.0.1", "http://127.0.0.1:7465"), ("0.0.0.0", "http://127.0.0.1:7465"),
                                           ("::", "http://127.0.0.1:7465"), ("::1", "http://[::1]:7465"),
                                           ("localhost", "http://localhost:7465")])
def test_base_url_from_settings(flux_settings, host: str, url: str) -> None:
    flux_settings(REST_HOST=host, REST_PORT=7465)
    assert rest_base_url() == url


@pytest.mark.parametrize(("arguments", "caller"), [
    ({}, None),
    ({"caller_id": "codex:chat"}, ("codex", "chat")),
    ({"client": "codex", "role": "memory_writer"}, ("codex", "memory_writer")),
])
def test_caller_forms(arguments: dict, caller: tuple[str, str] | None) -> None:
    assert resolve_caller(**arguments) == caller


@pytest.mark.parametrize(("arguments", "says"), [
    ({"caller_id": "codex"}, "not of the form 'client:role'"),
    ({"caller_id": "a:b:c"}, "not of the form 'client:role'"),
    ({"caller_id": ":chat"}, "names no client"),
    ({"caller_id": "codex:boss"}, "role 'boss' is not one of chat"),
    ({"client": "codex"}, "role is missing"),
    ({"role": "chat"}, "client is missing"),
    ({"caller_id": "codex:chat", "role": "chat"}, "not both"),
])
def test_bad_callers_are_refused_with_the_accepted_forms(arguments: dict, says: str) -> None:
    with pytest.raises(FluxError) as refused:
        resolve_caller(**arguments)
    assert refused.value.code == "invalid_input" and says in refused.value.message


def test_down_names_the_generic_start_command(settings, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path
    port = free_port()
    with pytest.raises(FluxError) as down:
        FluxClient(f"http://127.0.0.1:{port}").health()
    assert down.value.code == "service_unavailable" and down.value.http_status is None
    assert down.value.message == (f"Flux Memory is not running at http://127.0.0.1:{port} (connection refused). "
                                  "Start it with `flux start --name <instance>` (or `scripts/run` in a checkout), "
                                  "then retry.")


def test_down_names_the_instance_of_this_environment(settings, tmp_path: Path) -> None:
    """`flux mcp --name mem` runs the bridge with FLUX_DATA_DIR set to the instance folder."""
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / "config.yaml").write_text("OPERATING_MODE: caller_extracts\n")
    settings.DATA_DIR = tmp_path / "mem"
    with pytest.raises(FluxError) as down:
        FluxClient(f"http://127.0.0.1:{free_port()}").retrieve("dog")
    assert "Start it with `flux start --name mem`, then retry." in down.value.message


def test_another_program_on_the_port_is_named() -> None:
    with fake_ollama(lambda body: (200, {})) as (url, _received):
        with pytest.raises(FluxError) as wrong:
            FluxClient(url).store("a fact")  # it answers 404 {"error": "not found"}: not Flux's error shape
    assert wrong.value.code == "bad_response" and wrong.value.http_status == 404
    assert "not Flux Memory's REST API" in wrong.value.message and "REST_PORT" in wrong.value.message


def test_tool_error_text_carries_code_hint_and_details() -> None:
    owed = FeedbackOwed("pytest:chat owes feedback on 1 retrieved grain(s)",
                        details={"owed": [{"trace_id": 3, "grain_id": 7}]})
    owed.http_status = 409
    message = str(server.tool_error(owed))
    assert message.startswith("feedback_owed (HTTP 409): pytest:chat owes feedback")
    assert "flux_feedback(trace_id, grain_id, useful)" in message
    assert 'details: {"owed": [{"grain_id": 7, "trace_id": 3}]}' in message


def test_onboarding_follows_the_operating_mode(flux_settings) -> None:
    flux_settings(OPERATING_MODE="flux_extracts")
    guide = server.FluxTools(FluxClient("http://127.0.0.1:9")).flux_onboard()
    assert "Operating mode of this instance: `flux_extracts`" in guide and "extracts the atomic facts" in guide
    steps = [line[:3] for line in guide.splitlines() if line[:3] in ("1. ", "2. ", "3. ", "4. ")]
    assert steps == ["1. ", "2. ", "3. ", "4. "]
