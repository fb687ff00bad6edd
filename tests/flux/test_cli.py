"""The `flux` command line end to end: real processes in a temporary FLUX_HOME on free loopback ports."""
from __future__ import annotations

import http.cookiejar
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from core.defaults import SETTINGS
from core.net import free_port
from graph.semantic import semantic_installed

ROOT = Path(__file__).resolve().parents[2]


def flux(home: Path, *args: str, timeout: float = 180, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FLUX_HOME": str(home), **extra}
    for key in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR"):
        env.pop(key, None)
    return subprocess.run([sys.executable, "-m", "flux", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.fixture
def instance(tmp_path):
    """An initialised instance whose REST and dashboard ports are free ones (the REST port is yielded)."""
    home = tmp_path / "home"
    out = flux(home, "init", "--name", "mem", "--yes")
    assert out.returncode == 0, out.stderr
    port = free_port()
    config = home / "mem" / "config.yaml"
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {port}")
                      .replace("# DASHBOARD_PORT: 7462", f"DASHBOARD_PORT: {free_port()}")
                      .replace("# MCP_PORT: 7464", f"MCP_PORT: {free_port()}"))
    yield home, port
    flux(home, "stop", "--name", "mem")


def test_init_writes_config_database_and_snippets(instance):
    home, _ = instance
    folder = home / "mem"
    config = (folder / "config.yaml").read_text()
    assert all(f"{s.name}:" in config for s in SETTINGS)
    assert "\nOPERATING_MODE: caller_extracts" in config
    assert (folder / "flux.sqlite3").stat().st_size > 0
    names = sorted(p.name for p in (folder / "integrations").iterdir())
    assert names == ["claude_code.json", "claude_code_http.json", "claude_desktop.json", "codex.toml",
                     "codex_http.toml", "cursor.json", "cursor_http.json", "generic.json", "generic_http.json"]
    codex = (folder / "integrations" / "codex.toml").read_text()
    assert '[mcp_servers."flux-mem"]' in codex and '"-P", "-m", "flux", "mcp", "--name", "mem"' in codex
    spec = json.loads((folder / "integrations" / "cursor.json").read_text())["mcpServers"]["flux-mem"]
    assert spec["args"][-2:] == ["--name", "mem"] and spec["env"]["FLUX_HOME"] == str(home)


def test_init_asks_the_mode_at_a_terminal_and_ctrl_d_there_makes_nothing(tmp_path):
    import pty

    home = tmp_path / "home"
    master, slave = pty.openpty()  # stdin a terminal: the mode is asked
    env = {**{k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")},
           "FLUX_HOME": str(home)}
    asked = subprocess.Popen([sys.executable, "-m", "flux", "init", "--name", "mem"], cwd=ROOT, env=env, stdin=slave,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(slave)
    try:
        os.write(master, b"\x04")  # Ctrl-D: a traceback of EOFError before
        out, err = asked.communicate(timeout=120)
    finally:
        os.close(master)
    assert asked.returncode == 1 and "no mode chosen; nothing was made" in err and "Traceback" not in err, err
    assert not (home / "mem").exists()


def test_manage_runs_a_command_as_a_process_of_the_instance(instance):
    """Its folder, settings and servers (by hand, without FLUX_DATA_DIR, a command made a new empty memory)."""
    home, _ = instance
    shown = flux(home, "manage", "--name", "mem", "showmigrations", "grains")
    assert shown.returncode == 0 and "[X] 0010_relation_notes_off_the_log" in shown.stdout, shown.stderr
    where = flux(home, "manage", "--name", "mem", "shell", "-c", "from django.conf import settings; "
                 "print(settings.DATA_DIR, settings.DATABASES['default']['NAME'])")
    assert where.stdout.splitlines()[-1].split() == [str(home / "mem"), str(home / "mem" / "flux.sqlite3")], \
        where.stdout + where.stderr
    bare = flux(home, "manage", "--name", "mem")
    assert bare.returncode == 1 and "give the command" in bare.stderr and "Traceback" not in bare.stderr


def test_python_m_flux_works_in_a_folder_holding_packages_named_as_ours(tmp_path):
    """`-m` puts the current folder first on the path: its core/ shadowed ours (ModuleNotFoundError)."""
    for package in ("core", "api", "memory", "grains"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("raise ImportError('the project in the current folder')\n")
    env = {**os.environ, "FLUX_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-m", "flux", "status", "--name", "nope"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "unknown instance 'nope'" in out.stderr and "Traceback" not in out.stderr


def test_init_refuses_to_overwrite_without_force(instance):
    home, _ = instance
    again = flux(home, "init", "--name", "mem", "--yes")
    assert again.returncode == 1 and "already exists" in again.stderr and "--force" in again.stderr
    config = home / "mem" / "config.yaml"
    config.write_text(config.read_text().replace("# TOP_K: 5", "TOP_K: 9"))
    ports = {key: config_port(home, key) for key in ("REST_PORT", "DASHBOARD_PORT", "MCP_PORT")}
    forced = flux(home, "init", "--name", "mem", "--mode", "flux_extracts", "--force")
    assert forced.returncode == 0
    assert "\nOPERATING_MODE: flux_extracts" in config.read_text()
    # The settings set in it are kept (they were all dropped: ports, keys, limits), the mode too when none is given.
    again = flux(home, "init", "--name", "mem", "--force")
    assert again.returncode == 0 and "\nTOP_K: 9\n" in config.read_text() and "(mode flux_extracts)" in again.stdout
    assert {key: config_port(home, key) for key in ports} == ports


def test_start_status_stop_leave_nothing_behind(instance):
    home, port = instance
    started = flux(home, "start", "--name", "mem")
    assert started.returncode == 0, started.stderr
    forced = flux(home, "init", "--name", "mem", "--yes", "--force")  # its processes go on with what they read
    assert forced.returncode == 1 and "is running; `flux stop --name mem` first" in forced.stderr
    assert f"http://127.0.0.1:{port}" in started.stdout
    pid = int((home / "mem" / "run" / "rest.pid").read_text())
    worker = int((home / "mem" / "run" / "worker.pid").read_text())
    dashboard = int((home / "mem" / "run" / "dashboard.pid").read_text())
    mcp = int((home / "mem" / "run" / "mcp.pid").read_text())
    assert alive(pid) and alive(worker) and alive(dashboard) and alive(mcp)
    assert f"MCP (HTTP): http://127.0.0.1:{config_port(home, 'MCP_PORT')}/mcp" in started.stdout
    snippet = json.loads((home / "mem" / "integrations" / "claude_code_http.json").read_text())  # init's port before
    assert snippet["mcpServers"]["flux-mem"]["url"] == f"http://127.0.0.1:{config_port(home, 'MCP_PORT')}/mcp"
    dashboard_url = f"http://127.0.0.1:{dashboard_port(home)}/"
    assert f"Dashboard: {dashboard_url}" in started.stdout
    assert urllib.request.urlopen(dashboard_url, timeout=30).status == 200
    again = flux(home, "start", "--name", "mem")
    assert again.returncode == 0 and "already running" in again.stdout and str(pid) in again.stdout
    # Other process counts while it runs: said to need a restart, and nothing written its supervisor would not do.
    config = (home / "mem" / "config.yaml").read_text()
    recount = flux(home, "start", "--name", "mem", "--web-workers", "3", "--workers", "2")
    assert recount.returncode == 1 and "is running with WEB_WORKERS=1, TASK_WORKERS=1" in recount.stderr
    assert "`flux start --name mem --web-workers 3 --workers 2`" in recount.stderr, recount.stderr
    assert (home / "mem" / "config.yaml").read_text() == config
    body = json.dumps({"content": "The spare key is under the blue pot"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/store", data=body,
                                     headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(request, timeout=30).status == 201
    status = flux(home, "status", "--name", "mem")
    assert status.returncode == 0 and "running" in status.stdout and "active 1" in status.stdout
    assert f"Dashboard: {dashboard_url}" in status.stdout
    assert "signals:   14" in status.stdout and "warning:   none" in status.stdout
    # Instances read their settings from config.yaml only: semantic entry is on where the extra is installed.
    assert ("retrieval: lexical + semantic (all-MiniLM-L6-v2-int8)" if semantic_installed()
            else "retrieval: lexical only (the embedding model is not installed)") in status.stdout
    stopped = flux(home, "stop", "--name", "mem")
    assert stopped.returncode == 0 and all(str(p) in stopped.stdout for p in (pid, worker, dashboard, mcp))
    assert not alive(pid) and not alive(worker) and not alive(dashboard) and not alive(mcp)
    assert not list((home / "mem" / "run").glob("*.pid"))
    after = flux(home, "status", "--name", "mem")
    assert after.returncode == 1 and "not running" in after.stdout


def config_port(home: Path, key: str) -> int:
    config = (home / "mem" / "config.yaml").read_text()
    return int(config.split(f"\n{key}: ")[1].split()[0])


def dashboard_port(home: Path) -> int:
    return config_port(home, "DASHBOARD_PORT")


def test_admin_link_logs_in_once(instance):
    home, port = instance
    assert flux(home, "start", "--name", "mem").returncode == 0
    out = flux(home, "admin", "--name", "mem")
    assert out.returncode == 0, out.stderr
    link = out.stdout.splitlines()[0]
    assert link.startswith(f"http://127.0.0.1:{port}/admin/login-link/")
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    page = browser.open(link, timeout=30)
    assert page.status == 200 and page.url == f"http://127.0.0.1:{port}/admin/"
    assert "Site administration" in page.read().decode()
    with pytest.raises(urllib.error.HTTPError) as second:
        urllib.request.urlopen(link, timeout=30)
    assert second.value.code == 403 and b"used already" in second.value.read()


@pytest.mark.parametrize("args,text", [
    (["start", "--name", "ghost"], "unknown instance 'ghost'"),
    (["status", "--name", "ghost"], "flux init --name ghost"),
    (["init", "--name", "Bad Name!"], "instance name 'Bad Name!' is not valid"),
])
def test_wrong_use_gets_a_message_not_a_traceback(tmp_path, args, text):
    out = flux(tmp_path, *args)
    assert out.returncode == 1 and text in out.stderr and "Traceback" not in out.stderr


def test_manage_commands_say_a_missing_schema_and_an_unwritable_backup_in_one_line(tmp_path):
    def manage(*args: str) -> subprocess.CompletedProcess:
        env = {**{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
               "FLUX_DATA_DIR": str(tmp_path / "data")}
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)

    for command in (["flux_recount"], ["flux_export", "--to", str(tmp_path / "memory.jsonl")]):
        out = manage(*command)
        assert out.returncode == 1 and "no Flux Memory tables yet" in out.stderr and "migrate" in out.stderr
        assert "Traceback" not in out.stderr, out.stderr
    assert manage("migrate", "--no-input").returncode == 0
    out = manage("flux_backup", "--to", "/proc/flux-backup.sqlite3")
    assert out.returncode == 1 and "cannot write the copy at /proc/flux-backup.sqlite3" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("variable,value,text", [
    ("DATABASE_URL", "postgres://flux:topsecret@127.0.0.1:{port}/flux", "cannot reach the database, PostgreSQL at"),
    ("DATABASE_URL", "postgres://flux:topsecret@127.0.0.1:notaport/flux", "not a port number"),
    ("DATABASE_URL", "postgres://flux:topsecret@127.0.0.1:5432/", "names no database"),
    ("DATABASE_URL", "mysql://flux:topsecret@127.0.0.1/flux", "unsupported scheme 'mysql'"),
    ("REDIS_URL", "redis://:topsecret@127.0.0.1:{port}/0", "cannot reach Redis at redis://:***@127.0.0.1:"),
    ("REDIS_URL", "http://127.0.0.1:{port}", "unsupported scheme 'http'"),
])
def test_a_wrong_server_url_is_one_line_and_init_leaves_nothing(tmp_path, variable, value, text):
    """A server that does not answer, or a URL that cannot name one: one line naming it (its password hidden),
    and no half-made instance, so the same command, corrected, just works."""
    out = flux(tmp_path, "init", "--name", "mem", "--yes", **{variable: value.format(port=free_port())})
    assert out.returncode == 1 and text in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert "topsecret" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (tmp_path / "mem").exists()


def test_the_database_init_was_given_is_the_one_every_later_command_uses(tmp_path):
    """DATABASE_URL recorded in config.yaml (0600) by init: a later command whose shell lacks it uses it, not a new
    SQLite file in the folder; a shell naming another database is refused; init --force keeps it."""
    home, other = tmp_path / "home", tmp_path / "elsewhere"
    other.mkdir()
    url = f"sqlite:///{other / 'memory.sqlite3'}"
    made = flux(home, "init", "--name", "mem", "--yes", DATABASE_URL=url)
    assert made.returncode == 0, made.stderr
    assert f"database:     {url}" in made.stdout
    config = home / "mem" / "config.yaml"
    assert f'\nDATABASE_URL: "{url}"\n' in config.read_text() and config.stat().st_mode & 0o777 == 0o600
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    backup = tmp_path / "copy.sqlite3"
    out = subprocess.run([sys.executable, "-m", "flux", "backup", "--name", "mem", "--to", str(backup)], cwd=ROOT,
                         env={**env, "FLUX_HOME": str(home)}, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(backup) as copy:  # the recorded database's tables, not an empty new file's
        assert copy.execute("SELECT count(*) FROM django_migrations").fetchone()[0] > 10
    assert not (home / "mem" / "flux.sqlite3").exists()
    refused = flux(home, "backup", "--name", "mem", "--to", str(backup),
                   DATABASE_URL="postgres://flux:topsecret@127.0.0.1:5432/other")
    assert refused.returncode == 1 and "is not the one instance 'mem' uses" in refused.stderr, refused.stderr
    assert "postgres://flux:***@127.0.0.1:5432/other" in refused.stderr and "topsecret" not in refused.stderr
    again = subprocess.run([sys.executable, "-m", "flux", "init", "--name", "mem", "--yes", "--force"], cwd=ROOT,
                           env={**env, "FLUX_HOME": str(home)}, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0 and f'\nDATABASE_URL: "{url}"\n' in config.read_text(), again.stderr


@pytest.mark.parametrize("flag", ["--web-workers", "--workers"])
def test_a_bad_process_count_names_the_option_it_came_from(instance, flag):
    home, _ = instance
    out = flux(home, "start", "--name", "mem", flag, "0")
    assert out.returncode == 1 and f"{flag} 0; give a whole number from 1 to" in out.stderr, out.stderr
    assert "config.yaml" not in out.stderr and "Traceback" not in out.stderr


def test_stop_and_admin_when_not_running(instance):
    home, _ = instance
    for command in ("stop", "admin"):
        out = flux(home, command, "--name", "mem")
        assert out.returncode == 1 and "not running" in out.stderr and "Traceback" not in out.stderr


def _supervisors(home: Path) -> list[int]:
    """Pids of the `flux supervise` processes of the instances under ``home``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if b"supervise" in (proc / "cmdline").read_bytes() and \
                    f"FLUX_HOME={home}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def test_two_starts_at_once_run_one_supervisor_and_stop_ends_it(instance):
    home, port = instance
    env = {**{k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")},
           "FLUX_HOME": str(home)}
    starts = [subprocess.Popen([sys.executable, "-m", "flux", "start", "--name", "mem"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
              for _ in range(2)]
    outs = [start.communicate(timeout=180) for start in starts]
    assert [start.returncode for start in starts] == [0, 0], outs
    said = sorted("already running" in out for out, _ in outs)
    assert said == [False, True], outs  # one started it, the other found it running
    assert len(_supervisors(home)) == 1
    assert flux(home, "stop", "--name", "mem").returncode == 0
    assert _until(lambda: not _supervisors(home), 30)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


@pytest.mark.parametrize("line,text", [
    ("REST_PORT: 99999", "REST_PORT='99999' is not valid: expected a port from 1 to 65535"),
    ("MCP_PORT: 0", "MCP_PORT='0' is not valid: expected a port from 1 to 65535"),
    ("REST_PORT: seven", "REST_PORT='seven' is not valid"),
    ("ATTENUATON: 0.5", "unknown setting 'ATTENUATON'"),
    ("just words", "expected 'KEY: value'"),
])
def test_a_bad_config_value_names_the_key_and_line(instance, line, text):
    home, _ = instance
    config = home / "mem" / "config.yaml"
    config.write_text(config.read_text() + line + "\n")
    out = flux(home, "start", "--name", "mem")
    assert out.returncode == 1 and text in out.stderr and "config.yaml, line" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("which", ["REST_PORT", "DASHBOARD_PORT", "MCP_PORT"])
def test_a_port_in_use_is_reported(instance, which):
    home, port = instance
    port = port if which == "REST_PORT" else config_port(home, which)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        out = flux(home, "start", "--name", "mem")
    assert out.returncode == 1 and f"port {port} on 127.0.0.1 is in use" in out.stderr and which in out.stderr
    assert not list((home / "mem" / "run").glob("*.pid"))


def test_two_services_on_one_port_are_refused(instance):
    home, port = instance
    config = home / "mem" / "config.yaml"
    mcp = config_port(home, "MCP_PORT")
    config.write_text(config.read_text().replace(f"MCP_PORT: {mcp}", f"MCP_PORT: {port}"))
    out = flux(home, "start", "--name", "mem")
    assert out.returncode == 1 and f"REST_PORT and MCP_PORT are both {port}" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not _supervisors(home)


def test_the_console_script_is_installed():
    script = Path(sys.executable).parent / "flux"
    assert script.exists(), "pip install -e . installs the flux script"
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "init" in out.stdout and "mcp-config" in out.stdout


def test_beat_runs_the_decay_sweep_in_the_worker(instance):
    import sqlite3
    import time

    home, _ = instance
    config = home / "mem" / "config.yaml"
    config.write_text(config.read_text() + "DECAY_INTERVAL_SECONDS: 1\n")
    assert flux(home, "start", "--name", "mem").returncode == 0
    sweeps, deadline = [], time.monotonic() + 60
    while len(sweeps) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
        with sqlite3.connect(home / "mem" / "flux.sqlite3", timeout=30) as db:
            sweeps = db.execute("SELECT payload FROM grains_activityevent WHERE kind = 'graph.decay_swept'").fetchall()
    assert len(sweeps) >= 2, (home / "mem" / "logs" / "worker.log").read_text()[-2000:]


def _store(port: int, content: str) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/store", data=json.dumps({"content": content}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["grain"]["id"]


def test_admin_actions_for_scripts_need_the_token_they_print(instance):
    home, port = instance
    assert flux(home, "start", "--name", "mem").returncode == 0
    gid = _store(port, "The storage unit code is 5150")
    found = flux(home, "admin", "--name", "mem", "search", "storage unit")
    assert found.returncode == 0 and f"#{gid} [active] The storage unit code is 5150" in found.stdout
    asked = flux(home, "admin", "--name", "mem", "purge", str(gid), "--reason", "leaked")
    assert asked.returncode != 0 and "run again with --token" in asked.stderr and "Traceback" not in asked.stderr
    token = asked.stderr.split("--token ")[1].split()[0]
    wrong = flux(home, "admin", "--name", "mem", "purge", str(gid), "--reason", "leaked", "--token", "0000-0000")
    assert wrong.returncode != 0 and "run again with --token" in wrong.stderr
    done = flux(home, "admin", "--name", "mem", "purge", str(gid), "--reason", "leaked", "--token", token)
    assert done.returncode == 0 and f"purged grain {gid}" in done.stdout
    assert f"flux-terminal:admin purge #{gid}: leaked" in flux(home, "admin", "--name", "mem", "audit").stdout
    restore_token = flux(home, "admin", "--name", "mem", "restore", str(gid), "--reason", "mistake").stderr.split(
        "--token ")[1].split()[0]
    back = flux(home, "admin", "--name", "mem", "restore", str(gid), "--reason", "mistake", "--token", restore_token)
    assert back.returncode == 0 and f"restored grain {gid}" in back.stdout
    dossier = flux(home, "admin", "--name", "mem", "export", str(gid))
    assert json.loads(dossier.stdout)["content"] == "The storage unit code is 5150"
    assert "needs --reason" in flux(home, "admin", "--name", "mem", "purge", str(gid)).stderr
    # A query's words without quotes are one query; what an action does not take is said, in the command's name.
    words = flux(home, "admin", "--name", "mem", "search", "storage", "unit")
    assert words.returncode == 0 and f"#{gid} [active] The storage unit code is 5150" in words.stdout, words.stderr
    for args, text in ((["audit", "extra"], "audit takes no argument"), (["link", "extra"], "link takes nothing"),
                       (["bogus"], "flux admin --name NAME: error: argument action: invalid choice: 'bogus'")):
        out = flux(home, "admin", "--name", "mem", *args)
        assert out.returncode != 0 and text in out.stderr and "__main__" not in out.stderr, out.stderr


def test_admin_menu_is_driven_through_standard_input(instance):
    home, port = instance
    assert flux(home, "start", "--name", "mem").returncode == 0
    gid = _store(port, "Bo keeps the spare key under the blue pot")
    env = {**os.environ, "FLUX_HOME": str(home)}
    for key in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR"):
        env.pop(key, None)
    menu = subprocess.Popen([sys.executable, "-m", "flux", "admin", "--name", "mem"], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    while not any("Confirmation token for this session" in line for line in lines):
        line = menu.stdout.readline()
        assert line, menu.stderr.read()
        lines.append(line)
    token = lines[-1].rsplit(" ", 1)[1].strip()
    script = ["1", "spare key", "9", "2", str(gid), "key leaked", "WRONG", "2", str(gid), "key leaked", token,
              "4", "3", str(gid), "undo", token, "q"]
    out, err = menu.communicate("\n".join(script) + "\n", timeout=120)
    assert menu.returncode == 0, err
    assert lines[0].startswith(f"http://127.0.0.1:{port}/admin/login-link/")
    assert f"#{gid} [active] Bo keeps the spare key" in out
    assert "the token does not match; nothing was done" in out
    assert f"purged grain {gid}" in out and f"flux-terminal:admin purge #{gid}: key leaked" in out
    assert f"restored grain {gid}" in out
    assert "no choice '9': type a number of the menu, or q" in out
    # Ctrl-C at the prompt (the terminal's SIGINT to the whole group) ends the menu without a traceback.
    import signal

    again = subprocess.Popen([sys.executable, "-m", "flux", "admin", "--name", "mem"], cwd=ROOT, env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    while "Confirmation token for this session" not in (line := again.stdout.readline()):
        assert line, again.stderr.read()
    time.sleep(0.5)  # at the prompt
    os.killpg(again.pid, signal.SIGINT)
    _, err = again.communicate(timeout=60)
    assert again.returncode in (0, 130) and "Traceback" not in err, err


def test_broadcast_opens_only_the_dashboard_to_the_lan(tmp_path):
    """What `flux start --broadcast` would run (planned, not bound: tests listen on loopback only)."""
    from flux import processes
    from flux.instance import Instance

    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "config.yaml").write_text("REST_PORT: 8001\nDASHBOARD_PORT: 8002\n")
    instance = Instance("mem", folder)
    plan = {s.name: s for s in processes.services(instance, broadcast=True)}
    assert plan["dashboard"].argv[-5:] == ["-b", "0.0.0.0", "-p", "8002", "fluxsite.dashboard_asgi:application"]
    assert plan["rest"].argv[-5:] == ["-b", "127.0.0.1", "-p", "8001", "fluxsite.asgi:application"]
    quiet = {s.name: s for s in processes.services(instance)}
    assert quiet["dashboard"].argv[-4] == "127.0.0.1"
    board = processes._environ(instance, plan["dashboard"], broadcast=True, view_token="t0ken")
    hosts = board["ALLOWED_HOSTS"].split(",")
    assert socket.gethostname() in hosts and "127.0.0.1" in hosts and board["FLUX_VIEW_TOKEN"] == "t0ken"
    rest = processes._environ(instance, plan["rest"], broadcast=True, view_token="t0ken")
    assert "ALLOWED_HOSTS" not in rest and "FLUX_VIEW_TOKEN" not in rest


def test_scripts_run_runs_the_whole_service_until_ctrl_c(tmp_path):
    """scripts/run is `flux start --foreground` on the instance var/: REST, dashboard, MCP and the worker with beat,
    whose decay sweep shows on the dashboard's activity; SIGINT stops all four and leaves nothing running."""
    import signal
    import time

    home = tmp_path / "home"
    assert flux(home, "init", "--name", "var", "--yes").returncode == 0
    config = home / "var" / "config.yaml"
    dashboard = free_port()
    config.write_text(config.read_text().replace("# REST_PORT: 7465", f"REST_PORT: {free_port()}")
                      .replace("# DASHBOARD_PORT: 7462", f"DASHBOARD_PORT: {dashboard}")
                      .replace("# MCP_PORT: 7464", f"MCP_PORT: {free_port()}")
                      .replace("# DECAY_INTERVAL_SECONDS: 3600", "DECAY_INTERVAL_SECONDS: 2"))
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "FLUX_DATA_DIR")}
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        run = subprocess.Popen(["bash", str(ROOT / "scripts" / "run")], env={**env, "FLUX_HOME": str(home)},
                               stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        kinds: set[str] = set()
        deadline = time.monotonic() + 120
        while "graph.decay_swept" not in kinds and time.monotonic() < deadline and run.poll() is None:
            time.sleep(1)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/api/activity", timeout=10) as response:
                    kinds = {e["kind"] for e in json.load(response)["events"]}
            except (urllib.error.URLError, OSError):
                continue
        assert "graph.decay_swept" in kinds, log.read_text()[-3000:]
        pids = {p.stem: int(p.read_text()) for p in (home / "var" / "run").glob("*.pid")}
        assert set(pids) == {"rest", "dashboard", "mcp", "worker", "supervisor"}
        assert all(alive(p) for p in pids.values())
        run.send_signal(signal.SIGINT)
        assert run.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
    assert not any(alive(p) for p in pids.values())
    assert not list((home / "var" / "run").glob("*.pid"))


def _pid(home: Path, service: str) -> int | None:
    try:
        return int((home / "mem" / "run" / f"{service}.pid").read_text())
    except (OSError, ValueError):
        return None


def _group(pgid: int) -> list[int]:
    """The live processes of a process group."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().split(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _until(condition, seconds: float = 60) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_a_service_killed_is_restarted_and_status_tells_the_truth(instance):
    import signal

    home, port = instance
    assert flux(home, "start", "--name", "mem").returncode == 0
    supervisor, rest, worker = _pid(home, "supervisor"), _pid(home, "rest"), _pid(home, "worker")
    os.kill(supervisor, signal.SIGSTOP)  # hold the supervisor still to see the gap
    try:
        os.kill(rest, signal.SIGKILL)
        assert _until(lambda: not alive(rest))
        gap = flux(home, "status", "--name", "mem")
        assert gap.returncode == 1 and "degraded" in gap.stdout
        assert "rest:       not running (its supervisor restarts it)" in gap.stdout
        again = flux(home, "start", "--name", "mem")
        assert again.returncode == 0 and "rest not running: its supervisor restarts it" in again.stdout
    finally:
        os.kill(supervisor, signal.SIGCONT)
    assert _until(lambda: _pid(home, "rest") not in (None, rest) and alive(_pid(home, "rest")))
    os.kill(worker, signal.SIGKILL)
    assert _until(lambda: _pid(home, "worker") not in (None, worker))
    assert _until(lambda: not _group(worker)), "the killed worker's beat lives on beside its successor"
    assert _until(lambda: flux(home, "status", "--name", "mem").returncode == 0)
    log = (home / "mem" / "logs" / "supervisor.log").read_text()
    assert f"rest (pid {rest}) killed by signal 9; restarting in 1 s" in log
    assert f"worker (pid {worker}) killed by signal 9; restarting in 1 s" in log
    request = urllib.request.Request(f"http://127.0.0.1:{port}/store", data=b'{"content": "after the restart"}',
                                     headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(request, timeout=30).status == 201


def test_a_pid_file_naming_another_program_is_never_acted_on(instance, tmp_path):
    """Pid files naming live processes that are not the instance's, though their command lines carry the words
    looked for (a reused pid, a file copied from another instance): status and start ignore them, stop signals
    none of them."""
    home, _ = instance
    others = tmp_path / "elsewhere"
    others.mkdir()
    strangers = {name: subprocess.Popen([argv0, "600"], executable="/bin/sleep", cwd=others)
                 for name, argv0 in (("supervisor", "fluxnotes-viewer"), ("rest", "fluxsite.asgi-lookalike"))}
    try:
        run = home / "mem" / "run"
        run.mkdir(exist_ok=True)
        for name, proc in strangers.items():
            (run / f"{name}.pid").write_text(f"{proc.pid}\n")
        status = flux(home, "status", "--name", "mem")
        assert status.returncode == 1 and "not running" in status.stdout
        assert str(strangers["rest"].pid) not in status.stdout
        for name, proc in strangers.items():
            (run / f"{name}.pid").write_text(f"{proc.pid}\n")
        stopped = flux(home, "stop", "--name", "mem")
        assert all(proc.poll() is None for proc in strangers.values()), stopped.stdout
        for name, proc in strangers.items():
            (run / f"{name}.pid").write_text(f"{proc.pid}\n")
        started = flux(home, "start", "--name", "mem")
        assert started.returncode == 0 and "Started instance 'mem'" in started.stdout, started.stdout + started.stderr
        assert _pid(home, "supervisor") not in (None, strangers["supervisor"].pid)
        assert _pid(home, "rest") not in (None, strangers["rest"].pid)
        assert flux(home, "stop", "--name", "mem").returncode == 0
        assert all(proc.poll() is None for proc in strangers.values())
    finally:
        for proc in strangers.values():
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("web_workers", [1, 2])
def test_services_outliving_their_supervisor_are_adopted_not_started_twice(instance, web_workers):
    """With two REST processes, one killed with the supervisor: the other still holds the shared port, and is
    adopted beside the others while the dead one starts again (its own port is no other program's)."""
    import signal

    home, _ = instance
    assert flux(home, "start", "--name", "mem", "--web-workers", str(web_workers)).returncode == 0
    names = ("rest", "dashboard", "worker", "mcp", *(["rest-2"] if web_workers > 1 else []))
    before = {s: _pid(home, s) for s in names}
    supervisor = _pid(home, "supervisor")
    os.kill(supervisor, signal.SIGKILL)
    if web_workers > 1:
        os.kill(before.pop("rest"), signal.SIGKILL)
    assert _until(lambda: not alive(supervisor))
    orphaned = flux(home, "status", "--name", "mem")
    assert orphaned.returncode == 1 and "the services run unsupervised" in orphaned.stdout
    adopted = flux(home, "start", "--name", "mem")
    assert adopted.returncode == 0 and "running without their supervisor" in adopted.stdout, adopted.stderr
    assert {s: _pid(home, s) for s in before} == before and all(alive(p) for p in before.values())
    assert alive(_pid(home, "supervisor")) and _pid(home, "supervisor") != supervisor
    assert _until(lambda: flux(home, "status", "--name", "mem").returncode == 0)
    before["rest"] = _pid(home, "rest")
    stopped = flux(home, "stop", "--name", "mem")
    assert stopped.returncode == 0 and not any(alive(p) for p in before.values())
