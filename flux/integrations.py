"""MCP client snippets for an instance: each client launches `python -P -m flux mcp --name NAME` over stdio (-P:
the client's own folder, which may hold packages named as ours, is not put on the path), or (the ``*_http`` ones)
connects to the instance's MCP server over streamable HTTP, with its API key if it has one."""
from __future__ import annotations

import json
import os
from pathlib import Path

from core.files import write_private
from flux.instance import Instance, python


def _server(instance: Instance) -> dict:
    spec: dict = {"command": python(), "args": ["-P", "-m", "flux", "mcp", "--name", instance.name]}
    if os.environ.get("FLUX_HOME"):
        spec["env"] = {"FLUX_HOME": str(instance.path.parent)}
    return spec


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def snippets(instance: Instance) -> dict[str, str]:
    """File name -> content, for Codex, Claude Desktop, Claude Code, Cursor and any other client."""
    key = f"flux-{instance.name}"
    return {**_stdio(instance, key), **_http(instance, key)}


def _stdio(instance: Instance, key: str) -> dict[str, str]:
    """Each client launches the stdio server itself."""
    spec = _server(instance)
    toml = [f'[mcp_servers."{key}"]', f"command = {_toml_string(spec['command'])}",
            "args = [" + ", ".join(_toml_string(a) for a in spec["args"]) + "]"]
    if "env" in spec:
        toml.append("env = { " + ", ".join(f"{k} = {_toml_string(v)}" for k, v in spec["env"].items()) + " }")
    servers = json.dumps({"mcpServers": {key: spec}}, indent=2) + "\n"
    generic = {"name": key, "transport": "stdio", **spec,
               "note": "Launch this command from your MCP client; call flux_onboard first."}
    return {
        "codex.toml": "# Add to ~/.codex/config.toml\n" + "\n".join(toml) + "\n",
        "claude_desktop.json": servers,
        "claude_code.json": servers,
        "cursor.json": servers,
        "generic.json": json.dumps(generic, indent=2) + "\n",
    }


def _http(instance: Instance, key: str) -> dict[str, str]:
    """The same server over streamable HTTP: its URL and, when the instance has one, its API key as a header."""
    url = instance.mcp_url()
    api_key = str(instance.setting("API_KEY") or "")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    toml = [f'[mcp_servers."{key}"]', f"url = {_toml_string(url)}"]
    if headers:
        toml.append("http_headers = { " + ", ".join(f"{k} = {_toml_string(v)}" for k, v in headers.items()) + " }")
    entry = {"url": url, **({"headers": headers} if headers else {})}
    return {
        "codex_http.toml": "# Add to ~/.codex/config.toml (needs `flux start`: the MCP server runs beside REST)\n"
                           + "\n".join(toml) + "\n",
        "claude_code_http.json": json.dumps({"mcpServers": {key: {"type": "http", **entry}}}, indent=2) + "\n",
        "cursor_http.json": json.dumps({"mcpServers": {key: entry}}, indent=2) + "\n",
        "generic_http.json": json.dumps({"name": key, "transport": "streamable-http", **entry,
                                         "note": "Connect while `flux start` runs; call flux_onboard first."},
                                        indent=2) + "\n",
    }


def write_snippets(instance: Instance) -> dict[Path, str]:
    """Write every snippet into the instance's integrations/ folder; returns path -> content."""
    instance.integrations.mkdir(mode=0o700, parents=True, exist_ok=True)
    instance.integrations.chmod(0o700)
    written = {instance.integrations / name: text for name, text in snippets(instance).items()}
    for path, text in written.items():
        write_private(path, text)  # a snippet may carry the instance's API key
    return written
