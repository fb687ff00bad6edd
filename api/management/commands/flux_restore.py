"""`flux restore`: put a backup in place of the instance's database (the service stopped), then migrate it."""
from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError, CommandParser
from django.db import connection

from core.backup import BackupError, postgres_restore, sqlite_restore
from core.commands import FluxCommand


class Command(FluxCommand):
    help = "Restore a backup made by flux backup (checked first; a newer schema is refused), then migrate."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)

    def handle(self, *args: object, **opts: object) -> None:
        path = opts["path"].expanduser().resolve()
        try:
            if connection.vendor == "sqlite":
                kept = sqlite_restore(path)
                before = f"; the database it replaced is kept as {kept}" if kept.exists() else ""
            else:
                postgres_restore(path)
                before = ""
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        call_command("migrate", interactive=False, verbosity=0)  # a backup of an older version is brought up
        self.stdout.write(f"Restored {path}{before}.")
