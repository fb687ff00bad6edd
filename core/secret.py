"""The instance's secret: random, in a 0600 file of the instance folder, never derived from anything public.

It signs the admin's one-time login links, sessions and CSRF tokens. `flux init` writes it; any process of the
instance that finds none (a checkout's first `scripts/run`, the SDK's embedded mode, the REST processes of
WEB_WORKERS starting at once) writes one the same way: whole, in a file of its own, then linked into place
only if no other process's came first, so processes starting at once agree on one and none ever reads it half
written. No Django import.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

SECRET_FILE = "secret.key"
MIN_LENGTH = 32
_DERIVED_PREFIX = "flux-local-only-"  # what older versions derived from the data folder's path


class SecretError(Exception):
    """No usable secret: the message says why and how to fix it."""


def secret_check(secret: str, where: str) -> str:
    """``secret`` if it is long and random-looking enough to sign with; SecretError otherwise."""
    if secret.startswith(_DERIVED_PREFIX) or len(secret) < MIN_LENGTH or len(set(secret)) < 10:
        raise SecretError(f"the secret in {where} is too weak to sign admin links and sessions (at least "
                          f"{MIN_LENGTH} random characters are needed); delete it and start again to get a new "
                          "random one, or set SECRET_KEY to the output of "
                          "`python -c 'import secrets; print(secrets.token_urlsafe(48))'`")
    return secret


def instance_secret(data_dir: Path, from_environment: str = "") -> str:
    """SECRET_KEY from the environment when set, else the instance's secret file, created (0600) when absent."""
    if from_environment:
        return secret_check(from_environment, "SECRET_KEY")
    path = Path(data_dir) / SECRET_FILE
    if not path.exists():
        try:
            _write_once(path)
        except OSError as exc:
            raise SecretError(f"cannot write the instance's secret to {path} ({exc.strerror}); make the folder "
                              "writable or set SECRET_KEY") from None
    try:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SecretError(f"cannot read the instance's secret {path} ({exc.strerror})") from None
    return secret_check(text, str(path))


def _write_once(path: Path) -> None:
    """A new random secret at ``path`` (0600) unless another process puts one there first. Written whole to a
    file of its own, then hard-linked into place (which fails if ``path`` exists): another process sees the
    secret complete or not at all."""
    text = secrets.token_urlsafe(48) + "\n"
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    _create(draft, text)
    try:
        os.link(draft, path)
    except FileExistsError:
        pass  # another process's came first: it is the instance's
    except OSError:  # a file system without hard links: created exclusively, then written
        with contextlib.suppress(FileExistsError):
            _create(path, text)
    finally:
        draft.unlink(missing_ok=True)


def _create(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
