"""Raw SQL that migrations run per database vendor (triggers, virtual tables, indexes the ORM cannot express)."""
from __future__ import annotations

from collections.abc import Callable


def run_by_vendor(statements_by_vendor: dict[str, list[str]]) -> Callable[[object, object], None]:
    """A RunPython function executing, in order, the statements listed for the database's vendor (nothing for a
    vendor not listed)."""

    def run(apps: object, schema_editor: object) -> None:
        for sql in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run
