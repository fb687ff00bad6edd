"""Print a one-time admin login link (used by `flux admin`)."""
from __future__ import annotations

from django.core.management.base import CommandParser

from api.admin_link import admin_link_token
from core.commands import FluxCommand
from core.conf import flux_setting as S


class Command(FluxCommand):
    help = "Print a one-time, short-lived login link to the Django admin of this instance."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", default="http://127.0.0.1:7465", help="where the service answers")

    def handle(self, *args: object, **opts: object) -> None:
        url = f"{opts['base_url'].rstrip('/')}/admin/login-link/{admin_link_token()}"
        self.stdout.write(f"{url}\n(valid once, for {S('ADMIN_LINK_SECONDS')} seconds)")
