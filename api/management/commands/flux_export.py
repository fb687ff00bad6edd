"""`flux export`: the memory as portable JSON Lines (memory.portable), from one moment while the service runs."""
from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from memory.portable import export_count, export_snapshot, memory_export


class Command(BaseCommand):
    help = "Write the memory as JSON Lines (grains, histories, conduits, tombstones, callers, audit log, ...)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--to", type=Path, required=True, help="the file to write")

    def handle(self, *args: object, **opts: object) -> None:
        path: Path = opts["to"]
        tmp = path.with_name(path.name + ".partial")
        with export_snapshot() as using, open(tmp, "w", encoding="utf-8") as out, \
                tqdm(total=export_count(using), unit="record", desc="export", file=sys.stderr) as bar:
            written = memory_export(out, using=using, progress=bar.update)
        tmp.replace(path)
        path.chmod(0o600)
        self.stdout.write(f"Exported {written} records to {path}.")
