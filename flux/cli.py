"""The `flux` command line: init, start, stop, status, mcp, mcp-config, admin."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from core.defaults import CHOICES
from core.env import SettingError, infrastructure_check
from core.files import write_private
from core.keys import (
    KEYS_FILE,
    KeySettingError,
    add_to_file,
    key_hash,
    loopback,
    parse_setting,
    read_file,
    remove_from_file,
)
from core.net import http_answers
from core.secret import SECRET_FILE, SecretError, instance_secret
from core.version import flux_version
from flux import processes
from flux.instance import SERVERS, Instance, InstanceError, config_text, python, read_config
from flux.integrations import write_snippets
from flux.supervisor import Supervisor

MODES = CHOICES["OPERATING_MODE"]


def cmd_init(args: argparse.Namespace) -> int:
    instance = Instance.named(args.name)
    if instance.config_file.exists() and not args.force:
        raise InstanceError(f"instance {args.name!r} already exists at {instance.path}; use --force to rewrite its "
                            "config (the settings set in it kept) and snippets (the database is kept)")
    if instance.config_file.exists() and (processes.running(instance) or processes.supervisor_pid(instance)):
        raise InstanceError(f"instance {args.name!r} is running; `flux stop --name {args.name}` first, then init "
                            "--force (its processes would go on with the settings they read)")
    # With --force the settings set in config.yaml are kept (its ports, keys, limits: only the mode given
    # replaces its own), and the servers too unless the environment names others: every later command uses them,
    # whatever its shell holds.
    kept = read_config(instance.config_file) if instance.config_file.exists() else {}
    mode = args.mode or kept.get("OPERATING_MODE") or _ask_mode(args.yes)
    servers = {k: value for k in SERVERS if (value := os.environ.get(k) or kept.get(k))}
    try:
        infrastructure_check(servers)
    except SettingError as exc:
        raise InstanceError(str(exc)) from None
    made = not instance.path.exists()
    instance.path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        write_private(instance.config_file, config_text({**kept, "OPERATING_MODE": mode, **servers}))
        instance_secret(instance.path)
        processes.migrate(instance)
    except (InstanceError, SecretError) as exc:
        if made:  # nothing half-made is left: the same command, corrected, starts afresh
            shutil.rmtree(instance.path, ignore_errors=True)
        raise InstanceError(str(exc)) from None
    written = write_snippets(instance)
    instance.make_private()
    print(f"Created instance {args.name!r} in {instance.path} (mode {mode}).")
    print(f"  config:       {instance.config_file}")
    print(f"  database:     {instance.database()}")
    print(f"  secret:       {instance.path / SECRET_FILE} (random, readable by you only)")
    print(f"  MCP snippets: {', '.join(p.name for p in written)} in {instance.integrations}")
    print(f"Next: flux start --name {args.name}")
    return 0


def _ask_mode(assume_default: bool) -> str:
    if assume_default or not sys.stdin.isatty():
        return MODES[0]
    while True:
        try:
            answer = input(f"Operating mode [{'/'.join(MODES)}] ({MODES[0]}): ").strip() or MODES[0]
        except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C at the question: nothing made yet
            print()
            raise InstanceError(f"no mode chosen; nothing was made (--mode {MODES[0]} or --yes takes the "
                                "default)") from None
        if answer in MODES:
            return answer
        print(f"Please answer one of: {', '.join(MODES)}")


def cmd_start(args: argparse.Namespace) -> int:
    instance = Instance.existing(args.name)
    instance.config()
    wanted = {"WEB_WORKERS": args.web_workers, "TASK_WORKERS": args.workers}
    processes.process_counts(instance, **wanted)  # checked before anything starts
    changed = {key: value for key, value in wanted.items() if value is not None and value != instance.setting(key)}
    with processes.start_lock(instance):  # two starts at once: the second finds the first's supervisor
        already = processes.running(instance)
        supervisor = processes.supervisor_pid(instance)
        if supervisor is not None:
            if args.foreground:
                raise InstanceError(f"instance {args.name!r} is already running in the background (supervisor pid "
                                    f"{supervisor}); `flux stop --name {args.name}` first")
            if changed:  # its supervisor runs the counts it started with; nothing is written that it would not do
                now = ", ".join(f"{key}={instance.setting(key)}" for key in changed)
                flags = " ".join(f"--{processes.FLAGS[key]} {value}" for key, value in changed.items())
                raise InstanceError(f"instance {args.name!r} is running with {now}; to change it, `flux stop --name "
                                    f"{args.name}`, then `flux start --name {args.name} {flags}`")
            missing = [s.name for s in processes.services(instance) if s.name not in already]
            print(f"Instance {args.name!r} is already running ({_pids({'supervisor': supervisor, **already})}) at "
                  f"{instance.rest_url()}" + (f"; {', '.join(missing)} not running: its supervisor restarts it"
                                              if missing else ""))
            return 0
        for key, value in changed.items():  # they hold for the next start too
            instance.set_config(key, str(value))
            print(f"{key} set to {value} in {instance.config_file}")
        write_snippets(instance)  # with the ports and key config.yaml holds now (they kept init's)
        if already:
            print(f"Found {_pids(already)} running without their supervisor (it was killed): adopting them, "
                  "starting the rest.")
        if not args.foreground:
            pid = processes.start(instance, broadcast=args.broadcast)
            print(f"Started instance {args.name!r} ({_pids({'supervisor': pid, **processes.running(instance)})}); "
                  f"logs in {instance.log_dir}")
            _started(instance, args)
            return 0
        # This process, before the lock goes; working in the instance's folder, as every process of it does: so
        # its pid file is known to be its own (processes.live_pid).
        os.chdir(instance.path)
        (instance.run_dir / "supervisor.pid").write_text(f"{os.getpid()}\n")
    return _start_foreground(instance, args)


def _started(instance: Instance, args: argparse.Namespace) -> None:
    _print_urls(instance, broadcast=args.broadcast)
    print(f"  Admin:     flux admin --name {args.name}")
    print(f"  MCP:       add a snippet from {instance.integrations} to your MCP client (stdio or HTTP)")


def _start_foreground(instance: Instance, args: argparse.Namespace) -> int:
    """The supervisor in this terminal: services restarted when they die, all stopped by Ctrl-C (or SIGTERM)."""
    token = processes.prepare(instance, broadcast=args.broadcast, running_now=processes.running(instance))
    log_path = instance.log_dir / "supervisor.log"

    def log(line: str) -> None:
        print(line, flush=True)
        with open(log_path, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    supervisor = Supervisor(instance, broadcast=args.broadcast, token=token, log=log)
    (instance.run_dir / "supervisor.pid").write_text(f"{os.getpid()}\n")
    try:
        supervisor.start_all()
        try:
            processes.wait_ready(instance, timeout=60.0, failed=lambda: None)
        except InstanceError:
            supervisor.stop_all()
            raise
        print(f"Started instance {args.name!r} ({_pids(processes.running(instance))}); logs in {instance.log_dir}")
        _started(instance, args)
        print("Running in the foreground; services that die are restarted; Ctrl-C stops every process.", flush=True)
        supervisor.watch()
    finally:
        (instance.run_dir / "supervisor.pid").unlink(missing_ok=True)
    return 0


def cmd_supervise(args: argparse.Namespace) -> int:
    """What `flux start` runs detached: start (or adopt) every service, restart one that dies, stop all on SIGTERM."""
    instance = Instance.existing(args.name)
    supervisor = Supervisor(instance, broadcast=args.broadcast, token=os.environ.get(processes.VIEW_TOKEN_ENV, ""),
                            log=lambda line: print(line, flush=True))  # its stdout is logs/supervisor.log
    (instance.run_dir / "supervisor.pid").write_text(f"{os.getpid()}\n")
    try:
        supervisor.start_all()
        supervisor.watch()
    finally:
        (instance.run_dir / "supervisor.pid").unlink(missing_ok=True)
    return 0


def _print_urls(instance: Instance, *, broadcast: bool) -> None:
    print(f"  REST API:  {instance.rest_url()}   (health: {instance.rest_url()}/health)")
    print(f"  Dashboard: {instance.dashboard_url()}/")
    print(f"  MCP (HTTP): {instance.mcp_url()}   (stdio: flux mcp --name {instance.name})")
    token = processes.view_token(instance) if broadcast else None
    if token:
        port = instance.setting("DASHBOARD_PORT")
        lan = ([f"http://{a}:{port}/?token={token}" for a in processes.lan_addresses()]
               or [f"http://<this machine's address>:{port}/?token={token}"])
        print(f"  Dashboard on the LAN (read-only, with a viewing token good for this run; the REST API stays on "
              f"{instance.setting('REST_HOST')}): " + "  ".join(lan))


def _running_instance(name: str, hint: str = "") -> Instance:
    instance = Instance.existing(name)
    if not processes.running(instance) and processes.supervisor_pid(instance) is None:
        raise InstanceError(f"instance {name!r} is not running{hint}")
    return instance


def cmd_stop(args: argparse.Namespace) -> int:
    instance = _running_instance(args.name)
    stopped = processes.stop(instance)
    print(f"Stopped instance {args.name!r} ({_pids(stopped)})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Each process and whether it answers; exit 0 only when every one runs and answers."""
    instance = Instance.existing(args.name)
    pids = processes.running(instance)
    supervisor = processes.supervisor_pid(instance)
    urls = {"rest": instance.rest_url() + "/health", "dashboard": instance.dashboard_url() + "/",
            "mcp": instance.mcp_url()}
    lines, healthy = [], supervisor is not None
    lines.append(f"  supervisor: pid {supervisor}" if supervisor else
                 "  supervisor: not running" + ("; the services run unsupervised (`flux start` adopts them)"
                                                if pids else ""))
    for service in processes.services(instance):
        pid = pids.get(service.name)
        url = urls.get(service.name)
        answers = url is None or (pid is not None and http_answers(url))
        healthy = healthy and pid is not None and answers
        state = ("not running" + (" (its supervisor restarts it)" if supervisor else "") if pid is None
                 else f"pid {pid}" + ("" if url is None else ", answering" if answers else f", not answering {url}"))
        lines.append(f"  {service.name + ':':11} {state}")
    overall = "running" if healthy else "not running" if not pids and not supervisor else "degraded"
    print(f"Instance {args.name!r} in {instance.path}: {overall}")
    print("\n".join(lines))
    if not pids:
        return 1
    _print_urls(instance, broadcast=processes.broadcasting(instance))
    request = urllib.request.Request(instance.rest_url() + "/health")
    if instance.setting("API_KEY"):
        request.add_header("Authorization", f"Bearer {instance.setting('API_KEY')}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            health = json.loads(response.read())
    except urllib.error.HTTPError as exc:  # the service answers, with why it cannot tell its health
        print(f"  health:    {exc.code}: {_error_message(exc)}")
        return 1
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"  health:    not answering ({exc})")
        return 1
    grains = ", ".join(f"{k} {v}" for k, v in health["grains"].items())
    print(f"  health:    {health['status']}")
    print(f"  grains:    {grains}")
    print(f"  conduits:  {health['conduits'].get('total', 0)}; write queue {health['queues']['write']}, "
          f"feedback pending {health['queues']['feedback_pending']}")
    retrieval = health.get("retrieval", {})
    print("  retrieval: lexical" + (f" + semantic ({retrieval['model']})" if retrieval.get("semantic") else
                                     " only (SEMANTIC_ENTRY=off)" if retrieval.get("semantic_entry") == "off" else
                                     " only (the embedding model is not installed)"))
    redis = health.get("redis", {})
    if redis.get("configured"):
        print("  redis:     " + ("up" if redis["up"] else "DOWN: stores and retrievals go on; request rates are not "
                                                        "counted and maintenance waits until it returns"))
        healthy = healthy and bool(redis["up"])
    warming = sum(1 for s in health["signals"] if s["state"] == "warming_up")
    print(f"  signals:   {len(health['signals'])} ({warming} warming up); last snapshot "
          f"{health['last_snapshot'] or 'not yet'}")
    for warning in health["warnings"] or [{"message": "none"}]:
        print(f"  warning:   {warning['message']}")
    return 0 if healthy else 1


