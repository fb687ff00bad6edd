"""flux_bench end to end on tiny instances: the store and retrieval figures (in-process and over HTTP), GET
/health at each stage of recorded retrievals, and the dashboard's first render at each size."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def flux_bench(*args: str, data_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FLUX_DATA_DIR": str(data_dir)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run([sys.executable, "manage.py", "flux_bench", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_benchmark_measures_store_and_retrieval_in_process_and_over_http(tmp_path):
    out = flux_bench("--grains", "200", "--queries", "10", "--json", data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["grains"] == 200 and result["store_batch_grains_per_s"] > 0
    assert result["store_batch_last_from"] == 190 and result["store_batch_last_grains_per_s"] > 0  # its last 5%
    for figure in ("fts5_floor_ms", "entry_search_ms", "retrieve_inprocess_ms", "retrieve_inprocess_trace_inline_ms",
                   "retrieve_http_ms", "entry_search_in_turn_ms", "retrieve_inprocess_in_turn_ms",
                   "retrieve_inprocess_paced_ms"):
        assert 0 < result[figure]["p50"] <= result[figure]["p99"] <= result[figure]["max"], figure
    in_turn = result["retrieve_inprocess_in_turn_ms"]["p50"] / result["entry_search_in_turn_ms"]["p50"]
    assert result["retrieve_inprocess_to_entry_search_in_turn"]["p50"] == round(in_turn, 2)
    added = result["retrieve_http_ms"]["p50"] - result["retrieve_inprocess_paced_ms"]["p50"]
    assert result["http_adds_ms"]["p50"] == round(added, 3)
    assert result["web_rss_mb"] > 20 and result["bench_rss_mb"] > 20


def test_a_kept_instance_is_measured_again_without_storing_anew(tmp_path):
    kept = tmp_path / "kept"
    first = flux_bench("--grains", "200", "--queries", "10", "--keep", str(kept), "--json", data_dir=tmp_path)
    assert first.returncode == 0, first.stderr
    again = flux_bench("--grains", "200", "--queries", "10", "--keep", str(kept), "--json", data_dir=tmp_path)
    assert again.returncode == 0, again.stderr
    before, after = (json.loads(out.stdout.strip().splitlines()[-1]) for out in (first, again))
    assert not before["store_from_earlier_build"] and after["store_from_earlier_build"]
    for figure in ("store_batch_grains_per_s", "store_batch_last_grains_per_s"):
        assert after[figure] == before[figure] > 0
    assert "batch store" not in again.stderr  # nothing stored the second time
    assert after["clustered_grains"] == before["clustered_grains"] == 220  # the same grains, not twice as many
    other = flux_bench("--grains", "300", "--keep", str(kept), data_dir=tmp_path)
    assert other.returncode == 1 and "built with --grains 200" in other.stderr and "Traceback" not in other.stderr


def test_health_benchmark_times_get_health_at_each_stage(tmp_path):
    out = flux_bench("--grains", "200", "--queries", "10", "--health", "--history", "20,60", "--json",
                     data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(result["health_ms"]) == {"20", "60"}
    assert all(0 < result["health_ms"][k]["p50"] <= result["health_ms"][k]["p99"] for k in ("20", "60"))
    assert "recording retrievals to 60" in out.stderr


def test_a_bad_history_is_explained_without_a_traceback(tmp_path):
    out = flux_bench("--health", "--history", "ten", data_dir=tmp_path)
    assert out.returncode == 1 and "--history 'ten'" in out.stderr and "Traceback" not in out.stderr


def test_dashboard_benchmark_times_the_first_render_at_each_size(tmp_path):
    from tests.servers import require_binary

    chromium = require_binary("/usr/bin/chromium", "Chromium", "apt-get install chromium")
    out = flux_bench("--dashboard", "--sizes", "50,250", "--loads", "1", "--chromium", chromium, "--json",
                     data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])["first_render_ms"]
    assert set(result) == {"50", "250"}
    assert [result[k]["nodes_drawn"] for k in ("50", "250")] == [50, 250]
    assert all(result[k]["mode"] == "grains" and result[k]["median"] > 0 for k in ("50", "250"))
    assert "loading / at 250 grains" in out.stderr


def test_bad_dashboard_benchmark_options_are_explained(tmp_path):
    for args, text in ((["--sizes", "many"], "--sizes 'many'"), (["--loads", "0"], "--loads must be between"),
                       (["--chromium", str(tmp_path / "none")], "no browser at")):
        out = flux_bench("--dashboard", *args, data_dir=tmp_path)
        assert out.returncode == 1 and text in out.stderr and "Traceback" not in out.stderr


def test_load_benchmark_drives_the_rest_service_with_concurrent_clients(tmp_path):
    out = flux_bench("--grains", "200", "--queries", "10", "--load", "3", "--seconds", "2", "--json",
                     data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["clients"] == 3 and result["database"] == "sqlite"
    for phase, run in result["web_workers_1"].items():
        assert run["answered"] > 3 and run["failed"] == 0, (phase, run)
        assert run["per_s"] > 0 and 0 < run["ms"]["p50"] <= run["ms"]["p99"]
    bad = flux_bench("--load", "0", data_dir=tmp_path)
    assert bad.returncode != 0 and "--load takes 1 to 64" in bad.stderr and "Traceback" not in bad.stderr
    many = flux_bench("--load", "2", "--web-workers", "1,17", data_dir=tmp_path)
    assert many.returncode != 0 and "1 to 16 processes" in many.stderr and "Traceback" not in many.stderr
