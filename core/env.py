"""Small, strict readers of environment variables (no Django import)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

from core.defaults import CHOICES


class SettingError(ValueError):
    """A configuration value that cannot be used; the message says which and why."""


_TRUE = {"1", "true", "yes", "on"}
_RATE = re.compile(r"^[1-9][0-9]{0,8}/[smhd]$")
_FALSE = {"0", "false", "no", "off"}


def parse_value(name: str, raw: str, default: object) -> object:
    """Parse ``raw`` as the type of ``default``; raise SettingError naming ``name``."""
    text = raw.strip()
    try:
        if isinstance(default, bool):
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError("expected one of true/false/1/0/yes/no/on/off")
        if isinstance(default, int):
            value = int(text)
            if name.endswith("_PORT") and not 1 <= value <= 65535:
                raise ValueError("expected a port from 1 to 65535")
            return value
        if isinstance(default, float):
            value = float(text)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError("expected a finite number")
            return value
    except ValueError as exc:
        raise SettingError(f"{name}={raw!r} is not valid: {exc}") from None
    if name.startswith("RATE_") and not _RATE.match(text):
        raise SettingError(f"{name}={raw!r} is not valid: expected a rate such as 600/m (per s, m, h or d)")
    if name in CHOICES and text not in CHOICES[name]:
        raise SettingError(f"{name}={raw!r} is not valid: expected one of {', '.join(CHOICES[name])}")
    return text


def env_value(name: str, default: object, environ: dict[str, str] | None = None) -> object:
    environ = os.environ if environ is None else environ
    raw = environ.get(name)
    return default if raw is None or raw == "" else parse_value(name, raw, default)


def env_bool(name: str, default: bool) -> bool:
    return bool(env_value(name, default))


def env_str(name: str, default: str) -> str:
    return str(env_value(name, default))


POSTGRES_SCHEMES = ("postgres", "postgresql", "pgsql")


def postgres_url(entry: dict, *, with_password: bool) -> str:
    """The postgresql:// URL of a PostgreSQL DATABASES entry (what ``database_from_url`` reads); without the
    password unless asked (a command line shows it: it goes in PGPASSWORD there)."""
    user = quote(entry.get("USER") or "")
    if user and with_password and entry.get("PASSWORD"):
        user += ":" + quote(entry["PASSWORD"])
    return (f"postgresql://{user}{'@' if user else ''}{entry.get('HOST') or '127.0.0.1'}:{entry.get('PORT') or 5432}"
            f"/{quote(entry['NAME'])}")


def masked_url(url: str) -> str:
    """``url`` with its password, if any, shown as ***: what a message or a line printed may quote."""
    try:
        parsed = urlparse(url)
        if parsed.password is None:
            return url
    except ValueError:
        return re.sub(r"(//[^/:@]*:)[^@/]*@", r"\1***@", url)
    return parsed._replace(netloc=parsed.netloc.replace(f":{parsed.password}@", ":***@", 1)).geturl()


def _port_of(name: str, url: str) -> int | None:
    try:
        return urlparse(url).port
    except ValueError:
        raise SettingError(f"{name}={masked_url(url)!r} has a port that is not a port number (1-65535)") from None


def database_from_url(url: str) -> dict[str, object]:
    """Django DATABASES entry for a ``postgres://`` or ``sqlite:///`` URL."""
    parsed = urlparse(url)
    if parsed.scheme in POSTGRES_SCHEMES:
        name = parsed.path.lstrip("/")
        if not name:
            raise SettingError(f"DATABASE_URL={masked_url(url)!r} names no database "
                               "(postgres://user:pass@host:5432/NAME)")
        port = _port_of("DATABASE_URL", url)
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(name),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(port or ""),
            "CONN_MAX_AGE": 60,
            # A kept connection that the server dropped (a restart) is found out and replaced before a request
            # uses it, rather than failing that request.
            "CONN_HEALTH_CHECKS": True,
            # Flux runs many small queries (a retrieval about 20, each under a millisecond of work): starting
            # parallel workers for one costs 10-20 ms, more than the query (measured at 10,000 grains).
            "OPTIONS": {"options": "-c max_parallel_workers_per_gather=0"},
        }
    if parsed.scheme == "sqlite":
        # sqlite:///relative/path or sqlite:////absolute/path
        return sqlite_database(unquote(parsed.path[1:]))
    raise SettingError(
        f"DATABASE_URL={masked_url(url)!r} has an unsupported scheme {parsed.scheme!r}; use postgres:// or sqlite:///"
    )


REDIS_SCHEMES = ("redis", "rediss", "unix")


def redis_url_check(url: str) -> str:
    """``url`` when it can name a Redis server (redis://, rediss:// or unix://, a numeric port), else SettingError."""
    scheme = urlparse(url).scheme
    if scheme not in REDIS_SCHEMES:
        raise SettingError(f"REDIS_URL={masked_url(url)!r} has an unsupported scheme {scheme!r}; use "
                           "redis://host:6379/0 (or rediss://, unix://)")
    _port_of("REDIS_URL", url)
    return url


def infrastructure_check(environ: dict[str, str]) -> None:
    """SettingError, naming the variable, unless DATABASE_URL and REDIS_URL (when set) can be used."""
    if environ.get("DATABASE_URL"):
        database_from_url(environ["DATABASE_URL"])
    if environ.get("REDIS_URL"):
        redis_url_check(environ["REDIS_URL"])


# A commit checkpoints only once the log holds this many pages (SQLite's default is 1,000): by then the process's
# checkpoint thread (core.checkpoint) has copied most of them back, and this checkpoint, right after a commit,
# lets the next write start the log from the beginning again (SQLite restarts it only in a write that begins
# with every page copied back, which a thread of its own seldom sees while writes go on: the log then grows).
WAL_BACKSTOP_PAGES = 10_000


def sqlite_database(path: str, *, max_mb: int = 0) -> dict[str, object]:
    """SQLite in WAL mode, with a busy timeout and IMMEDIATE write transactions; with ``max_mb`` the file stops
    growing there (writes then fail as on a full disk)."""
    cap = f" PRAGMA max_page_count={max_mb * 256};" if max_mb > 0 else ""  # pages of 4 KiB, SQLite's default
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # Persistent: each booth thread keeps its connection and its warm page cache.
        "CONN_MAX_AGE": None,
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                "PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-65536; "
                f"PRAGMA wal_autocheckpoint={WAL_BACKSTOP_PAGES};" + cap  # see core.checkpoint
            ),
        },
        # Tests use a file too, so the booth's threads share it (an in-memory database is per connection).
        "TEST": {"NAME": str(Path(path).with_name("test-" + Path(path).name))},
    }
