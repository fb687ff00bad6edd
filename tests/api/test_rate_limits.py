"""Request-rate limits: per client on the REST API, per address on the dashboard's data and the admin's login
link; 429 with Retry-After in the error contract; shared by the instance's processes (Redis, or the instance's
SQLite cache file)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from django.core.cache import cache
from django.test import Client

from tests.servers import flux_server, redis_server
from tests.windows import in_one_window, ratelimit_window


def limited(response) -> bool:
    """A 429 in the error contract, with a Retry-After within the minute."""
    if response.status_code != 429:
        return False
    body = response.json()["error"]
    return body["code"] == "rate_limited" and 1 <= int(response["Retry-After"]) <= 61 and "RATE_" in body["message"]


def counted(key: str, burst):
    """``burst()`` from a fresh count, in one window of ``key`` (the client or address it counts against)."""
    def fresh(attempt: int):
        cache.clear()
        return burst()

    return in_one_window(fresh, ratelimit_window(lambda attempt: key))


def test_retrievals_are_limited_per_client(api, flux_settings):
    flux_settings(RATE_RETRIEVE="3/m")
    asks = counted("client:busy", lambda: [
        *[api.post("/retrieve", {"query": "tomatoes"}, caller="busy:chat") for _ in range(4)],
        api.post("/retrieve", {"query": "tomatoes"}, caller="busy:other-role"),
        api.post("/retrieve", {"query": "tomatoes"}, caller="calm:chat")])
    assert [r.status_code for r in asks[:3]] == [200] * 3 and limited(asks[3])
    assert asks[3].json()["error"]["details"]["setting"] == "RATE_RETRIEVE"
    assert asks[4].status_code == 429  # the same client in another role
    assert asks[5].status_code == 200  # another client


def test_feedback_is_limited_per_client(api, flux_settings):
    flux_settings(RATE_FEEDBACK="2/m")
    stored = api.post("/store", {"content": "Lena grows tomatoes in the greenhouse"}, caller="busy:chat").json()
    trace = api.post("/retrieve", {"query": "Lena tomatoes"}, caller="busy:chat").json()["trace_id"]
    other = api.post("/retrieve", {"query": "Lena tomatoes"}, caller="calm:chat").json()["trace_id"]
    rate = {"trace_id": trace, "grain_id": stored["grain"]["id"], "useful": True}
    answers = counted("client:busy", lambda: [
        *[api.post("/feedback", rate, caller="busy:chat") for _ in range(3)],
        api.post("/feedback", {**rate, "trace_id": other}, caller="calm:chat")])
    assert [r.status_code for r in answers[:2]] == [202, 202] and limited(answers[2])
    assert answers[3].status_code == 202


def test_listings_are_limited_per_client(api, flux_settings):
    flux_settings(RATE_LISTING="2/m")
    reads = counted("client:busy", lambda: [
        *[api.client.get(path, HTTP_X_CALLER_ID="busy:chat") for path in ("/grains", "/clusters", "/dreams")],
        api.client.get("/relations", HTTP_X_CALLER_ID="calm:chat"),
        api.get("/callers")])  # no caller named: counted by address, apart from both
    assert [r.status_code for r in reads[:2]] == [200, 200] and limited(reads[2])
    assert [r.status_code for r in reads[3:]] == [200, 200]


@pytest.mark.urls("dashboard.urls")
def test_the_dashboard_search_and_activity_are_limited_per_address(db, flux_settings):
    flux_settings(RATE_DASHBOARD="3/m")
    here, there = Client(REMOTE_ADDR="127.0.0.1"), Client(REMOTE_ADDR="::1")
    answers = counted("ip:127.0.0.1", lambda: [
        *[here.get(url) for url in ("/api/search?q=tomato", "/api/activity", "/api/search?q=x", "/api/activity")],
        there.get("/api/search?q=tomato"), here.get("/api/graph")])
    assert [r.status_code for r in answers[:3]] == [200] * 3 and limited(answers[3])
    assert answers[4].status_code == 200  # another address
    assert answers[5].status_code == 200  # the graph and pages are not counted


def test_the_admin_login_link_is_limited_per_address(db, flux_settings):
    flux_settings(RATE_LOGIN_LINK="2/m")
    here, there = Client(REMOTE_ADDR="127.0.0.1"), Client(REMOTE_ADDR="::1")
    tries = counted("ip:127.0.0.1", lambda: [
        *[here.get("/admin/login-link/guess-" + str(i)) for i in range(3)], there.get("/admin/login-link/guess")])
    assert [r.status_code for r in tries[:2]] == [403, 403]  # a bad link, refused on its merits
    assert tries[2].status_code == 429 and int(tries[2]["Retry-After"]) >= 1
    assert "RATE_LOGIN_LINK" in tries[2].content.decode()
    assert tries[3].status_code == 403


def retrieve(base: str, caller: str) -> tuple[int, str | None]:
    request = urllib.request.Request(base + "/retrieve", data=json.dumps({"query": "tomatoes"}).encode(),
                                     headers={"Content-Type": "application/json", "X-Caller-Id": caller})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, None
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Retry-After")


def _shared_by_two_processes(tmp_path, **env: str) -> None:
    """Five retrievals of the minute through one process and the other, then one more in each: refused in both."""
    def burst(attempt: int) -> list[tuple[int, str | None]]:
        busy = f"busy{attempt}:chat"
        answers = [retrieve(first, busy) for _ in range(3)] + [retrieve(second, busy) for _ in range(2)]
        return [*answers, retrieve(second, busy), retrieve(first, busy), retrieve(second, f"calm{attempt}:chat")]

    with flux_server(tmp_path / "inst", RATE_RETRIEVE="5/m", **env) as (first, _), \
            flux_server(tmp_path / "inst", RATE_RETRIEVE="5/m", **env) as (second, _):
        answers = in_one_window(burst, ratelimit_window(lambda attempt: f"client:busy{attempt}"))
    assert [status for status, _ in answers] == [200] * 5 + [429, 429, 200]
    assert 1 <= int(answers[5][1]) <= 60


def test_request_rates_are_shared_by_two_processes_on_redis(tmp_path):
    with redis_server() as url:
        _shared_by_two_processes(tmp_path, REDIS_URL=url)


def test_request_rates_are_shared_by_two_processes_without_redis(tmp_path):
    _shared_by_two_processes(tmp_path)
