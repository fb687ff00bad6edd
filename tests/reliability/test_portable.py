"""`flux export` / `flux import`: a memory with every kind of record goes SQLite -> PostgreSQL -> SQLite and each
export is the same file; an import is all or nothing, into an empty memory only."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reliability.test_background import run
from tests.servers import ROOT, postgres_server

pytestmark = pytest.mark.slow  # a PostgreSQL cluster and several Django processes

# Grains in two contexts, retrieved and rated, clustered and dreamt of, related, corrected, one purged: every
# record the export carries, made by the services themselves.
MAKE = """
from memory.store import grain_store_batch
from memory.retrieval import grain_retrieve, feedback_record
from memory.upkeep import cluster_rebuild
from memory.dreaming import dream_run
from memory.corrections import relation_assert, grain_confidence_set
from memory.forgetting import grain_purge
garden = ["Lena grows tomatoes in the greenhouse", "Lena waters the greenhouse tomatoes each morning",
          "The greenhouse tomatoes ripen in July", "Lena picks the ripe tomatoes in July"]
grains = [r.grain for r in grain_store_batch(items=[{"content": c, "context": "garden"} for c in garden],
                                             caller="lena:memory_writer")]
more = [r.grain for r in grain_store_batch(items=[{"content": "Omar moved to Vienna in 2021", "context": "omar"},
                                                  {"content": "Omar lives in Graz now", "context": "omar"}])]
