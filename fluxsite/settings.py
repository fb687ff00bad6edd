"""Flux Memory settings, driven by the environment.

Nothing set: SQLite (WAL) under FLUX_DATA_DIR, in-process channel layer, a
broker that needs no server. DATABASE_URL / REDIS_URL switch to PostgreSQL /
Redis. Flux's own constants live in ``core.defaults`` and are read from the
environment under the same names (see docs/settings.md).
"""
from __future__ import annotations

import os
from pathlib import Path

# One BLAS thread, set before anything imports numpy: the semantic vector search is one matrix-vector product,
# and OpenBLAS's idle threads spin after it and slow the embedding model's own threads (a query embedding took
# 31 ms instead of 13 ms in a retrieval, measured at 10,000 grains).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from django.core.exceptions import ImproperlyConfigured

from core.defaults import DEFAULT_ALLOWED_HOSTS, SETTINGS
from core.env import database_from_url, env_bool, env_str, env_value, sqlite_database
from core.secret import SecretError, instance_secret

BASE_DIR = Path(__file__).resolve().parent.parent
if not env_str("FLUX_DATA_DIR", "") and not (BASE_DIR / "manage.py").exists():  # installed: no folder of its own
    raise ImproperlyConfigured("FLUX_DATA_DIR is not set: run a command on an instance with `flux manage --name NAME "
                               "COMMAND`, or set FLUX_DATA_DIR to its folder (a new memory was made in site-packages)")
DATA_DIR = Path(env_str("FLUX_DATA_DIR", str(BASE_DIR / "var"))).expanduser()
# The instance's folder is private: its database, secret, logs and config are the owner's alone.
os.makedirs(DATA_DIR, mode=0o700, exist_ok=True)

try:
    SECRET_KEY = instance_secret(DATA_DIR, env_str("SECRET_KEY", ""))
except SecretError as exc:
    raise ImproperlyConfigured(str(exc)) from None
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", DEFAULT_ALLOWED_HOSTS).split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    # The stack, bottom up (core, the base, is a plain package): the domain apps, the actions layer, the
    # interfaces (import-linter checks the order: see pyproject.toml and docs/architecture.md).
    "grains",
    "graph",
    "epistemic",
    "dreams",
    "vitals",
    "memory",
    "api",
    "mcp_bridge",
    "dashboard",
    "bench",
]

MIDDLEWARE = [
    "fluxsite.middleware.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "fluxsite.middleware.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "fluxsite.middleware.XFrameOptionsMiddleware",
]

# The dashboard listener (fluxsite.dashboard_asgi) serves its own, read-only URLs; every other process the REST API.
DASHBOARD_LISTENER = env_str("FLUX_LISTENER", "") == "dashboard"
ROOT_URLCONF = "dashboard.urls" if DASHBOARD_LISTENER else "fluxsite.urls"
if DASHBOARD_LISTENER:  # a viewer beyond this machine needs the viewing token (dashboard/access.py); read-only
    # after the security headers' middleware (its refusals carry them too)
    MIDDLEWARE = [MIDDLEWARE[0], "dashboard.access.ViewerMiddleware", "dashboard.views.ReadOnlyMiddleware",
                  *MIDDLEWARE[1:]]
else:  # body size, JSON-only writes from no foreign web page, API keys (api/middleware.py); after the headers'
    MIDDLEWARE = [MIDDLEWARE[0], "api.middleware.RestGateMiddleware", *MIDDLEWARE[1:]]
# Under ASGI the REST listener serves its API through this lighter chain: sessions, CSRF, logins and messages
# belong to the admin (ADMIN_PATH, the full chain); an API call is identified by its key, its views are
# csrf-exempt, and each of those sync middleware would cost it two thread hops (fluxsite/asgi.py). Named one by
# one: a middleware added above is in both chains unless it is added here too.
ADMIN_ONLY_MIDDLEWARE = frozenset({
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
})
API_MIDDLEWARE = [m for m in MIDDLEWARE if m not in ADMIN_ONLY_MIDDLEWARE]
ADMIN_PATH = "/admin"
ASGI_APPLICATION = "fluxsite.asgi.application"
WSGI_APPLICATION = "fluxsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],  # each app's templates/ (dashboard pages, the admin's confirmation page): inside the package
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# Flux's own constants: defaults from core.defaults, overridden by the environment.
FLUX = {s.name: env_value(s.name, s.default) for s in SETTINGS}

_database_url = env_str("DATABASE_URL", "")
DATABASES = {
    "default": database_from_url(_database_url)
    if _database_url
    else sqlite_database(str(DATA_DIR / "flux.sqlite3"), max_mb=int(FLUX["MAX_DATABASE_MB"]))
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JsonParser"],  # DRF's, deep nesting refused as invalid JSON
    "EXCEPTION_HANDLER": "api.rest.exception_handler",
    # ?format= is ours (GET /grains/<id>?format=dossier), not a renderer switch.
    "URL_FORMAT_OVERRIDE": None,
    # OPTIONS described a view with its docstring, the code's own notes: answered 405 like any method not taken.
    "DEFAULT_METADATA_CLASS": None,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "core.logs.RedactFilter"}},  # no token or query text in any line
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}

# A cache shared by the instance's processes: Redis when configured, else a SQLite file of its own in the instance
# folder (atomic add and incr). It holds the request-rate counters (django-ratelimit's core, api/throttle.py).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env_str("REDIS_URL", "")}
    if env_str("REDIS_URL", "")
    else {"BACKEND": "core.cache.SqliteCache", "LOCATION": str(DATA_DIR / "cache" / "cache.sqlite3")}
}

RATELIMIT_USE_CACHE = "default"

# The admin's session: a cookie named for this instance (cookies are not tied to a port, so two instances on one
# host never share one), ending when the browser closes or after ADMIN_SESSION_HOURS.
_COOKIE_PREFIX = "flux_" + "".join(c if c.isalnum() else "_" for c in DATA_DIR.name.lower())[:40]
SESSION_COOKIE_NAME = f"{_COOKIE_PREFIX}_session"
CSRF_COOKIE_NAME = f"{_COOKIE_PREFIX}_csrftoken"
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
SESSION_COOKIE_AGE = max(60, int(float(FLUX["ADMIN_SESSION_HOURS"]) * 3600))
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Strict"
# Bodies larger than this are refused with 413 before they are read (fluxsite/serve.py; here for other servers).
DATA_UPLOAD_MAX_MEMORY_SIZE = int(FLUX["MAX_REQUEST_BYTES"])

REDIS_URL = env_str("REDIS_URL", "")
# Live dashboard events: embedded, the dashboard process tails the persisted activity log (dashboard/relay.py)
# and its in-memory channel layer fans them out to its websockets; with REDIS_URL, every process sends what it
# writes through channels-redis (dashboard/publish.py) to the websockets of every dashboard process.
CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                              "CONFIG": {"hosts": [REDIS_URL], "prefix": "flux"}}
                  if REDIS_URL else {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
CELERY_BROKER_URL = REDIS_URL or f"sqla+sqlite:///{DATA_DIR / 'celery-broker.sqlite3'}"
# A busy broker file waits instead of failing a publish (see NOTES on the SQLAlchemy transport).
CELERY_BROKER_TRANSPORT_OPTIONS = {} if REDIS_URL else {"connect_args": {"timeout": 30}}
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULER = "fluxsite.beat:SingleBeat"  # one beat sends, however many run (a lease in the database)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

