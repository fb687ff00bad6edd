"""The instance's secret: processes starting at once (the REST processes of WEB_WORKERS) agree on one, and none
reads it half written."""
from __future__ import annotations

import stat

import pytest

from core import secret as secret_module
from core.secret import SECRET_FILE, SecretError, instance_secret


def test_a_process_starting_while_another_writes_the_secret_reads_the_same_whole_one(tmp_path, monkeypatch):
    """The second process asks while the first is between making its secret and putting it in place (before,
    it found the file the first had just created, still empty, and refused to start: "too weak")."""
    real = secret_module.secrets.token_urlsafe
    other: list[str] = []

    def token(nbytes: int) -> str:
        if not other:
            other.append("")  # the other process runs now, once
            other[0] = instance_secret(tmp_path)
        return real(nbytes)

    monkeypatch.setattr(secret_module.secrets, "token_urlsafe", token)
    first = instance_secret(tmp_path)
    assert first == other[0] and len(first) >= 32
    assert first == (tmp_path / SECRET_FILE).read_text().strip()
    assert stat.S_IMODE((tmp_path / SECRET_FILE).stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [SECRET_FILE]  # no draft left behind


def test_an_empty_secret_file_is_refused_with_how_to_fix_it(tmp_path):
    (tmp_path / SECRET_FILE).write_text("")
    with pytest.raises(SecretError, match="too weak .* delete it and start again"):
        instance_secret(tmp_path)
