"""API keys: each bound to one client name, so a caller's identity comes from its key, not from a header.

Keys come from the API_KEYS setting (``client:key`` pairs) and from the instance's keys file
(``api-keys``, 0600: one ``client sha256-of-key`` line each, written by `flux keys add`). Only hashes are
compared, in constant time. With no key configured the service is open on loopback, as before. No Django import.
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import threading
from pathlib import Path

from core.files import write_private

KEYS_FILE = "api-keys"
KEY_PREFIX = "flux_"
CLIENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")  # what a caller's client may be called
_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._@+-]{0,99}) ([0-9a-f]{64})$")


class KeysUnreadable(Exception):
    """The keys file of a running service does not read as keys: every call is refused (503) until it is mended."""


class KeySettingError(ValueError):
    """A key setting or file that cannot be used: the message says where and why."""


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def check_client(client: str) -> str:
    if not CLIENT_NAME.match(client or ""):
        raise KeySettingError(f"client {client!r} must be 1-100 letters, digits or ._@+- (e.g. 'codex')")
    if client.lower().startswith("flux-"):
        raise KeySettingError(f"client names starting with 'flux-' are reserved for Flux Memory's own processes: "
                              f"{client!r}")
    return client


def parse_setting(text: str) -> list[tuple[str, str]]:
    """(client, hash) pairs of API_KEYS: ``client:key,client:key``."""
    pairs = []
    for number, item in enumerate((t.strip() for t in text.split(",")), start=1):
        if not item:
            continue
        client, sep, key = item.partition(":")
        if not sep or len(key) < 16:
            raise KeySettingError(f"API_KEYS item {number} must be client:key with a key of 16 or more characters")
        pairs.append((check_client(client), key_hash(key)))
    return pairs


def read_file(path: Path) -> list[tuple[str, str]]:
    """(client, hash) pairs of a keys file; a missing file has none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE.match(line.strip())
        if not match:
            raise KeySettingError(f"{path}, line {number}: expected 'client sha256', got {line.strip()[:40]!r}")
        pairs.append((match[1], match[2]))
    return pairs


def add_to_file(path: Path, client: str) -> str:
    """A new key for ``client``, its hash appended to the keys file (created 0600) on a line of its own; the key
    itself is returned once and kept nowhere. A file that does not read as keys is refused (KeySettingError),
    rather than added to."""
    check_client(client)
    read_file(path)
    key = new_key()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a+b") as out:
        size = out.seek(0, os.SEEK_END)
        ends_open = False  # a last line without its newline (edited by hand): the new one must not join it
        if size:
            out.seek(size - 1)
            ends_open = out.read(1) != b"\n"
        out.write((b"\n" if ends_open else b"") + f"{client} {key_hash(key)}\n".encode())
    path.chmod(0o600)
    return key


def remove_from_file(path: Path, client: str) -> list[str]:
    """Remove every key of ``client``; the hashes removed (the file untouched when there were none)."""
    kept, removed = [], []
    for pair in read_file(path):
        if pair[0] == client:
            removed.append(pair[1])
        else:
            kept.append(pair)
    if removed:
        write_private(path, "".join(f"{c} {h}\n" for c, h in kept))
    return removed


class Keyring:
    """The keys the service accepts: API_KEYS plus the keys file, re-read when the file changes."""

    def __init__(self, setting: str, path: Path) -> None:
        self._fixed = parse_setting(setting)
        self._path = path
        self._stamp: tuple[float, int] | None = None
        self._from_file: list[tuple[str, str]] = []
        self._broken: str | None = None
        self._lock = threading.Lock()

    def _pairs(self) -> list[tuple[str, str]]:
        """The keys; KeysUnreadable while the file does not read as keys (every call is refused then: which
        keys were meant is not known)."""
        try:
            stat = self._path.stat()
            stamp = (stat.st_mtime, stat.st_size)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._from_file, self._broken = (read_file(self._path) if stamp else []), None
                except KeySettingError as exc:
                    self._from_file, self._broken = [], str(exc)
            if self._broken is not None:
                raise KeysUnreadable(f"this memory's API keys file does not read as keys ({self._broken}): every "
                                     "call is refused until an operator mends it (`flux keys list --name <instance>` "
                                     "says where)")
            return self._fixed + self._from_file

    @property
    def enabled(self) -> bool:
        return bool(self._pairs())

    def client_of(self, key: str) -> str | None:
        """The client ``key`` is bound to, or None; every stored hash is compared, in constant time each."""
        digest, found = key_hash(key), None
        for client, stored in self._pairs():
            if hmac.compare_digest(digest, stored):
                found = client
        return found


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def open_rest_refusal(host: str, api_keys: str, data_dir: Path, *, what: str = "REST API",
                      setting: str = "REST_HOST") -> str | None:
    """Why the REST API (or ``what``, bound by ``setting``) may not listen on ``host`` (beyond loopback without API
    keys), or None."""
    if loopback(host):
        return None
    try:
        if Keyring(api_keys, data_dir / KEYS_FILE).enabled:
            return None
    except (KeySettingError, KeysUnreadable) as exc:
        return str(exc)
    return (f"the {what} would listen on {host} without API keys: anyone who reaches it could read and change "
            f"the memory. Add a key (`flux keys add --name <instance> CLIENT`) or bind {setting} to 127.0.0.1")
