"""flux_bench --health end to end on a tiny instance: GET /health timed at each stage of recorded retrievals."""
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
