"""Backups of an instance's database: a consistent copy taken while the service runs (SQLite's VACUUM INTO reads
one snapshot while writers go on; pg_dump on PostgreSQL), checked, private; the daily ones pruned to BACKUP_KEEP;
and what a restore checks first (a sound file, no schema newer than this code)."""
from __future__ import annotations

import glob
import itertools
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import OperationalError, connection
from django.db.migrations.loader import MigrationLoader

from core.checkpoint import checkpointer
from core.env import postgres_url

BACKUP_DIR = "backups"
DAILY_PREFIX = "flux-daily-"


class BackupError(Exception):
    """A backup or restore that cannot be done, with what to do instead."""


@dataclass(frozen=True)
class Backup:
    path: Path
    bytes: int
    seconds: float


def backup_dir() -> Path:
    return Path(settings.DATA_DIR) / BACKUP_DIR


def _suffix() -> str:
    return ".sqlite3" if connection.vendor == "sqlite" else ".pgdump"


def default_backup_path(prefix: str = "flux-", now: datetime | None = None) -> Path:
    """backups/<prefix><UTC time to the millisecond>: names sort by time and two backups never collide."""
    now = now or datetime.now(UTC)
    return backup_dir() / f"{prefix}{now:%Y%m%d-%H%M%S}.{now.microsecond // 1000:03d}{_suffix()}"


def database_backup(dest: Path | None = None, make_room: Callable[[], object] | None = None) -> Backup:
    """Copy the database to ``dest`` (default backups/flux-<UTC time>), consistent as of one moment, while the
    service keeps writing; the copy is checked (SQLite) and readable by the owner only. It is written under a
    hidden partial name and renamed to ``dest`` once whole and checked, so a backup that can be listed is a whole
    one; ``make_room`` runs just before the rename (the daily backups pruned to leave room for this one)."""
    dest = Path(dest) if dest else default_backup_path()
    if dest.exists():
        raise BackupError(f"{dest} exists already; give another path (--to)")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise BackupError(f"cannot make the folder {dest.parent} ({exc.strerror}); give another path (--to)") from None
    partial = dest.with_name(f".{dest.name}.partial")
    partial.unlink(missing_ok=True)  # left by a backup killed mid-copy
    started = time.monotonic()
    old = os.umask(0o077)
    try:
        if connection.vendor == "sqlite":
            try:
                with connection.cursor() as cursor:
                    cursor.execute("VACUUM INTO %s", [str(partial)])
            except OperationalError as exc:  # the place cannot hold a database file (/proc, a full disk, ...)
                raise BackupError(f"cannot write the copy at {dest} ({exc}); give another path (--to)") from None
            problems = sqlite_problems(partial)
            if problems:
                raise BackupError(f"the copy failed its integrity check ({problems}); nothing was kept")
        elif connection.vendor == "postgresql":
            _run([_pg_tool("pg_dump"), "--format=custom", "--no-owner", "--file", str(partial), _pg_url()])
        else:
            raise BackupError(f"no backup for a {connection.vendor} database")
        partial.chmod(0o600)
        if make_room is not None:
            make_room()
        partial.replace(dest)
    finally:
        os.umask(old)
        partial.unlink(missing_ok=True)
    return Backup(dest, dest.stat().st_size, round(time.monotonic() - started, 3))


def backups_prune(keep: int, prefix: str = DAILY_PREFIX) -> list[Path]:
    """Delete the oldest backups named ``prefix``* beyond the newest ``keep``; returns the deleted ones."""
    found = sorted(backup_dir().glob(f"{prefix}*{_suffix()}"))
    gone = found[:-keep] if keep > 0 else found
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


def sqlite_problems(path: Path) -> str:
    """What SQLite's quick check finds wrong with the database at ``path`` ('' when it is sound)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            rows = [r[0] for r in db.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return f"not a database: {exc}"
    return "" if rows == ["ok"] else "; ".join(rows[:5])


def known_migrations() -> set[tuple[str, str]]:
    """Every migration this code knows, including those its squashed migrations replace."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    known = set(loader.disk_migrations)
    for migration in loader.disk_migrations.values():
        known.update(migration.replaces or [])
    return known


