"""What every flux_* management command shares."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, ProgrammingError, connection

from core.env import postgres_url


def database_named() -> str:
    """The database this process uses, as a message names it: its PostgreSQL URL without the password, or its
    SQLite file."""
    if connection.vendor == "postgresql":
        return f"PostgreSQL at {postgres_url(connection.settings_dict, with_password=False)}"
    return f"the SQLite file {connection.settings_dict['NAME']}"


class FluxCommand(BaseCommand):
    """A flux_* command: on a database it cannot reach (a wrong DATABASE_URL, a server down) or that has no tables
    yet (a new FLUX_DATA_DIR never migrated), it says so in one line, with the fix, rather than with a
    traceback."""

    reaches_database = True  # False for a command that never opens the default database (it says so itself)

    def execute(self, *args: object, **options: object) -> object:
        try:
            if self.reaches_database and connection.vendor != "sqlite":  # a SQLite file is opened when first used
                connection.ensure_connection()
        except OperationalError as exc:
            reason = " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
            raise CommandError(f"cannot reach the database, {database_named()}: {reason[:300]}; check that its "
                               "server runs and DATABASE_URL (host, port, user, password)") from None
        try:
            return super().execute(*args, **options)
        except (OperationalError, ProgrammingError) as exc:
            if "no such table" not in str(exc) and "does not exist" not in str(exc):
                raise
            raise CommandError(f"the database has no Flux Memory tables yet ({str(exc).splitlines()[0]}); run "
                               "`python manage.py migrate` first (`flux init` and `flux start` do it)") from None
