"""`python manage.py flux_mcp`: the stdio MCP server (what `flux mcp --name NAME` runs), or with ``--http``
the same tools over streamable HTTP on MCP_HOST:MCP_PORT (what `flux start` runs beside REST).

Over stdio, stdout carries the MCP protocol only, so this command prints nothing there:
its one line of information goes to stderr, where MCP clients keep server
logs. It skips Django's system and migration checks because the bridge never
opens the database; it reaches the data only through the REST service.
"""
from __future__ import annotations

import anyio
from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from core.commands import FluxCommand
from core.conf import flux_setting as S
from core.keys import open_rest_refusal
from mcp_bridge.client import FluxClient
from mcp_bridge.server import build_server
from mcp_bridge.stdio import serve_stdio


class Command(FluxCommand):
    help = "Run the Flux Memory MCP server over stdio, as a client of the running REST service."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False
    reaches_database = False  # a client of the REST service only

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--http", action="store_true",
                            help="serve over streamable HTTP on MCP_HOST:MCP_PORT instead of stdio")

    def handle(self, *args: object, **options: object) -> None:
        if options["http"]:
            self._http()
            return
        rest = FluxClient()
        self.stderr.write(f"flux_mcp: MCP over stdio; Flux Memory REST service at {rest.base_url}")
        try:
            anyio.run(serve_stdio, build_server(rest))
        except KeyboardInterrupt:
            pass

    def _http(self) -> None:
        from mcp_bridge.http import PATH, serve

        host, port = str(S("MCP_HOST")), int(S("MCP_PORT"))
        refusal = open_rest_refusal(host, str(S("API_KEYS")), settings.DATA_DIR, what="MCP server",
                                    setting="MCP_HOST")
        if refusal:
            raise CommandError(refusal)
        self.stderr.write(f"flux_mcp: MCP over streamable HTTP at http://{host}:{port}{PATH}; Flux Memory REST "
                          f"service at {FluxClient().base_url}")
        serve(host=host, port=port, data_dir=settings.DATA_DIR, api_keys=str(S("API_KEYS")))
