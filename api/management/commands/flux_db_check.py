"""Check the database before the instance's processes start (used by `flux start`): SQLite's own quick check
(after a crash its write-ahead log has been replayed by then), or a query on PostgreSQL."""
from __future__ import annotations

from django.core.management.base import CommandError
from django.db import connection

from core.commands import FluxCommand


class Command(FluxCommand):
    help = "Check the database's integrity (SQLite PRAGMA quick_check); exit 1 with what is wrong."

    def handle(self, *args: object, **opts: object) -> None:
        with connection.cursor() as cursor:
            if connection.vendor != "sqlite":
                cursor.execute("SELECT 1")
                return
            cursor.execute("PRAGMA quick_check")
            problems = [row[0] for row in cursor.fetchall() if row[0] != "ok"]
        if problems:
            raise CommandError(
                f"the database {connection.settings_dict['NAME']} failed its integrity check: "
                f"{'; '.join(problems[:5])}. Restore a backup (`flux restore --name NAME PATH`; the daily ones are "
                "in the instance's backups/ folder when BACKUP_KEEP > 0)")
