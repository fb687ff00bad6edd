"""`flux backup`: a consistent copy of the instance's database, taken while the service runs."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError, CommandParser

from core.backup import BackupError, database_backup
from core.commands import FluxCommand


class Command(FluxCommand):
    help = "Copy the database (SQLite: VACUUM INTO, checked; PostgreSQL: pg_dump) while the service runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--to", type=Path, help="where to write it (default: the instance's backups/ folder)")

    def handle(self, *args: object, **opts: object) -> None:
        to: Path | None = opts["to"]
        if to is not None and not to.parent.is_dir():  # as flux export: a path mistyped makes no folders
            raise CommandError(f"no folder {to.parent} to write {to.name} in; create it first")
        try:
            made = database_backup(to)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Backup written to {made.path} ({made.bytes / 1e6:.1f} MB in {made.seconds:.1f} s); "
                          "restore it with `flux restore --name NAME PATH` while the instance is stopped.")
