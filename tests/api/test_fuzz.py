"""Schema-driven fuzzing of the running service: no 5xx, responses as /openapi.json says."""
from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.servers import flux_server

EXAMPLES = 100  # at most, per operation, so the run stays bounded; an operation with little to vary gets fewer
# The API checks more than a schema can say (both caller headers or neither, content that is only
# whitespace, trace ids that exist), so schema-valid requests may rightly get a 4xx. Every other
# check stays on: no 5xx, documented status codes, content types and response bodies.
EXCLUDED = [positive_data_acceptance]


def test_every_operation_answers_as_documented(tmp_path):
    with flux_server(tmp_path / "fuzz", MAX_GRAINS_PER_MINUTE="100000") as (base, log):
        schema = schemathesis.openapi.from_url(base + "/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) == 17
        cases = []
        for operation in operations:

            @given(case=operation.as_strategy())
            @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                      derandomize=True, database=None)
            def answers_as_documented(case):
                response = case.call_and_validate(base_url=base, excluded_checks=EXCLUDED)
                cases.append(response.status_code)

            answers_as_documented()
    print(f"{len(cases)} fuzz cases, statuses {sorted(set(cases))}")
    assert len(cases) >= 1000, len(cases)  # requests sent, every one answered as documented
    assert not [s for s in cases if s >= 500]
    assert "Traceback" not in log.read_text(errors="replace")
