"""The dashboard in headless Chromium against an instance run by `flux start` (REST API, dashboard and a
Celery worker with beat, each its own process, on free loopback ports)."""
from __future__ import annotations

import json
import sqlite3
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect, sync_playwright

from core.net import free_port
from tests.flux.test_admin_browser import CHROMIUM_FLAGS
from tests.flux.test_cli import flux
from tests.servers import require_binary

VIEWS = ["/", "/mycelium", "/globe", "/vitals", "/chronicle", "/mobile-preview"]
FACTS = [f"Locker {n} in the north hall holds the {thing}" for n, thing in enumerate(
    ["tent", "stove", "rope", "lantern", "map", "compass", "kettle", "tarp", "axe", "first-aid kit", "radio",
     "snowshoes"], start=1)]
GARDEN = ["Lena grows tomatoes in the greenhouse", "Lena waters the greenhouse tomatoes each morning",
          "The greenhouse tomatoes ripen in July", "Lena picks the ripe tomatoes in July"]
FLAGS = [*CHROMIUM_FLAGS, "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]


def store(rest: str, content: str) -> int:
    request = urllib.request.Request(f"{rest}/store", data=json.dumps({"content": content}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["grain"]["id"]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """The folder of the instance the dashboard shows (``mem``)."""
    return tmp_path_factory.mktemp("browser") / "home"


@pytest.fixture(scope="module")
def running(home):
    """(REST URL, dashboard URL, ids of the stored grains); beat sweeps decay every 2 s."""
    assert flux(home, "init", "--name", "mem", "--yes").returncode == 0
    rest_port, board_port = free_port(), free_port()
    config = home / "mem" / "config.yaml"
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {rest_port}")
                      .replace("# DASHBOARD_PORT: 7462", f"DASHBOARD_PORT: {board_port}")
                      .replace("# MCP_PORT: 7464", f"MCP_PORT: {free_port()}")
                      + "DECAY_INTERVAL_SECONDS: 2\nDASHBOARD_POLL_SECONDS: 0.2\n")
    started = flux(home, "start", "--name", "mem")
    assert started.returncode == 0, started.stderr
    try:
        rest, board = f"http://127.0.0.1:{rest_port}", f"http://127.0.0.1:{board_port}"
        yield rest, board, [store(rest, fact) for fact in FACTS]
    finally:
        flux(home, "stop", "--name", "mem")


@pytest.fixture(scope="module")
def browser():
    chromium = require_binary("/usr/bin/chromium", "Chromium", "apt-get install chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page whose console errors, page errors and requests to any other host than the dashboard's are kept."""

    def __init__(self, browser, board: str) -> None:
        self.page = browser.new_page(viewport={"width": 1200, "height": 800})
        self.errors: list[str] = []
        self.foreign: list[str] = []
        own = urlsplit(board).netloc
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def request(r) -> None:
            where = urlsplit(r.url)
            if where.scheme not in ("data", "about", "blob") and where.netloc != own:
                self.foreign.append(r.url)
        self.page.on("request", request)


@contextmanager
def opened(browser, board: str, path: str, *, live: bool = False) -> Iterator[Watched]:
    """``path`` loaded and drawn (and its live socket connected, with ``live``); no error on it by the end."""
    watched = Watched(browser, board)
    try:
        watched.page.goto(board + path)
        watched.page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        if live:
            expect(watched.page.locator("#live")).to_have_text("live", timeout=10_000)
        yield watched
        assert watched.errors == [] and watched.foreign == []
    finally:
        watched.page.close()


@pytest.mark.parametrize("path", VIEWS)
def test_every_view_loads_without_errors_or_other_hosts(running, browser, path):
    _, board, _ = running
    with opened(browser, board, path) as watched:
        shown = watched.page
        if path == "/mobile-preview":  # the preview frames the Knowledge Graph, which is the live page
            shown = watched.page.frame_locator("#phone-frame")
            expect(shown.locator("body[data-ready='1']")).to_have_count(1, timeout=30_000)
        expect(shown.locator("#live")).to_have_text("live", timeout=10_000)
        watched.page.wait_for_load_state("networkidle", timeout=30_000)  # late requests have gone out


def test_the_graph_shows_the_stored_grains_and_opens_a_dossier_on_click(running, browser):
    _, board, ids = running
    with opened(browser, board, "/") as watched:
        page = watched.page
        assert int(page.get_attribute("#graph", "data-nodes")) == len(ids)
        labels = page.evaluate("() => fluxView.graph.mapNodes((k, a) => [k, a.label])")
        assert sorted(labels) == sorted([f"g{i}", fact] for i, fact in zip(ids, FACTS, strict=False))
        target = ids[3]
        point = page.evaluate("""(key) => {
            const r = fluxView.renderer, a = fluxView.graph.getNodeAttributes(key);
            return r.graphToViewport({x: a.x, y: a.y}); }""", f"g{target}")
        box = page.locator("#graph").bounding_box()
        page.mouse.click(box["x"] + point["x"], box["y"] + point["y"])
        title = page.locator("#dossier-title")
        expect(title).to_have_attribute("data-grain", str(target), timeout=10_000)
        expect(title).to_have_text(FACTS[3])
        assert page.locator("#dossier").is_visible()
        # Its facts, labelled (they showed as "[object HTMLElement],..."), and no "null" for a history of one.
        expect(page.locator("#dossier dl dt")).to_have_count(13)
        expect(page.locator("#dossier dl dd").first).to_have_text(str(target))
        body = page.locator("#dossier").inner_text()
        assert "[object" not in body and "null" not in body, body


def test_a_search_result_opens_its_dossier(running, browser):
    _, board, ids = running
    with opened(browser, board, "/") as watched:
        page = watched.page
        page.fill("#search", "lantern")
        page.click("#search-form button")
        hit = page.locator(f"#search-results li[data-grain='{ids[3]}']")
        expect(hit).to_have_count(1, timeout=10_000)
        hit.click()
        expect(page.locator("#dossier-title")).to_have_attribute("data-grain", str(ids[3]), timeout=10_000)


def test_a_grain_stored_through_rest_appears_on_an_open_chronicle(running, browser):
    rest, board, _ = running
    with opened(browser, board, "/chronicle", live=True) as watched:
        page = watched.page
        content = "The spare canoe paddle hangs behind the boathouse door"
        gid = store(rest, content)
        row = page.locator("#events li[data-kind='grains.grain_stored']", has_text=content)
        expect(row).to_have_count(1, timeout=30_000)  # pushed to the open page: it never reloads
        expect(row.locator("bdi")).to_have_count(1)  # its text isolated: an open right-to-left override stays inside
        assert page.evaluate("(key) => fluxView.graph.hasNode(key)", f"g{gid}")


def test_an_event_committed_after_a_higher_id_still_reaches_the_page(running, browser, home):
    """On PostgreSQL an event's transaction can commit after one with a higher id; the relay sends it late and
    the page shows it (the ids are given here to play that order on the instance's own database)."""
    _, board, _ = running
    rows = "#events li[data-kind='test.order']"
    with opened(browser, board, "/chronicle", live=True) as watched, \
            closing(sqlite3.connect(home / "mem" / "flux.sqlite3", timeout=30, isolation_level=None)) as db:
        page = watched.page

        def write(pk: int) -> None:
            db.execute("INSERT INTO grains_activityevent (id, kind, payload, created_at) "
                       "VALUES (?, 'test.order', '{}', ?)", (pk, datetime.now(UTC).replace(tzinfo=None).isoformat(" ")))

        db.execute("BEGIN IMMEDIATE")
        second = db.execute("SELECT coalesce(max(id), 0) + 2 FROM grains_activityevent").fetchone()[0]
        write(second)  # the next id is left free: the service's own events go above it
        db.execute("COMMIT")
        expect(page.locator(rows)).to_have_count(1, timeout=15_000)
        write(second - 1)
        expect(page.locator(rows)).to_have_count(2, timeout=15_000)
        assert sorted(int(n) for n in page.locator(rows).evaluate_all("(lis) => lis.map((li) => li.dataset.event)")
                      ) == [second - 1, second]


def test_a_decay_sweep_in_the_celery_worker_reaches_the_page(running, browser):
    """Beat runs the sweep in the worker process every 2 s; its event reaches the open page through the
    dashboard's relay of the activity log."""
    _, board, _ = running
    with opened(browser, board, "/chronicle", live=True) as watched:
        page = watched.page
        sweeps = "#events li[data-kind='graph.decay_swept']"
        loaded = page.evaluate(f"() => Math.max(0, ...[...document.querySelectorAll(\"{sweeps}\")]"
                               ".map((li) => Number(li.dataset.event)))")
        page.wait_for_function(f"""(last) => [...document.querySelectorAll("{sweeps}")]
            .some((li) => Number(li.dataset.event) > last)""", arg=loaded, timeout=15_000)
        assert "decay sweep" in page.locator(sweeps).last.inner_text()


def post(rest: str, path: str) -> dict:
    request = urllib.request.Request(f"{rest}{path}", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_each_view_draws_what_the_data_holds(running, browser):
    """Clustered and snapshotted known data: the Mycelium draws every grain and conduit, the Globe every cluster,
    the Vitals a chart per signal with one point per snapshot that has a value."""
    rest, board, _ = running
    for fact in GARDEN:
        store(rest, fact)
    assert post(rest, "/clusters/run")["clusters"] >= 1
    post(rest, "/health/snapshot")
    post(rest, "/health/snapshot")
    with urllib.request.urlopen(f"{board}/api/graph", timeout=30) as response:
        graph = json.loads(response.read())
    with urllib.request.urlopen(f"{rest}/clusters", timeout=30) as response:
        clusters = json.loads(response.read())["clusters"]
    with urllib.request.urlopen(f"{board}/api/vitals", timeout=30) as response:
        vitals = json.loads(response.read())
    assert graph["edges"], "the garden's grains share words: the store linked them"

    with opened(browser, board, "/mycelium") as watched:
        page = watched.page
        assert page.evaluate("() => fluxView.graph.order") == len(graph["nodes"]) >= len(FACTS) + len(GARDEN)
        assert page.evaluate("() => fluxView.graph.size") == len(graph["edges"])
        expect(page.locator("#graph-info")).to_contain_text(f"{len(graph['edges'])} conduits")

    with urllib.request.urlopen(f"{board}/api/clusters", timeout=30) as response:
        globe = json.loads(response.read())  # the clusters, and cluster 0: the grains in none
    assert {c["id"] for c in clusters} | {0} == {c["id"] for c in globe["clusters"]}
    with opened(browser, board, "/globe") as watched:
        assert int(watched.page.get_attribute("#globe", "data-clusters")) == len(clusters) + 1
        expect(watched.page.locator("#globe-info")).to_contain_text(
            f"{len(clusters) + 1} clusters holding {len(graph['nodes'])} grains")

    with opened(browser, board, "/vitals") as watched:
        page = watched.page
        assert len(vitals["snapshots"]) >= 2 and len(vitals["signals"]) == 14
        assert page.locator("section[data-signal]").count() == 14
        drawn = 0
        for signal in vitals["signals"]:
            points = sum(v is not None for v in signal["values"])
            circles = page.locator(f"section[data-signal='{signal['name']}'] circle").count()
            assert circles == points, signal["name"]
            drawn += circles
        assert drawn > 0