def restore_check(path: Path) -> None:
    """Refuse a file that is not a sound SQLite database of Flux, or whose schema is newer than this code."""
    if not path.is_file():
        raise BackupError(f"no file at {path}")
    problems = sqlite_problems(path)
    if problems:
        raise BackupError(f"{path} is not a sound SQLite database ({problems})")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        try:
            applied = set(db.execute("SELECT app, name FROM django_migrations"))
        except sqlite3.DatabaseError:
            raise BackupError(f"{path} is not a Flux Memory database (it has no migrations table)") from None
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    _refuse_newer(path, applied)
    if not any(app == "grains" for app, _ in applied):
        raise BackupError(f"{path} is not a Flux Memory database (no migration of its grains is recorded in it)")
    missing = sorted(_tables_of(applied) - tables)
    if missing:
        raise BackupError(f"{path} is not a whole Flux Memory database: the tables its migrations made are not all "
                          f"there (no {', '.join(missing[:5])})")


def _tables_of(applied: set[tuple[str, str]]) -> set[str]:
    """The tables of the models the migrations ``applied`` leave (those of a database they were applied to)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    nodes = [node for node in applied if node in loader.graph.nodes]
    state = loader.project_state(nodes=nodes, at_end=True)
    return {model.options.get("db_table") or f"{app}_{name}" for (app, name), model in state.models.items()
            if model.options.get("managed", True) and not model.options.get("proxy")}


def _refuse_newer(path: Path, applied: set[tuple[str, str]]) -> None:
    """BackupError when the backup at ``path`` has migrations this code does not know (a newer version's)."""
    newer = sorted(applied - known_migrations())
    if newer:
        raise BackupError(f"{path} was made by a newer Flux Memory (migrations unknown here: "
                          f"{', '.join(f'{a}.{n}' for a, n in newer[:5])}); upgrade Flux Memory, then restore")


def postgres_restore_check(path: Path) -> None:
    """Refuse a file that pg_restore cannot read, that holds no Flux database, or whose schema is newer than
    this code: its migrations table is read from the dump (pg_restore prints that table's rows), nothing is
    written."""
    if not path.is_file():
        raise BackupError(f"no file at {path}")
    out = subprocess.run([_pg_tool("pg_restore"), "--data-only", "--table", "django_migrations", "--file", "-",
                          str(path)], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise BackupError(f"{path} is not a PostgreSQL backup pg_restore can read: {out.stderr.strip()[-500:]}")
    lines = out.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("COPY ") and "django_migrations" in line),
                 None)
    if start is None:
        raise BackupError(f"{path} is not a Flux Memory database (it has no migrations table)")
    columns = lines[start][lines[start].index("(") + 1:lines[start].index(")")].replace(" ", "").split(",")
    app, name = columns.index("app"), columns.index("name")
    rows = [line.split("\t") for line in itertools.takewhile(lambda line: line != "\\.", lines[start + 1:])]
    _refuse_newer(path, {(row[app], row[name]) for row in rows})


def sqlite_restore(path: Path) -> Path:
    """Put the backup at ``path`` in place of the instance's SQLite database (the service must be stopped); the
    database it replaces is kept beside it as flux.sqlite3.before-restore-<time>. Returns where that went."""
    restore_check(path)
    live = Path(settings.DATABASES["default"]["NAME"])
    connection.close()
    checkpointer.forget(str(live))  # its checkpoint under way would put the old log back beside the new file
    kept = live.with_name(f"{live.name}.before-restore-{datetime.now(UTC):%Y%m%d-%H%M%S}")
    if live.exists():
        with sqlite3.connect(live) as db:  # fold the write-ahead log in, so the file kept is whole
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.replace(live, kept)
    for suffix in ("-wal", "-shm"):
        Path(f"{live}{suffix}").unlink(missing_ok=True)
    old = os.umask(0o077)
    try:
        shutil.copyfile(path, live.with_name(live.name + ".restoring"))
        os.replace(live.with_name(live.name + ".restoring"), live)
    finally:
        os.umask(old)
    live.chmod(0o600)
    return kept


def postgres_restore(path: Path) -> None:
    """Replace the PostgreSQL database's contents with a pg_dump file (the service must be stopped)."""
    postgres_restore_check(path)
    connection.close()
    _run([_pg_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--dbname", _pg_url(), str(path)])


def _pg_url() -> str:
    """The database's URL without its password (which goes in PGPASSWORD, never on a command line)."""
    return postgres_url(settings.DATABASES["default"], with_password=False)


def _pg_tool(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)),
                                         None)
    if not found:
        raise BackupError(f"{name} is not installed (it comes with PostgreSQL's client tools)")
    return found


def _run(argv: list[str]) -> None:
    password = settings.DATABASES["default"].get("PASSWORD") or ""
    env = {**os.environ, **({"PGPASSWORD": password} if password else {})}
    out = subprocess.run(argv, capture_output=True, text=True, timeout=3600, env=env)
    if out.returncode != 0:
        raise BackupError(f"{Path(argv[0]).name} failed: {out.stderr.strip()[-1000:]}")
