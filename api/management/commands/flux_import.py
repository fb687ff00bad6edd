"""`flux import`: a file written by `flux export` into an empty memory, all or nothing, ids kept."""
from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from core.commands import FluxCommand
from core.errors import InvalidInput
from memory.portable import memory_import


class Command(FluxCommand):
    help = "Read a flux export file into this (empty) memory."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)

    def handle(self, *args: object, **opts: object) -> None:
        path: Path = opts["path"]
        if not path.is_file():
            raise CommandError(f"no file at {path}")
        lines = sum(1 for _ in open(path, encoding="utf-8", errors="replace")) - 1
        try:
            with tqdm(total=max(lines, 0), unit="record", desc="import", file=sys.stderr) as bar:
                count = memory_import(path, progress=bar.update)
        except InvalidInput as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Imported {count} records from {path}.")
