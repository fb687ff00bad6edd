"""manage.py flux_admin: the operator's terminal (what `flux admin --name NAME` runs).

Without an action: an interactive menu (search, purge, restore, audit log, export, open dashboard) on
standard input, with a confirmation token for this terminal session. With one: the same acts for
scripts; a purge or restore without --token prints the token it needs (valid this hour) and does nothing.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from core.commands import FluxCommand
from core.errors import FluxError
from grains.audit import confirmation_token
from grains.models import AuditEvent, Grain
from graph.search import entry_search
from memory.dossier import grain_dossier
from memory.forgetting import grain_purge, grain_restore

ACTOR = "flux-terminal:admin"
MENU = "1 search  2 purge  3 restore  4 audit log  5 export  6 open dashboard  q quit"


def script_token(action: str, grain_id: int, hours_ago: int = 0) -> str:
    """The token a script must pass to ``action`` grain ``grain_id``: keyed by the instance's secret, valid an hour."""
    hour = (timezone.now() - timedelta(hours=hours_ago)).strftime("%Y%m%d%H")
    digest = hmac.new(settings.SECRET_KEY.encode(), f"{action}:{grain_id}:{hour}".encode(), hashlib.sha256)
    code = digest.hexdigest()[:8].upper()
    return f"{code[:4]}-{code[4:]}"


def search(query: str, limit: int = 20) -> list[str]:
    hits = entry_search().search(query, limit=limit, statuses=("active", "dormant", "quarantined", "archived"),
                                 max_terms=24)
    grains = Grain.objects.in_bulk([gid for gid, _ in hits])
    return [f"#{g.pk} [{g.status}] {g.content[:100]}" for gid, _ in hits if (g := grains.get(gid))]


def audit_lines(limit: int = 20) -> list[str]:
    rows = AuditEvent.objects.order_by("-id")[:limit]
    return [f"{e.created_at:%Y-%m-%d %H:%M} {e.actor} {e.action} #{e.grain_id}: {e.reason}" for e in rows]


def act(action: str, grain_id: int, reason: str) -> str:
    if action == "purge":
        tomb = grain_purge(grain_id=grain_id, reason=reason, actor=ACTOR)
        return f"purged grain {grain_id}; restorable until {tomb.restorable_until:%Y-%m-%d %H:%M} UTC"
    grain = grain_restore(grain_id=grain_id, reason=reason, actor=ACTOR)
    return f"restored grain {grain.pk}: {grain.content[:80]}"


class Command(FluxCommand):
    help = "Operator's terminal: search, purge, restore, audit log, export (a menu, or one action for scripts)."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: object) -> CommandParser:
        return super().create_parser("flux", "admin --name NAME", **kwargs)  # what the operator typed

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", nargs="?", choices=["menu", "search", "purge", "restore", "audit", "export"],
                            default="menu")
        parser.add_argument("target", nargs="?", help="grain id (purge, restore, export) or query (search)")
        parser.add_argument("--reason", default="", help="why (purge, restore): kept in the audit log")
        parser.add_argument("--token", default="", help="confirmation token (purge, restore): run once without it")
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument("--base-url", default="", help="the instance's address, for 'open dashboard'")

    def handle(self, *args: object, **opts: object) -> None:
        if opts["action"] == "menu":
            return self.menu(opts["base_url"])
        try:
            self.once(opts)
        except FluxError as exc:
            raise CommandError(exc.message) from None

    def once(self, opts: dict) -> None:
        action, target = opts["action"], opts["target"]
        if action == "audit":
            if target:
                raise CommandError(f"audit takes no argument (got {target!r}); --limit N shows the N newest entries")
            self.stdout.write("\n".join(audit_lines(opts["limit"])) or "the audit log is empty")
            return
        if not target:
            raise CommandError(f"{action} needs a {'query' if action == 'search' else 'grain id'}")
        if action == "search":
            self.stdout.write("\n".join(search(target, opts["limit"])) or "no grain matches")
            return
        if not target.isdigit():
            raise CommandError(f"{target!r} is not a grain id")
        grain_id = int(target)
        if action == "export":
            self.stdout.write(json.dumps(grain_dossier(grain_id), default=str, indent=2))
            return
        if not opts["reason"].strip():
            raise CommandError(f"{action} needs --reason: it is kept in the audit log")
        if opts["token"].strip().upper() not in {script_token(action, grain_id), script_token(action, grain_id, 1)}:
            raise CommandError(f"to {action} grain {grain_id}, run again with --token {script_token(action, grain_id)}"
                               " (valid this hour)")
        self.stdout.write(act(action, grain_id, opts["reason"]))

    def menu(self, base_url: str) -> None:
        token = confirmation_token()
        self.stdout.write(f"Flux admin. Confirmation token for this session: {token}\n{MENU}")
        ask = _asker(self.stdout.write)
        while (choice := ask("> ")) not in (None, "q", "quit"):
            try:
                self._choose(choice, ask, token, base_url)
            except FluxError as exc:
                self.stdout.write(f"refused: {exc.message}")

    def _choose(self, choice: str, ask: Callable[[str], str | None], token: str, base_url: str) -> None:
        if choice == "1":
            self.stdout.write("\n".join(search(ask("query: ") or "")) or "no grain matches")
        elif choice in ("2", "3"):
            action = "purge" if choice == "2" else "restore"
            gid, reason = ask("grain id: ") or "", ask("reason: ") or ""
            if not gid.isdigit() or not reason.strip():
                self.stdout.write("give a grain id and a reason")
            elif (ask(f"type the token {token} to confirm: ") or "").strip().upper() != token:
                self.stdout.write("the token does not match; nothing was done")
            else:
                self.stdout.write(act(action, int(gid), reason))
        elif choice == "4":
            self.stdout.write("\n".join(audit_lines()) or "the audit log is empty")
        elif choice == "5":
            gid = ask("grain id: ") or ""
            self.stdout.write(json.dumps(grain_dossier(int(gid)), default=str, indent=2) if gid.isdigit()
                              else "give a grain id")
        elif choice == "6":
            self.stdout.write(f"open {base_url or 'the instance'}/admin/ in a browser (log in with: flux admin link)")
        else:
            self.stdout.write(f"no choice {choice[:40]!r}: type a number of the menu, or q\n{MENU}")


def _asker(write: Callable[[str], object]) -> Callable[[str], str | None]:
    def ask(prompt: str) -> str | None:
        write(prompt)
        try:
            return input().strip()
        except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C: the menu ends, as with q
            write("\n")
            return None

    return ask
