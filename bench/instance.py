"""A throwaway database for evaluations and benchmarks, migrated from scratch."""
from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connections


@contextmanager
def temporary_database() -> Iterator[Path]:
    """Point the default SQLite database, and the data folder beside it, at a new temporary folder for the
    duration (so a service started on that folder finds what this process left there, e.g. the vector index).

    Works the way Django's test runner swaps in a test database.
    """
    conn = connections["default"]
    if conn.vendor != "sqlite":
        raise RuntimeError("temporary instances use SQLite; unset DATABASE_URL to run this command")
    original, data_dir = conn.settings_dict["NAME"], settings.DATA_DIR
    with tempfile.TemporaryDirectory(prefix="flux-temp-") as folder:
        path = Path(folder) / "flux.sqlite3"
        conn.close()
        conn.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = str(path)
        settings.DATA_DIR = Path(folder)
        try:
            call_command("migrate", verbosity=0, interactive=False)
            yield path
        finally:
            conn.close()
            conn.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = original
            settings.DATA_DIR = data_dir