def _error_message(exc: urllib.error.HTTPError) -> str:
    """The message of the service's error answer (its JSON error contract), else the HTTP reason."""
    try:
        return str(json.loads(exc.read())["error"]["message"])
    except (OSError, ValueError, KeyError, TypeError):
        return str(exc.reason)


def cmd_backup(args: argparse.Namespace) -> int:
    """A consistent copy of the database, taken while the instance runs (or not)."""
    instance = Instance.existing(args.name)
    to = [] if args.to is None else ["--to", str(Path(args.to).resolve())]  # '' is a path too, not the default
    argv = [python(), "-m", "django", "flux_backup", *to]
    return _django(instance, argv, "backup")


def cmd_restore(args: argparse.Namespace) -> int:
    """Put a backup in place of the database; the instance must be stopped."""
    instance = Instance.existing(args.name)
    if processes.running(instance) or processes.supervisor_pid(instance):
        raise InstanceError(f"instance {args.name!r} is running; `flux stop --name {args.name}` first, then restore")
    argv = [python(), "-m", "django", "flux_restore", str(Path(args.path).resolve())]
    return _django(instance, argv, "restore")


def cmd_export(args: argparse.Namespace) -> int:
    """The memory as portable JSON Lines, from one moment, while the instance runs (or not)."""
    instance = Instance.existing(args.name)
    return _django(instance, [python(), "-m", "django", "flux_export", "--to", str(Path(args.to).resolve())],
                   "export")


