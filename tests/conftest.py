from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from django.conf import settings

# Tests (and the servers they start, which inherit the environment) retrieve lexically unless a test turns
# semantic entry on: results do not depend on the embedding model, and no process pays
# for loading the model it does not need. tests/graph/test_semantic.py turns it on.
os.environ["SEMANTIC_ENTRY"] = "off"
settings.FLUX["SEMANTIC_ENTRY"] = "off"  # this process read its settings before this file

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.fixture
def t0() -> datetime:
    return T0


@pytest.fixture
def flux_settings(settings):
    """Override Flux constants for one test: ``flux_settings(MAX_HOPS=1)``."""

    def override(**values: object) -> None:
        unknown = set(values) - set(settings.FLUX)
        assert not unknown, f"unknown Flux settings {unknown}"
        settings.FLUX = {**settings.FLUX, **values}

    return override


# The PostgreSQL pass (`.ci/run` runs the suite a second time with DATABASE_URL and REDIS_URL set, see
# scripts/test-postgres): every test that uses the database in this process runs on PostgreSQL and Redis; the
# others (pure algorithms, tests of whole instances started as processes, which the embedded pass covers, and
# tests marked sqlite_only: the graph mirror) are left out, and a process a test starts is an embedded instance
# of its own, never this database. Tests marked postgres_only run in that pass alone.
ON_POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
if ON_POSTGRES:
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ON_POSTGRES:
        uses_db = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}
        left = [item for item in items if item.get_closest_marker("sqlite_only") or not (
            item.get_closest_marker("django_db") or uses_db & set(getattr(item, "fixturenames", ())))]
    else:
        left = [item for item in items if item.get_closest_marker("postgres_only")]
    if left:
        config.hook.pytest_deselected(items=left)
        gone = {id(item) for item in left}
        items[:] = [item for item in items if id(item) not in gone]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and on PostgreSQL, before it drops the test database, the sessions this process still
    holds on it ended: the booth's threads and the service's other workers keep one each for the life of the
    process, and the threads of booths that tests closed leave theirs until they are collected. Dropping the
    database under them failed ("being accessed by other users"), a warning at the end of every run."""
    yield
    if ON_POSTGRES:
        from django.db import connection

        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
