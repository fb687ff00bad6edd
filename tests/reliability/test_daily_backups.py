"""The daily backups beat takes: never more than BACKUP_KEEP whole ones listed, one at a time, a half-written
copy never among them."""
from __future__ import annotations

import pytest

from core.backup import DAILY_PREFIX, backup_dir
from grains.locks import exclusive
from memory.upkeep import backup_daily


@pytest.fixture
def folder(transactional_db, settings, flux_settings, tmp_path):
    settings.DATA_DIR = tmp_path
    flux_settings(BACKUP_KEEP=2)
    return tmp_path / "backups"


def test_the_newest_backup_keep_are_kept_and_a_partial_copy_is_never_one_of_them(folder):
    made = [backup_daily() for _ in range(3)]
    assert backup_dir() == folder
    kept = sorted(p.name for p in folder.iterdir())
    assert kept == sorted(m.path.name for m in made[1:]) and all(n.startswith(DAILY_PREFIX) for n in kept)
    assert all((m.path.stat().st_mode & 0o777) == 0o600 for m in made[1:])
    left = folder / f".{DAILY_PREFIX}20260101-000000.000.sqlite3.partial"  # a copy killed half-way
    left.write_bytes(b"half")
    newest = backup_daily()
    assert sorted(p.name for p in folder.glob(f"{DAILY_PREFIX}*")) == [made[2].path.name, newest.path.name]
    assert left.exists()  # not a backup: neither listed nor pruned


def test_a_second_daily_backup_while_one_runs_makes_nothing(folder):
    with exclusive("backup_daily", seconds=60) as other:
        assert other is None
        assert backup_daily() is None
    assert not folder.exists() or not list(folder.glob(f"{DAILY_PREFIX}*"))
    assert backup_daily() is not None
