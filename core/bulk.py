"""Bulk writes and reads for the hot paths (storing, retrieval and its bookkeeping, feedback), without the
per-value machinery of Django's bulk_create and bulk_update or the building of a query: rows updated by primary
key with executemany (bulk_update builds a CASE per row and field), new rows inserted with multi-row INSERTs
(bulk_create prepares every value of every row through its field; here only dates, JSON and choices are adapted,
the rest is passed as it is), rows read by a plain SELECT (filter() compiles its query anew each time, a few
hundred microseconds, more than the query itself)."""
from __future__ import annotations

import enum
import functools
import weakref
from collections.abc import Callable, Iterable, Sequence

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper


def marks(values: Sequence[object]) -> str:
    """The placeholders of ``values`` in SQL: ``id IN ({marks(ids)})``."""
    return ", ".join(["%s"] * len(values))


def bulk_set(model: type[models.Model], fields: Sequence[str], objects: Iterable[models.Model]) -> None:
    """Write ``fields`` of each object (already changed in memory) in one executemany."""
    table = model._meta.db_table
    columns = [model._meta.get_field(f) for f in fields]
    assignments = ", ".join(f"{connection.ops.quote_name(c.column)} = %s" for c in columns)
    sql = f"UPDATE {connection.ops.quote_name(table)} SET {assignments} WHERE id = %s"
    adapt = [_adapter(c) for c in columns]
    rows = [[a(getattr(obj, c.attname)) for c, a in zip(columns, adapt, strict=True)] + [obj.pk] for obj in objects]
    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)


def bulk_insert(model: type[models.Model], objects: list[models.Model], *, ignore_conflicts: bool = False) -> None:
    """Insert ``objects`` (new, built with the model's constructor so that defaults are set) with multi-row INSERTs;
    each gets its id (unless ``ignore_conflicts``: rows clashing with a unique constraint are skipped, and ids
    are not read back, as bulk_create does)."""
    if not objects:
        return
    fields = _inserted(model)
    adapt = [_adapter(f) for f in fields]
    pks = _insert(model, fields, [[a(getattr(obj, f.attname)) for f, a in zip(fields, adapt, strict=True)]
                                  for obj in objects], ignore_conflicts, returning=not ignore_conflicts)
    if pks:
        for obj, pk in zip(objects, pks, strict=True):
            obj.pk = pk
    for obj in objects:
        obj._state.adding, obj._state.db = False, connection.alias


def bulk_insert_rows(model: type[models.Model], names: Sequence[str], rows: Iterable[Sequence[object]], *,
                     ignore_conflicts: bool = False) -> None:
    """As ``bulk_insert``, from ``rows`` of values for the fields ``names`` instead of model instances (a store
    inserts hundreds of conduits, and building an instance costs more than inserting its row); every other field
    takes its default, the same for each row, so this is for models whose defaults are constants."""
    fields = _inserted(model)
    at = {f.name: i for i, f in enumerate(fields)}
    given = [(at[name], _adapter(fields[at[name]])) for name in names]
    template = [_adapter(f)(f.get_default()) for f in fields]
    values = []
    for row in rows:
        value = template.copy()
        for (i, adapt), v in zip(given, row, strict=True):
            value[i] = adapt(v)
        values.append(value)
    if values:
        _insert(model, fields, values, ignore_conflicts, returning=False)


def _inserted(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not f.primary_key and not f.generated]


def _insert(model: type[models.Model], fields: list[models.Field], rows: list[list[object]],
            ignore_conflicts: bool, *, returning: bool) -> list[int]:
    """Multi-row INSERTs of ``rows`` (values of ``fields``, adapted); the new ids when ``returning``."""
    quote = connection.ops.quote_name
    head = f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
    tail = (" ON CONFLICT DO NOTHING" if ignore_conflicts else "") + (
        f" RETURNING {quote(model._meta.pk.column)}" if returning else "")
    row = f"({marks(fields)})"
    size = max(1, connection.ops.bulk_batch_size(fields, rows))
    pks: list[int] = []
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            chunk = rows[start:start + size]
            cursor.execute(head + ", ".join([row] * len(chunk)) + tail, [v for value in chunk for v in value])
            if returning:
                pks.extend(pk for (pk,) in cursor.fetchall())
    return pks


def bulk_fetch(model: type[models.Model], where: str, params: Sequence[object], *,
               fields: Sequence[str] = ()) -> list[models.Model]:
    """The rows of ``model`` that ``where`` (SQL, ``%s`` for each of ``params``; an ORDER BY or LIMIT may follow
    the condition) selects, as model instances with the values the ORM would give them (the backend's converters
    applied: dates aware, JSON decoded). With ``fields`` only those and the id are read, the others deferred (as
    ``only()``)."""
    select, names, converting = _reading(connections[DEFAULT_DB_ALIAS], model, frozenset(fields))
    with connection.cursor() as cursor:
        cursor.execute(f"{select} WHERE {where}", params)
        rows = cursor.fetchall()
    out = []
    for row in rows:
        if converting:
            row = list(row)
            for i, column, converters in converting:
                for convert in converters:
                    row[i] = convert(row[i], column, connection)
        out.append(model.from_db(connection.alias, names, row))
    return out


_plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per connection (one a thread): model -> plan


def _reading(conn: BaseDatabaseWrapper, model: type[models.Model],
             only: frozenset[str]) -> tuple[str, list[str], list[tuple]]:
    """How ``bulk_fetch`` reads rows of ``model`` (``only`` those fields, if any) on ``conn``: the SELECT, the
    attribute names and, for each column that needs them, its converters (looked up once: that is most of what
    the ORM spends per query)."""
    plans = _plans.setdefault(conn, {})
    if (model, only) not in plans:
        opts, quote = model._meta, conn.ops.quote_name
        fields = [f for f in opts.concrete_fields if not only or f.primary_key or f.name in only]
        converting = []
        for i, field in enumerate(fields):
            column = field.get_col(opts.db_table)
            converters = conn.ops.get_db_converters(column) + column.get_db_converters(conn)
            if converters:
                converting.append((i, column, converters))
        select = f"SELECT {', '.join(quote(f.column) for f in fields)} FROM {quote(opts.db_table)}"
        plans[model, only] = (select, [f.attname for f in fields], converting)
    return plans[model, only]


def _adapter(field: models.Field) -> Callable[[object], object]:
    """How a value of ``field`` goes to the database driver: most as they are."""
    if isinstance(field, models.JSONField):
        return lambda value: field.get_db_prep_save(value, connection)
    if isinstance(field, models.DateTimeField):  # the rows of one write mostly share their times: adapted once
        return functools.lru_cache(maxsize=64)(
            lambda value: None if value is None else connection.ops.adapt_datetimefield_value(value))
    if isinstance(field, models.DateField):
        return lambda value: None if value is None else connection.ops.adapt_datefield_value(value)
    if field.choices:
        return lambda value: value.value if isinstance(value, enum.Enum) else value
    return _same


def _same(value: object) -> object:
    return value
