"""The in-process SDK, used exactly as the README shows, in a fresh process and instance."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import json, sys
    from flux.sdk import Flux

    mem = Flux.embedded(sys.argv[1], caller="sdk-test:test")
    gid = mem.store("Paris is the capital of France", provenance="user_stated")
    mem.store("The Louvre in Paris holds the Mona Lisa", context="trip")
    found = mem.retrieve("Paris capital")
    mem.feedback(found.trace_id, found.grains[0].id, useful=True)
    again = mem.store("paris is the capital of france")
    listed = mem.grains(status="active")
    print(json.dumps({"gid": gid, "again": again, "top": found.grains[0].id,
                      "listed": [g["id"] for g in listed], "useful": listed[-1]["useful_count"]}))
""")


def run_sdk(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "instance")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_sdk_stores_retrieves_rates_and_lists(tmp_path):
    result = run_sdk(tmp_path)
    assert result["again"] == result["gid"] == result["top"]
    assert sorted(result["listed"]) == [1, 2]
    assert result["useful"] == 1
    assert (tmp_path / "instance" / "flux.sqlite3").exists()
