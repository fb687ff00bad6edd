"""Two REST processes on one SQLite file (WEB_WORKERS 2 on the embedded database): a store through one is
retrieved through the other (each mirror follows the change log), feedback through one on a trace the other
answered with a moment ago is accepted (it waits for the trace to arrive), stores through both at once all
land with none refused for a locked database, and the same content through both at once is one grain."""
from __future__ import annotations

import threading
from contextlib import ExitStack

import pytest

from tests.servers import flux_server
from tests.test_scale_out import call, stored_through_both_at_once

pytestmark = pytest.mark.slow  # two Django processes


def test_two_rest_processes_share_one_sqlite_file(tmp_path):
    env = {"FEEDBACK_ENFORCEMENT_ENABLED": "false", "SEMANTIC_ENTRY": "off", "TRACE_COMMIT_SECONDS": "0.5",
           "MAX_GRAINS_PER_MINUTE": "100000"}
    with ExitStack() as stack:
        a, _ = stack.enter_context(flux_server(tmp_path, log_name="a.log", **env))
        b, _ = stack.enter_context(flux_server(tmp_path, log_name="b.log", **env))

        status, stored = call(a, "/store", {"content": "Marta keeps bees on the roof of the library"})
        assert status == 201
        status, found = call(b, "/retrieve", {"query": "Who keeps bees?"})
        assert status == 200 and found["grains"][0]["id"] == stored["grain"]["id"]

        # B's trace is committed with the others of its half second; A is asked about it at once.
        rated = call(a, "/feedback", {"trace_id": found["trace_id"], "grain_id": found["grains"][0]["id"],
                                      "useful": True})
        assert rated[0] == 202 and rated[1]["status"] == "accepted", rated
        assert call(b, "/feedback", {"trace_id": 10**9, "grain_id": 1, "useful": True})[0] == 404

        # Stores through both at once: every one lands (the writers take turns), none twice.
        results: dict[str, list[int]] = {"a": [], "b": []}

        def store_many(name: str, base: str) -> None:
            for n in range(40):
                results[name].append(call(base, "/store", {"content": f"{name} note {n}: the tide is high at {n}"},
                                          caller=f"{name}:test")[0])

        threads = [threading.Thread(target=store_many, args=(name, base)) for name, base in (("a", a), ("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert results == {"a": [201] * 40, "b": [201] * 40}
        for base in (a, b):
            status, found = call(base, "/retrieve", {"query": "tide high note 17", "limit": 20})
            assert status == 200
            assert {"a note 17: the tide is high at 17", "b note 17: the tide is high at 17"} <= {
                g["content"] for g in found["grains"]}

        # The same content through A and B at once: one grain, the second store finds it known.
        for n in range(3):
            text = f"Round {n}: the ferry to Tarsa leaves at {7 + n} every morning"
            raced = stored_through_both_at_once(a, b, text)
            assert sorted(r[0] for r in raced.values()) == [200, 201], raced
            assert len({r[1]["grain"]["id"] for r in raced.values()}) == 1
