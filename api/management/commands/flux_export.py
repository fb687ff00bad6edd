"""`flux export`: the memory as portable JSON Lines (memory.portable), from one moment while the service runs."""
from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from core.commands import FluxCommand
from core.files import private_file
from memory.portable import export_count, export_snapshot, memory_export


class Command(FluxCommand):
    help = "Write the memory as JSON Lines (grains, histories, conduits, tombstones, callers, audit log, ...)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--to", type=Path, required=True, help="the file to write")

    def handle(self, *args: object, **opts: object) -> None:
        path: Path = opts["to"]
        if path.is_dir():
            raise CommandError(f"{path} is a folder; give the file to write, e.g. {path / 'memory.jsonl'}")
        if not path.parent.is_dir():
            raise CommandError(f"no folder {path.parent} to write {path.name} in; create it first")
        try:
            with private_file(path) as out, export_snapshot() as using, \
                    tqdm(total=export_count(using), unit="record", desc="export", file=sys.stderr) as bar:
                written = memory_export(out, using=using, progress=bar.update)
        except OSError as exc:  # a folder that takes no file, a device at the path, a full disk: nothing left
            why = exc.args[0] if isinstance(exc, FileExistsError) and len(exc.args) == 1 else exc.strerror or exc
            raise CommandError(f"cannot write the export at {path} ({why}); give another path (--to)") from None
        self.stdout.write(f"Exported {written} records to {path}.")
