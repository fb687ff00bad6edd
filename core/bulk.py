"""Row updates by primary key with executemany: bulk_update builds a CASE per row and field, too slow for hot paths."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import connection, models


def bulk_set(model: type[models.Model], fields: Sequence[str], objects: Iterable[models.Model]) -> None:
    """Write ``fields`` of each object (already changed in memory) in one executemany."""
    table = model._meta.db_table
    columns = [model._meta.get_field(f) for f in fields]
    assignments = ", ".join(f"{connection.ops.quote_name(c.column)} = %s" for c in columns)
    sql = f"UPDATE {connection.ops.quote_name(table)} SET {assignments} WHERE id = %s"
    rows = [[_adapt(c, getattr(obj, c.attname)) for c in columns] + [obj.pk] for obj in objects]
    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)


def _adapt(field: models.Field, value: object) -> object:
    if isinstance(value, datetime):
        return connection.ops.adapt_datetimefield_value(value)
    return value
