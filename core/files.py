"""Files only their owner reads (no Django import)."""
from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a reader sees the old file or the new one), 0600 from its first
    byte: the file may hold a password or a key."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(tmp, 0o600)  # an older .tmp left behind keeps its mode through O_CREAT
    os.replace(tmp, path)
