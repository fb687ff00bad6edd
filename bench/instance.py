"""A throwaway database for evaluations and benchmarks, migrated from scratch."""
from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connections


@contextmanager
def temporary_database() -> Iterator[Path]:
    """Point the default database, and the data folder beside it, at new temporary ones for the duration (so a
    service started on that folder finds what this process left there, e.g. the vector index): a SQLite file
    in the folder, or with DATABASE_URL a new database on the same PostgreSQL server, dropped afterwards.

    Works the way Django's test runner swaps in a test database.
    """
    conn = connections["default"]
    if conn.vendor not in ("sqlite", "postgresql"):
        raise RuntimeError(f"no temporary database on {conn.vendor}")
    original, data_dir = conn.settings_dict["NAME"], settings.DATA_DIR
    with tempfile.TemporaryDirectory(prefix="flux-temp-") as folder:
        path = Path(folder) / "flux.sqlite3"
        name = f"flux_temp_{secrets.token_hex(6)}" if conn.vendor == "postgresql" else str(path)
        if conn.vendor == "postgresql":
            with conn.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{name}"')  # a name made here, not given
        conn.close()
        conn.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = name
        settings.DATA_DIR = Path(folder)
        try:
            call_command("migrate", verbosity=0, interactive=False)
            yield path
        finally:
            conn.close()
            conn.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = original
            settings.DATA_DIR = data_dir
            if conn.vendor == "postgresql":
                with conn.cursor() as cursor:
                    cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
