"""Store throughput, clustering cost and retrieve latency on N synthetic grains, against FTS5 floors.

Two floors, measured on the same data in the same run: a raw FTS5 BM25 query
over every query term, and Flux's own entry search alone (the rare terms that
retrieval matches, before any propagation).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.db import connection
from django.utils import timezone
from tqdm import tqdm

from bench.instance import temporary_database
from bench.synthetic import Corpus
from core.booth import get_booth
from core.commands import FluxCommand
from core.conf import flux_setting as S
from core.env import postgres_url
from core.net import free_port, wait_for_http
from core.vendor_sql import statistics_refresh
from graph.search import Fts5Search, entry_search
from graph.selectors import RETRIEVABLE
from graph.semantic import semantic_enabled
from memory.retrieval import feedback_record, grain_retrieve, retrieval_warm_up
from memory.store import grain_store, grain_store_batch
from memory.upkeep import ClusterResult, cluster_rebuild

CALLER = "bench:test"  # a client of its own: flux-* names are refused over REST
PAUSE_S = 0.01  # between two timed retrievals over HTTP


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples_ms, n=100, method="inclusive") if len(samples_ms) > 1 else samples_ms * 99
    return {"p50": round(cuts[49], 3), "p95": round(cuts[94], 3), "p99": round(cuts[98], 3),
            "max": round(max(samples_ms), 3)}  # a stop of the whole process (a full collection) shows here


def timed(calls: list[Callable[[], object]], desc: str, between: Callable[[], object] | None = None) -> list[float]:
    """Each call's wall time in ms; ``between`` runs after each, untimed."""
    out = []
    for call in tqdm(calls, desc=desc, unit="q", file=sys.stderr):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
        if between is not None:
            between()
    return out


class Command(FluxCommand):
    help = "Benchmark store throughput and retrieve latency (in-process and HTTP) on N synthetic grains."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--grains", type=int, default=10000, help="grains to load (default 10000)")
        parser.add_argument("--queries", type=int, default=500, help="retrievals to time per method (default 500)")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--keep", metavar="FOLDER", type=Path,
                            help="build the instance in FOLDER and keep it; a later run with the same --grains and "
                                 "--seed measures it again without storing anew (the store figures are the build's)")
        parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
        parser.add_argument("--health", action="store_true",
                            help="instead: GET /health latency as recorded retrievals grow (see --history)")
        parser.add_argument("--history", default="1000,10000,100000",
                            help="with --health: the recorded-retrieval counts to measure at "
                                 "(default 1000,10000,100000)")
        parser.add_argument("--dashboard", action="store_true",
                            help="instead: time to first render of the dashboard's / in headless Chromium as the "
                                 "store grows (see --sizes)")
        parser.add_argument("--sizes", default="1000,10000,100000",
                            help="with --dashboard: the grain counts to measure at (default 1000,10000,100000)")
        parser.add_argument("--loads", type=int, default=3, help="with --dashboard: page loads per size (default 3)")
        parser.add_argument("--chromium", default="/usr/bin/chromium", help="with --dashboard: the browser binary")
        parser.add_argument("--load", type=int, metavar="CLIENTS",
                            help="instead: CLIENTS threads retrieving, then storing, through the REST service at "
                                 "once (keep-alive connections, each its own client), for --seconds each")
        parser.add_argument("--seconds", type=float, default=20.0, help="with --load: seconds per phase (default 20)")
        parser.add_argument("--web-workers", default="1", metavar="N[,N...]",
                            help="with --load: REST processes sharing the port, one run per count (default 1)")

    def handle(self, *args: object, **opts: object) -> None:
        if opts["grains"] < 200 or opts["queries"] < 10:
            raise CommandError("--grains must be at least 200 and --queries at least 10")
        stages = _stages(opts["history"], "--history") if opts["health"] else []
        if opts["load"] is not None and not (1 <= opts["load"] <= 64 and 1 <= opts["seconds"] <= 600):
            raise CommandError("--load takes 1 to 64 client threads and --seconds 1 to 600")
        if connection.vendor != "sqlite" and opts["load"] is None:
            raise CommandError("on PostgreSQL only --load runs (the other benchmarks time SQLite's own search "
                               "beside Flux's); unset DATABASE_URL for them")
        web = _stages(opts["web_workers"], "--web-workers")
        if max(web) > 16:
            raise CommandError("--web-workers takes 1 to 16 processes")
        if opts["dashboard"]:
            sizes = _stages(opts["sizes"], "--sizes")
            if not 1 <= opts["loads"] <= 20:
                raise CommandError("--loads must be between 1 and 20")
            if not Path(opts["chromium"]).exists():
                raise CommandError(f"no browser at {opts['chromium']}: apt-get install chromium, or pass --chromium")
        keep = opts["keep"]
        if keep is not None and (connection.vendor != "sqlite" or opts["load"] is not None or opts["dashboard"]
                                 or opts["health"]):
            raise CommandError("--keep is for the main benchmark on SQLite (not with --load, --dashboard, --health "
                               "or DATABASE_URL)")
        if keep is not None:
            _check_kept(keep, opts["grains"], opts["seed"])
        with temporary_database(keep) as path:
            if opts["load"] is not None:
                result = bench_load(opts["grains"], opts["load"], opts["seconds"], opts["seed"], path.parent, web)
            elif opts["dashboard"]:
                result = bench_dashboard(sizes, opts["loads"], opts["seed"], path.parent, opts["chromium"])
            elif opts["health"]:
                result = bench_health(opts["grains"], stages, opts["queries"], opts["seed"], path.parent)
            else:
                result = bench(opts["grains"], opts["queries"], opts["seed"], path.parent, kept=keep is not None)
        for key, value in result.items():
            self.stdout.write(f"{key:>26}: {value}")
        if opts["json"]:
            self.stdout.write(json.dumps(result))


