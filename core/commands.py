"""What every flux_* management command shares."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, ProgrammingError


class FluxCommand(BaseCommand):
    """A flux_* command: run on a database that has no tables yet (a new FLUX_DATA_DIR never migrated), it says so
    in one line, with the fix, rather than with a traceback."""

    def execute(self, *args: object, **options: object) -> object:
        try:
            return super().execute(*args, **options)
        except (OperationalError, ProgrammingError) as exc:
            if "no such table" not in str(exc) and "does not exist" not in str(exc):
                raise
            raise CommandError(f"the database has no Flux Memory tables yet ({str(exc).splitlines()[0]}); run "
                               "`python manage.py migrate` first (`flux init` and `flux start` do it)") from None
