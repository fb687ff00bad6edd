"""`python manage.py flux_mcp`: the stdio MCP server (what `flux mcp --name NAME` runs).

stdout carries the MCP protocol only, so this command prints nothing there:
its one line of information goes to stderr, where MCP clients keep server
logs. It skips Django's system and migration checks because the bridge never
opens the database; it reaches the data only through the REST service.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand

from mcp_bridge.client import FluxClient
from mcp_bridge.server import build_server


class Command(BaseCommand):
    help = "Run the Flux Memory MCP server over stdio, as a client of the running REST service."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def handle(self, *args: object, **options: object) -> None:
        rest = FluxClient()
        self.stderr.write(f"flux_mcp: MCP over stdio; Flux Memory REST service at {rest.base_url}")
        try:
            build_server(rest).run("stdio")
        except KeyboardInterrupt:
            pass
