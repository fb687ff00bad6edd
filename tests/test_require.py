"""A missing server or data file: skipped on a developer machine, a failure in CI (CI=true), never otherwise."""
from __future__ import annotations

import pytest
from _pytest.outcomes import Failed, Skipped

from tests.servers import require, require_binary


@pytest.mark.parametrize("ci,outcome", [("true", Failed), ("1", Failed), ("TRUE", Failed), ("false", Skipped),
                                        ("0", Skipped), ("", Skipped)])
def test_only_a_true_ci_turns_a_missing_part_into_a_failure(monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="Redis not installed"):
        require_binary(None, "Redis", "apt-get install redis-server")
    require(True, "present: nothing happens")
