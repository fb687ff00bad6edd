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

from core.checkpoint import checkpointer


@contextmanager
def temporary_database(keep: Path | None = None) -> Iterator[Path]:
    """Point the default database, and the data folder beside it, at new temporary ones for the duration (so a
    service started on that folder finds what this process left there, e.g. the vector index): a SQLite file
    in the folder, or with DATABASE_URL a new database on the same PostgreSQL server, dropped afterwards.
    With ``keep`` (SQLite only) the folder is that one, made private, and it stays, with whatever an earlier
    run left in it, for the next run to measure again.

    Works the way Django's test runner swaps in a test database.
    """
    conn = connections["default"]
    if conn.vendor not in ("sqlite", "postgresql") or (keep is not None and conn.vendor != "sqlite"):
        raise RuntimeError(f"no {'kept' if keep else 'temporary'} database on {conn.vendor}")
    if keep is not None:
        keep.mkdir(mode=0o700, parents=True, exist_ok=True)
        with _database_in(keep) as path:
            yield path
        return
    with tempfile.TemporaryDirectory(prefix="flux-temp-") as folder, _database_in(Path(folder)) as path:
        yield path


@contextmanager
def _database_in(folder: Path) -> Iterator[Path]:
    conn = connections["default"]
    original, data_dir = conn.settings_dict["NAME"], settings.DATA_DIR
    path = folder / "flux.sqlite3"
    name = f"flux_temp_{secrets.token_hex(6)}" if conn.vendor == "postgresql" else str(path)
    if conn.vendor == "postgresql":
        with conn.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')  # a name made here, not given
    conn.close()
    conn.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = name
    settings.DATA_DIR = folder
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield path
    finally:
        conn.close()
        checkpointer.forget(name)  # before the folder goes: a checkpoint under way would put files back in it
        conn.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = original
        settings.DATA_DIR = data_dir
        if conn.vendor == "postgresql":
            with conn.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
