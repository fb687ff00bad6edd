"""DATABASE_URL selects PostgreSQL: it migrates, and store / retrieve / feedback work there."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from graph.semantic import semantic_installed
from tests.servers import SEMANTIC_MISSING, postgres_server, require

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json, os, django
    os.environ["DJANGO_SETTINGS_MODULE"] = "fluxsite.settings"
    django.setup()
    from django.db import connection
    from memory.store import grain_store
    from graph.services import feedback_record, grain_retrieve
    for text in ["Alice adopted a greyhound named Pixel", "She walks him along the canal",
                 "The canal floods in November"]:
        grain_store(content=text, context="walks")
    from graph.semantic import semantic_enabled
    meaning = grain_retrieve(query="a dog joined the household") if semantic_enabled() else None  # no word shared
    from core.booth import get_booth
    from graph.models import Trace
    found = grain_retrieve(query="greyhound", booth=get_booth())  # as the service: its trace id reserved ahead
    feedback_record(trace_id=found.trace_id, grain_id=found.grains[-1].id, useful=True)  # waits for the trace
    inline = grain_retrieve(query="canal")  # the sequence's next id, never one of the reserved ones
    reserved = [found.trace_id, inline.trace_id, Trace.objects.filter(pk=found.trace_id).exists()]
    taught = grain_retrieve(query="greyhound walks flooding")
    for g in taught.grains:
        feedback_record(trace_id=taught.trace_id, grain_id=g.id, useful=g.content.startswith("The canal"))
    from graph.models import RankerWeight
    cue = grain_retrieve(query="flooding")  # a word only the canal grain's learned cues hold
    print(json.dumps({"vendor": connection.vendor, "hops": [g.hops for g in found.grains],
                      "ranker_weights": RankerWeight.objects.count(), "cue": [g.content for g in cue.grains],
                      "semantic": meaning and meaning.grains[0].content, "reserved": reserved}))
""")


def test_postgres_migrates_and_serves_the_core_services():
    with postgres_server() as url:
        # The instance's defaults: semantic entry on where the extra is installed (in CI it is).
        env = {**os.environ, "DATABASE_URL": url, "SEMANTIC_ENTRY": "auto"}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=300)
        assert migrate.returncode == 0, migrate.stderr
        out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["vendor"] == "postgresql"
        assert result["hops"][0] == 0 and max(result["hops"]) >= 1
        assert result["ranker_weights"] > 0  # pairs of useful and not-useful grains taught the ranker
        assert result["cue"][0] == "The canal floods in November"  # found by a word feedback taught it
        booth_trace, inline_trace, written = result["reserved"]
        assert written and inline_trace > booth_trace
        require(semantic_installed(), SEMANTIC_MISSING)  # part of the default install
        assert result["semantic"] == "Alice adopted a greyhound named Pixel"
