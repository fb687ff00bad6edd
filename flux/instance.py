"""Instances on disk: ~/.flux/<name>/ (FLUX_HOME overrides the root), their config and environment.

config.yaml holds flat ``KEY: value`` lines (YAML scalars), every key a setting
of the settings table or one of the servers an instance uses (DATABASE_URL,
REDIS_URL: ``flux init`` records those of its environment, so that every later
command uses the same database whatever its shell holds); comments and blank
lines are ignored. No Django import.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from core.defaults import DEFAULTS, SETTINGS
from core.env import SettingError, infrastructure_check, masked_url, parse_value
from core.files import write_private

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_LINE = re.compile(r"^([A-Z][A-Z0-9_]*)\s*:\s*(.*?)\s*$")
# The servers an instance uses, kept in its config.yaml beside the settings (docs/settings.md, "Environment").
SERVERS = {"DATABASE_URL": "postgres://user:pass@host:5432/name selects PostgreSQL (unset: SQLite in this folder).",
           "REDIS_URL": "redis://host:6379/0: the Celery broker, the rate-limit cache and the live events."}


class InstanceError(Exception):
    """A user's mistake about an instance: the message says what and how to fix it."""


def flux_home() -> Path:
    return Path(os.environ.get("FLUX_HOME") or Path.home() / ".flux").expanduser().absolute()


def check_name(name: str) -> str:
    if not NAME.match(name or ""):
        raise InstanceError(f"instance name {name!r} is not valid: use 1-63 lower-case letters, digits, - or _")
    return name


@dataclass(frozen=True)
class Instance:
    name: str
    path: Path

    @classmethod
    def named(cls, name: str) -> Instance:
        return cls(check_name(name), flux_home() / name)

    @classmethod
    def existing(cls, name: str) -> Instance:
        instance = cls.named(name)
        if not instance.config_file.exists():
            raise InstanceError(f"unknown instance {name!r} (no {instance.config_file}); "
                                f"create it with: flux init --name {name}")
        return instance

    @property
    def config_file(self) -> Path:
        return self.path / "config.yaml"

    @property
    def run_dir(self) -> Path:
        return self.path / "run"

    @property
    def log_dir(self) -> Path:
        return self.path / "logs"

    @property
    def integrations(self) -> Path:
        return self.path / "integrations"

    def config(self) -> dict[str, object]:
        """The settings this instance sets, parsed and checked (InstanceError names the bad key)."""
        return read_config(self.config_file)

    def setting(self, name: str) -> object:
        return self.config().get(name, DEFAULTS[name])

    def environ(self) -> dict[str, str]:
        """The environment of every process of this instance. A server its config.yaml names is used; the shell
        naming another one is refused (a command would act on another database than the instance's)."""
        config = self.config()
        for key in SERVERS:
            shell = os.environ.get(key, "")
            if key in config and shell and shell != config[key]:
                raise InstanceError(f"{key} in the environment ({masked_url(shell)}) is not the one instance "
                                    f"{self.name!r} uses ({masked_url(str(config[key]))}, in {self.config_file}); "
                                    f"unset it, or change {key} in that file")
        env = {k: v for k, v in os.environ.items() if k not in DEFAULTS and k != "DJANGO_SETTINGS_MODULE"}
        env.update({k: _env_text(v) for k, v in config.items()})
        try:
            infrastructure_check(env)
        except SettingError as exc:
            where = self.config_file if any(k in config for k in SERVERS) else "the environment"
            raise InstanceError(f"{exc} (in {where})") from None
        env["FLUX_DATA_DIR"] = str(self.path)
        env["DJANGO_SETTINGS_MODULE"] = "fluxsite.settings"
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        env["PYTHONSAFEPATH"] = "1"  # the current folder is not on the path: a package of its own named core, api...
        return env

    def set_config(self, key: str, value: str) -> None:
        """Set one setting in config.yaml (its line, commented or not, else a new one); checked first."""
        if key not in DEFAULTS:
            raise InstanceError(f"unknown setting {key!r}")
        try:
            parse_value(key, value, DEFAULTS[key])
        except SettingError as exc:
            raise InstanceError(str(exc)) from None
        line = f"{key}: {value}"
        lines = self.config_file.read_text(encoding="utf-8").splitlines()
        at = next((i for i, raw in enumerate(lines) if raw.lstrip("# ").startswith(f"{key}:")), None)
        lines = lines[:at] + [line] + lines[at + 1:] if at is not None else [*lines, line]
        write_private(self.config_file, "\n".join(lines) + "\n")

    def make_private(self) -> None:
        """The folder and everything in it the owner's alone: folders 0700, files 0600 (older instances too)."""
        self.path.chmod(0o700)
        for root, dirs, files in os.walk(self.path):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o700)
            for name in files:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o600)

    def database(self) -> str:
        """Where the instance's data is, to show: its PostgreSQL URL without the password, or its SQLite file."""
        url = self.environ().get("DATABASE_URL")
        return masked_url(url) if url else str(self.path / "flux.sqlite3")

    def rest_url(self) -> str:
        return _url(str(self.setting("REST_HOST")), self.setting("REST_PORT"))

    def dashboard_url(self) -> str:
        return _url(str(self.setting("DASHBOARD_HOST")), self.setting("DASHBOARD_PORT"))

    def mcp_url(self) -> str:
        """The MCP server's streamable-HTTP endpoint."""
        return _url(str(self.setting("MCP_HOST")), self.setting("MCP_PORT")) + "/mcp"


def _url(host: str, port: object) -> str:
    """The URL a local client reaches a listener at (a wildcard bind is reached on loopback)."""
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{host}:{port}"


def _env_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def read_config(path: Path) -> dict[str, object]:
    values: dict[str, object] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        match = _LINE.match(line)
        where = f"{path}, line {number}"
        if not match:
            raise InstanceError(f"{where}: expected 'KEY: value', got {raw.strip()!r}")
        key, text = match.groups()
        if key not in DEFAULTS and key not in SERVERS:
            raise InstanceError(f"{where}: unknown setting {key!r}; see docs/settings.md")
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        try:
            values[key] = parse_value(key, text, DEFAULTS[key]) if key in DEFAULTS else text
            if key in SERVERS and text:
                infrastructure_check({key: text})
        except SettingError as exc:
            raise InstanceError(f"{where}: {exc}") from None
    return values


def config_text(values: dict[str, object]) -> str:
    """config.yaml with every setting, commented at its default unless set in ``values``."""
    lines = ["# Flux Memory instance settings: uncomment a line and change it, then `flux stop` and `flux start`.",
             "# Every key is described in docs/settings.md.", ""]
    group = None
    for s in SETTINGS:
        if s.group != group:
            group = s.group
            lines += ["", f"# --- {group} ---"]
        lines.append(f"# {s.description}")
        value = values.get(s.name, s.default)
        shown = _env_text(value)
        if isinstance(value, str) and (not shown or ":" in shown or shown != shown.strip()):
            shown = f'"{shown}"'
        lines.append(f"{'' if s.name in values else '# '}{s.name}: {shown}")
    lines += ["", "# --- Servers (recorded by flux init from its environment; private: this file is 0600) ---"]
    for key, text in SERVERS.items():
        lines += [f"# {text}", f'{key}: "{values[key]}"' if values.get(key) else f'# {key}: ""']
    return "\n".join(lines) + "\n"


def python() -> str:
    return sys.executable
