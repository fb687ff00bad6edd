"""Files only their owner reads (no Django import)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def private_file(path: Path) -> Iterator[IO[str]]:
    """A text file to write ``path`` with: 0600 from its first byte (it may hold a password, a key, the memory),
    put in place at once when the block ends (a reader sees the old file or the new one), and nothing of it left
    when the block fails. Meanwhile it is written beside ``path``, as ``path`` + ".partial". Something at ``path``
    that is not a regular file (``/dev/null``, a pipe) is refused: FileExistsError."""
    if path.exists() and not path.is_file():  # a device, a pipe: never replaced by a file of ours
        raise FileExistsError(f"{path} is not a regular file")
    tmp = path.with_name(path.name + ".partial")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
        os.chmod(tmp, 0o600)  # an older one left behind keeps its mode through O_CREAT
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (see ``private_file``)."""
    with private_file(path) as out:
        out.write(text)
