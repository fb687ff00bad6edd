"""Raw SQL per database vendor: what migrations run (triggers, virtual tables, indexes the ORM cannot express),
and the planner's statistics gathered after a bulk load."""
from __future__ import annotations

from collections.abc import Callable

from django.db import connection


def run_by_vendor(statements_by_vendor: dict[str, list[str]]) -> Callable[[object, object], None]:
    """A RunPython function executing, in order, the statements listed for the database's vendor (nothing for a
    vendor not listed)."""

    def run(apps: object, schema_editor: object) -> None:
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


def statistics_refresh() -> None:
    """After a bulk load, on PostgreSQL: the planner's statistics of every table gathered now. Autovacuum comes
    within a minute, and never for a table of fewer than 50 rows; until it does the planner guesses (at 6,000
    grains searches took up to twice as long). Nothing on SQLite, whose searches need none."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