def cmd_import(args: argparse.Namespace) -> int:
    """A `flux export` file into this instance's empty memory; the instance must be stopped."""
    instance = Instance.existing(args.name)
    if processes.running(instance) or processes.supervisor_pid(instance):
        raise InstanceError(f"instance {args.name!r} is running; `flux stop --name {args.name}` first, then import")
    processes.migrate(instance)
    return _django(instance, [python(), "-m", "django", "flux_import", str(Path(args.path).resolve())], "import")


def _django(instance: Instance, argv: list[str], what: str) -> int:
    out = subprocess.run(argv, env=instance.environ(), cwd=instance.path, stdout=subprocess.PIPE,
                         stderr=None if what in ("export", "import") else subprocess.PIPE, text=True,
                         errors="replace", timeout=7200)  # a path's bytes that are not UTF-8, said as they can be
    if out.returncode != 0:
        text = (out.stderr or "").strip()
        error = processes.command_error(text) or (text.splitlines()[-1] if text
                                                  else f"exit code {out.returncode} (see above)")
        raise InstanceError(f"{what} of {instance.name!r} failed: {error}")
    print(out.stdout.strip())
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    instance = Instance.existing(args.name)
    argv = [python(), "-m", "django", "flux_mcp"]
    os.execvpe(argv[0], argv, instance.environ())
    return 0  # not reached