BUILT = "bench.json"  # in a kept instance's folder: what built it, and the store figures of that build


def _check_kept(folder: Path, n: int, seed: int) -> None:
    """A kept folder must be new, empty, or an instance the benchmark built with the same grains and seed."""
    if not folder.exists() or not any(folder.iterdir()):
        return
    try:
        built = json.loads((folder / BUILT).read_text())
    except (OSError, ValueError):
        raise CommandError(f"--keep {folder}: the folder holds something other than a finished benchmark "
                           "instance; give a new or empty folder") from None
    if (built.get("grains"), built.get("seed"), built.get("semantic")) != (n, seed, semantic_enabled()):
        raise CommandError(f"--keep {folder}: that instance was built with --grains {built.get('grains')} --seed "
                           f"{built.get('seed')}, the semantic entry {'on' if built.get('semantic') else 'off'}; "
                           "run with the same, or give a new folder")


def bench(n: int, q: int, seed: int, folder: Path, *, kept: bool = False) -> dict:
    corpus = Corpus(seed=seed)
    singles = min(500, n // 10)
    grains = list(corpus.grains(n + singles))
    built = folder / BUILT
    fresh = not (kept and built.exists())
    tail = n // 20  # the last 5% of the build: the rate of storing at about n grains, not on the way there
    if not fresh:
        store = json.loads(built.read_text())["store"]
        batch_rate, tail_rate, single_ms = store["batch"], store.get("batch_last"), store["single_ms"]
    else:
        start = time.perf_counter()
        store_synthetic(grains, 0, n - tail, "batch store")
        tail_start = time.perf_counter()
        store_synthetic(grains, n - tail, n, f"batch store from {n - tail:,}")
        batch_rate = n / (time.perf_counter() - start)
        tail_rate = tail / (time.perf_counter() - tail_start) if tail else None
        single_ms = timed([lambda g=g: grain_store(content=g.content, context=g.context, occurred_at=g.occurred_at,
                                                   caller=CALLER) for g in grains[n:]], "single store")
        if kept:
            built.write_text(json.dumps({"grains": n, "seed": seed, "semantic": semantic_enabled(),
                                         "store": {"batch": batch_rate, "batch_last": tail_rate,
                                                   "single_ms": single_ms}}))
    clusters = settled()
    warm_started = time.perf_counter()
    retrieval_warm_up(wait_seconds=1800)  # as a service at start: the mirror, the model, the vector index built
    warm_s = time.perf_counter() - warm_started
    queries = [corpus.query_about(corpus.rng.choice(grains).content) for _ in range(q)]
    now = timezone.now()
    plain, entry = Fts5Search(), entry_search()
    floor = timed([lambda t=t: plain.search(t, limit=10, statuses=RETRIEVABLE, max_terms=S("QUERY_MAX_TERMS"))
                   for t in queries], "FTS5 floor (all terms)")

    def searching(text: str) -> Callable[[], object]:
        return lambda: entry.search(text, limit=S("ENTRY_POINTS"), statuses=RETRIEVABLE,
                                    max_terms=S("QUERY_MAX_TERMS"))

    def retrieving(text: str, **how: object) -> Callable[[], object]:
        return lambda: grain_retrieve(query=text, limit=10, caller=CALLER, enforce_feedback=False, now=now, **how)

    entries = timed([searching(t) for t in queries], "entry search")
    # As the service retrieves: the trace written by the booth's writer after the answer (committed with the
    # traces of the next TRACE_COMMIT_SECONDS), here before the next retrieval starts, so the writer never runs
    # during a timed one (an agent retrieves once a turn; the load test measures retrievals back to back).
    booth = get_booth()
    inproc = timed([retrieving(t, booth=booth) for t in queries], "retrieve in-process", booth.settle)
    # Paced as over HTTP below, PAUSE_S idle after each: a retrieval that follows a pause costs more than one right
    # after another (the CPU's caches cool), so what HTTP adds is measured against this one.
    paced = timed([retrieving(t, booth=booth) for t in queries], "retrieve in-process, paced as over HTTP",
                  lambda: (booth.settle(), time.sleep(PAUSE_S)))
    # The two again, in turn query by query: this machine's speed drifts (by up to 40% between runs minutes
    # apart), and timed in two loops one after the other their ratio moves with it; in turn, both see the same
    # moments.
    turns = timed([call for t in queries for call in (searching(t), retrieving(t, booth=booth))],
                  "entry search and retrieval in turn", booth.settle)
    booth.drain()  # its traces committed: the writes inline below need the database's write lock
    inline = timed([retrieving(t) for t in queries], "retrieve in-process, trace inline")
    bench_mb = _rss_mb(os.getpid())
    http, web_mb = http_latencies(queries, folder)
    figures = {
        "grains": n, "queries": q, "store_from_earlier_build": not fresh,
        "store_batch_grains_per_s": round(batch_rate, 1),
        "store_batch_last_grains_per_s": None if tail_rate is None else round(tail_rate, 1),
        "store_batch_last_from": n - tail,
        "store_single_grains_per_s": round(1000 / statistics.mean(single_ms), 1),
        "store_single_ms": percentiles(single_ms),
        "cluster_rebuild_s": clusters.seconds, "clusters": clusters.clusters, "clustered_grains": clusters.clustered,
        "warm_up_s": round(warm_s, 2), "semantic": semantic_enabled(),
        "fts5_floor_ms": percentiles(floor),
        "entry_search_ms": percentiles(entries),
        "retrieve_inprocess_ms": percentiles(inproc),
        "retrieve_inprocess_trace_inline_ms": percentiles(inline),
        "retrieve_inprocess_paced_ms": percentiles(paced),
        "entry_search_in_turn_ms": percentiles(turns[0::2]),
        "retrieve_inprocess_in_turn_ms": percentiles(turns[1::2]),
        "retrieve_http_ms": percentiles(http),
        "bench_rss_mb": bench_mb, "web_rss_mb": web_mb,
    }
    ratios = [(name, base, name.replace("_ms", suffix)) for name in ("retrieve_inprocess_ms", "retrieve_http_ms")
              for base, suffix in (("fts5_floor_ms", "_to_floor"), ("entry_search_ms", "_to_entry_search"))]
    ratios.append(("retrieve_inprocess_in_turn_ms", "entry_search_in_turn_ms",
                   "retrieve_inprocess_to_entry_search_in_turn"))
    for name, base, ratio in ratios:
        figures[ratio] = {k: round(figures[name][k] / max(figures[base][k], 1e-6), 2) for k in ("p50", "p95", "p99")}
    # What HTTP adds: over HTTP less in-process, both paced alike (percentile by percentile).
    figures["http_adds_ms"] = {k: round(figures["retrieve_http_ms"][k] - figures["retrieve_inprocess_paced_ms"][k], 3)
                               for k in ("p50", "p95")}
    return figures


def _stages(raw: str, option: str) -> list[int]:
    try:
        stages = sorted({int(x) for x in raw.split(",") if x.strip()})
    except ValueError:
        raise CommandError(f"{option} {raw!r}: give counts separated by commas, e.g. 1000,10000") from None
    if not stages or stages[0] < 1 or stages[-1] > 1_000_000:
        raise CommandError(f"{option} {raw!r}: counts must be between 1 and 1,000,000")
    return stages


def settled() -> ClusterResult:
    """What upkeep leaves behind a build, before anything is timed: the clusters made (retrieval then meets cluster
    neighbours, as after a beat run) and, on PostgreSQL, the planner's statistics as autovacuum keeps them (a
    build of a minute outruns it: at 5,000 grains a search took the status index, estimated at 21 grains, and
    read every grain)."""
    clusters = cluster_rebuild()
    statistics_refresh()
    return clusters


def store_synthetic(grains: list, start: int, stop: int, desc: str) -> None:
    """Batch-store grains[start:stop] as the benchmark's caller, with a progress bar."""
    cap = S("MAX_GRAINS_PER_CALL")
    with tqdm(total=stop - start, desc=desc, unit="grain", file=sys.stderr) as bar:
        for i in range(start, stop, cap):
            chunk = grains[i: min(i + cap, stop)]
            grain_store_batch(items=[{"content": g.content, "context": g.context, "occurred_at": g.occurred_at}
                                     for g in chunk], caller=CALLER)
            bar.update(len(chunk))


def bench_dashboard(sizes: list[int], loads: int, seed: int, folder: Path, chromium: str) -> dict:
    """Time to first render of / (navigation start to sigma's first drawn frame) in headless Chromium, at each
    size after a clustering run, as beat leaves the store; also how long GET /api/graph takes and its size."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise CommandError("--dashboard drives Chromium with Playwright: pip install -e '.[test]'") from None
    grains = list(Corpus(seed=seed).grains(sizes[-1]))
    figures: dict = {"first_render_ms": {}}
    stored = 0
    for size in sizes:
        store_synthetic(grains, stored, size, f"storing to {size} grains")
        stored = size
        clusters = settled()
        with serving(folder, app="fluxsite.dashboard_asgi:application", ready="/") as base:
            start = time.perf_counter()
            _get(base + "/api/graph")
            api_ms = (time.perf_counter() - start) * 1000
            # Playwright's sync API runs an event loop in this thread: no database access inside this block.
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, headless=True, args=[
                    "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                    "--disable-background-networking"])
                renders, nodes, mode = [], 0, ""
                for _ in tqdm(range(loads), desc=f"loading / at {size} grains", unit="load", file=sys.stderr):
                    page = browser.new_page(viewport={"width": 1280, "height": 800})
                    page.goto(base + "/")
                    page.wait_for_selector("body[data-ready='1']", timeout=120_000)
                    renders.append(page.evaluate("() => window.fluxFirstRender"))
                    nodes = int(page.get_attribute("#graph", "data-nodes"))
                    mode = page.get_attribute("#graph", "data-mode")
                    page.close()
                browser.close()
        figures["first_render_ms"][size] = {
            "median": round(statistics.median(renders), 1), "max": round(max(renders), 1),
            "api_graph_ms": round(api_ms, 1), "mode": mode, "nodes_drawn": nodes, "clusters": clusters.clusters}
    return figures


def bench_health(n: int, stages: list[int], q: int, seed: int, folder: Path) -> dict:
    """GET /health latency over HTTP after each stage of recorded retrievals (a quarter of them rated)."""
    corpus = Corpus(seed=seed)
    grains = list(corpus.grains(n))
    store_synthetic(grains, 0, n, "storing grains")
    settled()
    figures: dict = {"grains": n, "health_ms": {}}
    done = 0
    with serving(folder) as base:
        for stage in stages:
            with tqdm(total=stage - done, desc=f"recording retrievals to {stage}", unit="q", file=sys.stderr) as bar:
                while done < stage:
                    found = grain_retrieve(query=corpus.query_about(corpus.rng.choice(grains).content), limit=5,
                                           caller=CALLER, enforce_feedback=False)
                    if done % 4 == 0 and found.grains:
                        feedback_record(trace_id=found.trace_id, grain_id=found.grains[0].id, useful=done % 8 == 0,
                                        caller=CALLER)
                    done += 1
                    bar.update(1)
            figures["health_ms"][stage] = percentiles(timed([lambda: _get(base + "/health")] * q,
                                                            f"GET /health at {stage} retrievals"))
    return figures


def bench_load(n: int, clients: int, seconds: float, seed: int, folder: Path, web: list[int]) -> dict:
    """``clients`` threads, each its own client on a keep-alive connection, retrieving for ``seconds``, then
    storing for ``seconds``, against the REST service on the benchmark's database (request rates unlimited),
    run by each number of processes in ``web`` in turn."""
    corpus = Corpus(seed=seed)
    grains = list(corpus.grains(n))
    store_synthetic(grains, 0, n, "batch store")
    settled()
    queries = [corpus.query_about(corpus.rng.choice(grains).content) for _ in range(2000)]
    figures: dict = {"grains": n, "clients": clients, "seconds": seconds, "database": connection.vendor}
    unlimited = {"RATE_RETRIEVE": "100000000/m", "MAX_GRAINS_PER_MINUTE": "100000000"}
    for processes in web:
        run: dict = {}
        with serving(folder, env=unlimited, processes=processes) as base:
            port = int(base.rsplit(":", 1)[1])
            for _ in range(processes * 4):  # each process's warm-up done (connections are spread by the kernel)
                _post(base, "/retrieve", {"query": queries[0], "limit": 10})
            for phase, path in (("retrieve", "/retrieve"), ("store", "/store")):
                def body(i: int, phase: str = phase, processes: int = processes) -> dict:
                    if phase == "retrieve":
                        return {"query": queries[i % len(queries)], "limit": 10}
                    return {"content": f"{corpus.rng.choice(grains).content} (load {processes}-{i})",
                            "context": f"load-{i % 50}"}

                latencies, failures = _hammer(port, path, body, clients, seconds)
                run[phase] = {"per_s": round(len(latencies) / seconds, 1), "answered": len(latencies),
                              "failed": failures, "ms": percentiles(latencies) if len(latencies) > 1 else None}
        figures[f"web_workers_{processes}"] = run
    return figures


def _hammer(port: int, path: str, body: Callable[[int], dict], clients: int,
            seconds: float) -> tuple[list[float], int]:
    """Each client thread sends requests back to back until ``seconds`` have passed (at most 100,000 each)."""
    import threading

    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(k: int) -> None:
        import http.client

        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(100_000):
            if time.monotonic() >= deadline:
                break
            start = time.perf_counter()
            try:
                connection.request("POST", path, json.dumps(body(k * 100_000 + i)), {
                    "Content-Type": "application/json", "X-Caller-Id": f"bench-{k}:test"})
                response = connection.getresponse()
                response.read()
                ok = response.status < 300
            except OSError:
                connection.close()
                ok = False
            with lock:
                if ok:
                    latencies.append((time.perf_counter() - start) * 1000)
                else:
                    failures[0] += 1
        connection.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in tqdm(threads, desc=f"{clients} clients on {path} for {seconds:g} s", unit="client",
                       file=sys.stderr):
        thread.join()
    return latencies, failures[0]


def _post(base: str, path: str, body: dict) -> None:
    """POST ``body`` as JSON to ``base + path`` as the benchmark's caller."""
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-Caller-Id": CALLER})
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()


def _get(url: str) -> None:
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()


@contextmanager
def serving(folder: Path, app: str = "fluxsite.asgi:application", ready: str = "/health",
            env: dict[str, str] | None = None, processes: int = 1,
            pids: list[int] | None = None) -> Iterator[str]:
    """The REST service (or ``app``) as `flux start` runs it (fluxsite/serve.py) on the benchmark's database, on
    a free loopback port, with ``env`` added to its environment; ``processes`` of them share the port (as
    WEB_WORKERS does); yields its base URL (and puts their process ids in ``pids``)."""
    port = free_port()
    env = {**os.environ, "FLUX_DATA_DIR": str(folder), "FEEDBACK_ENFORCEMENT_ENABLED": "false", **(env or {})}
    if connection.vendor == "postgresql":  # the benchmark's temporary database, on the server of DATABASE_URL
        env["DATABASE_URL"] = postgres_url(connection.settings_dict, with_password=True)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    shared = ["--reuse-port"] if processes > 1 else []
    logs = [folder / f"web-{i}.log" for i in range(processes)]  # what a server that fails to start said
    procs = []
    for log in logs:
        with log.open("wb") as out:
            procs.append(subprocess.Popen([sys.executable, "-m", "fluxsite.serve", "-b", "127.0.0.1", "-p", str(port),
                                           *shared, app], cwd=settings.BASE_DIR, env=env, stdout=out,
                                          stderr=subprocess.STDOUT))
    base = f"http://127.0.0.1:{port}"
    if pids is not None:
        pids.extend(proc.pid for proc in procs)
    try:
        for proc, log in zip(procs, logs, strict=True):
            try:
                wait_for_http(base + ready, proc=proc)
            except (RuntimeError, TimeoutError) as exc:
                said = log.read_text(errors="replace").strip().splitlines()[-15:]
                raise CommandError(f"{exc}; its last words ({log}):\n" + "\n".join(said)) from None
        yield base
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def http_latencies(queries: list[str], folder: Path) -> tuple[list[float], float | None]:
    """Time POST /retrieve against the REST service on the benchmark's database, one client on one keep-alive connection
    (as the SDK's), pausing PAUSE_S between requests (the service writes the last trace meanwhile, as between an
    agent's turns); also the service's resident memory (MB) afterwards."""
    import http.client

    pids: list[int] = []
    with serving(folder, pids=pids) as base:
        client = http.client.HTTPConnection(base.removeprefix("http://"), timeout=60)

        def ask(text: str) -> None:
            client.request("POST", "/retrieve", json.dumps({"query": text, "limit": 10}),
                           {"Content-Type": "application/json", "X-Caller-Id": CALLER})
            response = client.getresponse()
            response.read()
            if response.status != 200:
                raise CommandError(f"POST /retrieve answered {response.status}")

        for text in queries[:5]:  # untimed: the service loads what it keeps in memory at start
            ask(text)
        try:
            return (timed([lambda t=t: ask(t) for t in queries], "retrieve over HTTP", lambda: time.sleep(PAUSE_S)),
                    _rss_mb(pids[0]))
        finally:
            client.close()


def _rss_mb(pid: int | None) -> float | None:
    """Resident memory of process ``pid`` in MB (Linux; None elsewhere)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, TypeError):
        return None
    kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), None)
    return None if kb is None else round(kb / 1024, 1)