found = grain_retrieve(query="greenhouse tomatoes", caller="agent:chat")
feedback_record(trace_id=found.trace_id, grain_id=found.grains[0].id, useful=True, caller="agent:chat")
feedback_record(trace_id=found.trace_id, grain_id=found.grains[1].id, useful=False, caller="agent:chat")
assert cluster_rebuild().clusters >= 1
assert dream_run().accepted
relation_assert(source_id=more[1].pk, target_id=more[0].pk, kind="supersedes", caller="agent:chat")
grain_confidence_set(grain_id=grains[2].pk, confidence=0.4, reason="checked by hand", actor="operator:admin")
grain_purge(grain_id=grains[3].pk, reason="asked to forget", actor="operator:admin")
"""


def cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {**{k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")},
               "FLUX_HOME": str(home), **env}
    return subprocess.run([sys.executable, "-m", "flux", *args], cwd=ROOT, env=environ, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_a_memory_goes_to_postgresql_and_back_with_nothing_lost(tmp_path):
    home = tmp_path / "home"
    assert cli(home, "init", "--name", "lite", "--yes").returncode == 0
    run(home / "lite", MAKE)
    first, second, third = (tmp_path / f"{n}.jsonl" for n in ("first", "second", "third"))
    out = cli(home, "export", "--name", "lite", "--to", str(first))
    assert out.returncode == 0 and "Exported" in out.stdout, out.stderr
    text = first.read_text()
    for model in ("grains.grain", "grains.confidenceevent", "graph.conduit", "grains.tombstone", "grains.caller",
                  "grains.auditevent", "dreams.dream", "graph.feedback"):
        assert f'"model": "{model}"' in text, model
    with postgres_server() as url:
        assert cli(home, "init", "--name", "pg", "--yes", DATABASE_URL=url).returncode == 0
        out = cli(home, "import", "--name", "pg", str(first), DATABASE_URL=url)
        assert out.returncode == 0 and "Imported" in out.stdout, out.stderr
        # The planner knows the imported tables at once (autovacuum never analyzes one of fewer than 50 rows).
        known = run(home / "pg", "from django.db import connection; c = connection.cursor(); c.execute(\"SELECT "
                                 "count(DISTINCT tablename) FROM pg_stats WHERE tablename IN ('grains_grain', "
                                 "'grain_fts_postings', 'graph_conduit')\"); print(c.fetchone()[0])", DATABASE_URL=url)
        assert known.strip().splitlines()[-1] == "3"
        assert cli(home, "export", "--name", "pg", "--to", str(second), DATABASE_URL=url).returncode == 0
        again = cli(home, "import", "--name", "pg", str(first), DATABASE_URL=url)
        assert again.returncode == 1 and "this memory is not empty" in again.stderr
        # The sequences continue past the imported ids: the next grain stored on PostgreSQL gets a new one.
        stored = run(home / "pg", "from memory.store import grain_store; print(grain_store(content='A new "
                                  "grain after the import').grain.pk)", DATABASE_URL=url)
        assert int(stored.strip().splitlines()[-1]) > text.count('"model": "grains.grain"')
    assert second.read_text() == text, "SQLite -> PostgreSQL changed the memory"
    assert cli(home, "init", "--name", "back", "--yes").returncode == 0
    assert cli(home, "import", "--name", "back", str(second)).returncode == 0
    assert cli(home, "export", "--name", "back", "--to", str(third)).returncode == 0
    assert third.read_text() == text, "PostgreSQL -> SQLite changed the memory"
    # The memory works where it arrived: its words are found.
    found = run(home / "back", "from memory.retrieval import grain_retrieve; "
                               "print(grain_retrieve(query='greenhouse tomatoes ripen').grains[0].content)")
    assert "tomatoes" in found


def test_an_import_is_all_or_nothing_and_refuses_what_is_not_an_export(tmp_path):
    home = tmp_path / "home"
    assert cli(home, "init", "--name", "lite", "--yes").returncode == 0
    run(home / "lite", MAKE)
    good = tmp_path / "good.jsonl"
    assert cli(home, "export", "--name", "lite", "--to", str(good)).returncode == 0
    lines = good.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    cut = '{"model": "grains.grain", "pk": 1, "fields": {"content": 5'
    broken.write_text("\n".join([*lines[:-3], cut, *lines[-2:]]) + "\n")
    assert cli(home, "init", "--name", "empty", "--yes").returncode == 0
    out = cli(home, "import", "--name", "empty", str(broken))
    assert out.returncode == 1 and f"line {len(lines) - 2}: Expecting" in out.stderr, out.stderr
    assert "nothing was imported" in out.stderr and "Traceback" not in out.stderr
    # A record of a model no export holds (here a superuser) is refused, whatever the header says.
    intruder = tmp_path / "intruder.jsonl"
    user = ('{"model": "auth.user", "pk": 77, "fields": {"username": "intruder", "is_superuser": true, '
            '"is_staff": true, "password": "x", "date_joined": "2026-01-01T00:00:00Z"}}')
    intruder.write_text("\n".join([*lines[:3], user, *lines[3:]]) + "\n")
    out = cli(home, "import", "--name", "empty", str(intruder))
    assert out.returncode == 1 and "line 4: a record of 'auth.user', which no export holds" in out.stderr, out.stderr
    assert run(home / "empty", "from django.contrib.auth.models import User; print(User.objects.count())").split()[
        -1] == "0"
    backup = tmp_path / "b.sqlite3"  # a backup given to import by mistake, a header with no models
    backup.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8)
    headless = tmp_path / "headless.jsonl"
    headless.write_text('{"format": "flux-memory-jsonl", "version": 1}\n')
    for wrong in (backup, headless):
        out = cli(home, "import", "--name", "empty", str(wrong))
        assert out.returncode == 1 and "is not a Flux Memory export" in out.stderr and "Traceback" not in out.stderr
    count = run(home / "empty", "from grains.models import Grain, Caller; print(Grain.objects.count(), "
                                "Caller.objects.count())")
    assert count.split() == ["0", "0"], "a failed import leaves nothing behind"
    stranger = tmp_path / "notes.jsonl"
    stranger.write_text('{"hello": "world"}\n')
    out = cli(home, "import", "--name", "empty", str(stranger))
    assert out.returncode == 1 and "is not a Flux Memory export" in out.stderr
    # Values no service would have written, each in a file otherwise whole: refused with their line, none kept.
    grain_at = next(i for i, line in enumerate(lines) if '"model": "grains.grain"' in line)
    vector_at = next((i for i, line in enumerate(lines) if '"model": "graph.grainvector"' in line), None)

    def edited(at: int, change: Callable[[dict], None]) -> list[str]:
        record = json.loads(lines[at])
        change(record)
        return [*lines[:at], json.dumps(record), *lines[at + 1:]]

    wrongs = {
        "newer": (['{"format": "flux-memory-jsonl", "models": [], "version": 99}', *lines[1:]], "made by a newer"),
        "status": (edited(grain_at, lambda r: r["fields"].update(status="bogus")), "status 'bogus' is not one of"),
        "hash": (edited(grain_at, lambda r: r["fields"].update(content="Another text")), "content_hash is not"),
        "confidence": (edited(grain_at, lambda r: r["fields"].update(confidence=5.0)), "not between 0 and 1"),
        "negative id": (edited(grain_at, lambda r: r.update(pk=-5)), "id -5 is not a positive integer"),
        "twice": ([*lines, lines[grain_at]], "UNIQUE"),  # the same id again replaced the first record
        "fields": (edited(grain_at, lambda r: r.pop("fields")), "a record without its fields"),
    }
    if vector_at is not None:  # a vector cut short made every retrieval a 500 once imported
        wrongs["vector"] = (edited(vector_at, lambda r: r["fields"].update(vector="AAAA")), "has 3 bytes")
    for name, (content, said) in wrongs.items():
        wrong = tmp_path / f"wrong-{name}.jsonl"
        wrong.write_text("\n".join(content) + "\n")
        out = cli(home, "import", "--name", "empty", str(wrong))
        assert out.returncode == 1 and said.lower() in out.stderr.lower(), (name, out.stderr)
        assert "nothing was imported" in out.stderr or name == "newer", (name, out.stderr)
    assert run(home / "empty", "from grains.models import Grain; print(Grain.objects.count())").split()[-1] == "0"
    edited_by_hand = tmp_path / "edited.jsonl"  # a byte-order mark first and blank lines last, as editors leave
    edited_by_hand.write_text("\ufeff" + "\n".join(lines) + "\n\n\n")
    assert cli(home, "import", "--name", "empty", str(edited_by_hand)).returncode == 0
    # Times come back to the microsecond.
    when = "from grains.models import Grain; print(sorted(g.created_at.isoformat() for g in Grain.objects.all()))"
    assert run(home / "empty", when).splitlines()[-1] == run(home / "lite", when).splitlines()[-1]
    assert cli(home, "export", "--name", "empty", "--to", str(tmp_path)).returncode == 1  # a folder: said, no leftover
    assert not list(tmp_path.parent.glob(f"{tmp_path.name}*.partial"))
    pipe = tmp_path / "pipe"  # as /dev/null: it was replaced by a file of the export
    os.mkfifo(pipe)
    out = cli(home, "export", "--name", "empty", "--to", str(pipe))
    assert out.returncode == 1 and "is not a regular file" in out.stderr and "Traceback" not in out.stderr
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    out = cli(home, "export", "--name", "empty", "--to", "/proc/memory.jsonl")  # a folder no one creates files in
    assert out.returncode == 1 and "cannot write the export" in out.stderr and "Traceback" not in out.stderr