def cmd_mcp_config(args: argparse.Namespace) -> int:
    for path, text in write_snippets(Instance.existing(args.name)).items():
        print(f"# {path}\n{text}")
    return 0


def cmd_admin(args: argparse.Namespace) -> int:
    """The login link, then the terminal menu; or one action of `manage.py flux_admin` for scripts."""
    instance = _running_instance(args.name, f"; start it first: flux start --name {args.name}")
    action = args.action or []
    if not action or action == ["link"]:
        out = subprocess.run([python(), "-m", "django", "flux_admin_link", "--base-url", instance.rest_url()],
                             env=instance.environ(), cwd=instance.path, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise InstanceError(f"could not make a login link: {out.stderr.strip()[-1000:]}")
        print(out.stdout.strip(), flush=True)
        if action:
            return 0
    if action and action[0] == "link":
        raise InstanceError(f"link takes nothing more (got {' '.join(action[1:])!r})")
    if action and action[0] == "search" and len(action) > 2:  # the words of a query typed without quotes
        action = ["search", " ".join(action[1:])]
    argv = [python(), "-m", "django", "flux_admin", *(action or ["menu"]), "--base-url", instance.rest_url()]
    try:
        return subprocess.run(argv, env=instance.environ(), cwd=instance.path).returncode
    except KeyboardInterrupt:  # Ctrl-C reached the menu too, which ends on it
        return 130


def cmd_manage(args: argparse.Namespace) -> int:
    """A management command run as a process of the instance: its folder, settings and servers (by hand, an
    unset FLUX_DATA_DIR made a new, empty memory)."""
    instance = Instance.existing(args.name)
    if not args.command:
        raise InstanceError(f"give the command: flux manage --name {args.name} migrate (`flux manage --name "
                            f"{args.name} help` lists them)")
    return subprocess.run([python(), "-m", "django", *args.command], env=instance.environ(),
                          cwd=instance.path).returncode


def cmd_keys(args: argparse.Namespace) -> int:
    """API keys: add one for a client (printed once, only its hash kept), list the clients, remove a client's.
    Keys take effect at once in a running service (it reads the file again when it changes)."""
    instance = Instance.existing(args.name)
    path = instance.path / KEYS_FILE
    if args.action in ("add", "remove") and not args.client:
        raise InstanceError(f"give the client: flux keys {args.action} CLIENT --name {args.name}")
    try:
        configured = parse_setting(str(instance.setting("API_KEYS")))
        if args.action == "add":
            first = not read_file(path) and not configured
            key = add_to_file(path, args.client)
            print(f"API key for client {args.client!r} (shown once; keep it secret): {key}")
            if args.local:
                instance.set_config("API_KEY", key)
                print(f"  written to {instance.config_file} as API_KEY: this instance's MCP bridge and tools send it "
                      "(`flux mcp-config` writes it into the HTTP snippets too)")
            if first:
                print("  From now on every REST and MCP call needs a key (at once: no restart).")
        elif args.action == "remove":
            _keys_remove(instance, path, args.client, configured)
        else:
            files = [c for c, _ in read_file(path)]
            fixed = [f"{c} (API_KEYS in {instance.config_file})" for c, _ in configured]
            print("\n".join(files + fixed) if files or fixed else "No API keys: the REST API is open on loopback.")
    except KeySettingError as exc:
        raise InstanceError(str(exc)) from None
    return 0


def _keys_remove(instance: Instance, path: Path, client: str, configured: list[tuple[str, str]]) -> None:
    """Remove a client's keys from the keys file; refused when none is there, or when no key would be left while
    the instance listens beyond this machine (it would be open to anyone who reaches it)."""
    pairs = read_file(path)
    mine = [h for c, h in pairs if c == client]
    in_config = any(c == client for c, _ in configured)
    if not mine:
        also = " (its key in API_KEYS stays: remove it from config.yaml)" if in_config else ""
        raise InstanceError(f"no key of client {client!r} in {path}{also}; `flux keys list --name {instance.name}` "
                            "shows the clients")
    left = len(pairs) - len(mine) + len(configured)
    exposed = [key for key in ("REST_HOST", "MCP_HOST") if not loopback(str(instance.setting(key)))]
    if not left and exposed:
        raise InstanceError(f"{client!r} has the last key, and {' and '.join(exposed)} reach beyond this machine: "
                            "without a key anyone who reaches them could read and change the memory. Add another key "
                            "first, or set them to 127.0.0.1")
    removed = remove_from_file(path, client)
    print(f"Removed {len(removed)} key(s) of client {client!r}")
    if in_config:
        print(f"  its key in API_KEYS ({instance.config_file}) stays: remove it there")
    local = instance.setting("API_KEY")
    if local and key_hash(str(local)) in removed:  # kept, it made every later key's instance tools a 401
        instance.set_config("API_KEY", '""')
        write_snippets(instance)
        print(f"  API_KEY in {instance.config_file} was one of them: cleared, and the MCP snippets written without "
              "it" + (f"; this instance's own tools (status, the MCP bridge) are refused until it holds another "
                      f"(`flux keys add CLIENT --local --name {instance.name}`)" if left else ""))
    if not left:
        print("  No key is left: every program on this machine may call the REST API and MCP again (at once).")


def _pids(pids: dict[str, int]) -> str:
    return ", ".join(f"{name} pid {pid}" for name, pid in pids.items())


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="flux", description="Flux Memory: self-organizing memory for AI agents.")
    top.add_argument("--version", action="version", version=f"flux-memory {flux_version()}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler, text: str) -> argparse.ArgumentParser:  # noqa: ANN001
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--name", required=True, help="instance name (a folder under $FLUX_HOME, default ~/.flux)")
        p.set_defaults(handler=handler)
        return p

    init = command("init", cmd_init, "create an instance: config, database, MCP snippets")
    init.add_argument("--mode", choices=MODES, help="operating mode (asked for when interactive)")
    init.add_argument("--yes", action="store_true", help="take the defaults without asking")
    init.add_argument("--force", action="store_true",
                      help="rewrite an existing instance's config (its settings kept) and snippets")
    start = command("start", cmd_start, "start the instance's REST API, dashboard and worker in the background")
    start.add_argument("--foreground", action="store_true", help="keep running in this terminal; Ctrl-C stops all")
    start.add_argument("--broadcast", action="store_true",
                       help="let the dashboard (read-only) listen on every interface and print its LAN URLs; "
                            "the REST API stays on REST_HOST")
    start.add_argument("--web-workers", type=int, metavar="N",
                       help="run N REST processes on REST_PORT (sets WEB_WORKERS)")
    start.add_argument("--workers", type=int, metavar="N", help="run N Celery workers (sets TASK_WORKERS)")
    command("stop", cmd_stop, "stop every process of the instance, gracefully")
    supervise = sub.add_parser("supervise")  # what `flux start` runs detached; not listed
    supervise.add_argument("--name", required=True)
    supervise.add_argument("--broadcast", action="store_true")
    supervise.set_defaults(handler=cmd_supervise)
    command("status", cmd_status, "say whether the instance runs, with its pids and counts")
    command("mcp", cmd_mcp, "run the stdio MCP server for the instance (what MCP clients launch)")
    command("mcp-config", cmd_mcp_config, "rewrite and print the MCP client snippets")
    admin = command("admin", cmd_admin, "a one-time login link to the Django admin, then the terminal menu "
                                        "(search, purge, restore, audit log, export); or one action for scripts")
    admin.add_argument("action", nargs=argparse.REMAINDER,
                       help="link | search QUERY | purge ID --reason R [--token T] | restore ID --reason R "
                            "[--token T] | audit | export ID")
    manage = command("manage", cmd_manage, "a Django management command on the instance, with its settings and "
                                          "servers (migrate, flux_recount, flux_embed, ...)")
    manage.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    backup = command("backup", cmd_backup, "a consistent copy of the database, taken while the instance runs")
    backup.add_argument("--to", help="where to write it (default: backups/ in the instance folder)")
    restore = command("restore", cmd_restore, "put a backup in place of the database (the instance stopped)")
    restore.add_argument("path", help="a file written by flux backup")
    export = command("export", cmd_export, "the memory as portable JSON Lines (moves between SQLite and PostgreSQL)")
    export.add_argument("--to", required=True, help="the file to write")
    import_ = command("import", cmd_import, "a flux export file into this instance's empty memory (stopped)")
    import_.add_argument("path", help="a file written by flux export")
    keys = command("keys", cmd_keys, "API keys, each bound to one client: add (printed once), list, remove")
    keys.add_argument("action", choices=("add", "list", "remove"))
    keys.add_argument("client", nargs="?", help="the client name the key is bound to (add, remove)")
    keys.add_argument("--local", action="store_true",
                      help="also write the new key to config.yaml as API_KEY, for this instance's own MCP bridge")
    return top


def main(argv: list[str] | None = None) -> int:
    os.umask(0o077)  # every file an instance's processes create is the owner's alone (inherited by the services)
    top = parser()
    args, extra = top.parse_known_args(argv)
    if extra and getattr(args, "command", "") == "keys" and args.client is None and len(extra) == 1 \
            and not extra[0].startswith("-"):
        args.client = extra[0]  # `flux keys add --name N CLIENT`: argparse binds positionals before options
    elif extra:
        top.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.handler(args)
    except InstanceError as exc:
        print(f"flux: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`flux status | head`)
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
